"""A cancelled Flink task stops its model calls: closing the operator with work in flight
(Flink failing or cancelling the task: a failover, a stop) cancels the runs, aborts the HTTP
requests in flight (the server sees the connection dropped), never sends the calls still
waiting for their pacing, and returns once the slot's loop thread has ended. Nothing is
lost: the runs are not committed and a restore runs their inputs again."""

from __future__ import annotations

import pickle
import socket
import threading
import time

import pytest

pytest.importorskip("pyflink")

from flink_agents.api.agents.agent import Agent  # noqa: E402
from flink_agents.api.events.chat_event import ChatResponseEvent  # noqa: E402
from flink_agents.api.events.event import InputEvent  # noqa: E402
from flink_agents.api.resource import ResourceDescriptor  # noqa: E402
from flink_agents.integrations.chat_models.openai.openai_chat_model import (  # noqa: E402
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.plan.agent_plan import AgentPlan  # noqa: E402
from flink_agents.runtime.flink import entry  # noqa: E402
from flink_agents.runtime.flink import function as fn  # noqa: E402
from flink_agents.runtime.flink.output import KEEP_TIMESTAMP  # noqa: E402
from flink_agents.runtime.flink.slot import SlotRuntime  # noqa: E402
from flink_agents.runtime.flink.state import KeyedState  # noqa: E402
from tests.fakes import FakeJavaBackend, FakeRuntimeContext, install_void_namespace  # noqa: E402
from tests.flink import agents  # noqa: E402
from tests.runtime.test_batch_admission import _Ctx, _record  # noqa: E402


class HoldingServer:
    """An HTTP server on 127.0.0.1 that reads each request and never answers; it notes the
    request lines and when a client closes its connection."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        self.requests: list[bytes] = []
        self.received = threading.Event()
        self.dropped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._hold, args=(conn,), daemon=True).start()

    def _hold(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            self.requests.append(data.split(b"\r\n", 1)[0])
            self.received.set()
            try:
                while conn.recv(65536):  # the body, then nothing until the client goes
                    pass
            except OSError:
                pass
            self.dropped.set()

    def close(self) -> None:
        self._sock.close()


def _agent(server: HoldingServer) -> Agent:
    agent = Agent()
    agent.add_action("ask_model", InputEvent, agents.ask_model)
    agent.add_action("answer", ChatResponseEvent, agents.answer)
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=OpenAIChatModelConnection,
            api_base_url=server.base_url,
            api_key="sk-test",
            timeout=600,
            max_retries=0,
            # One request per 10 s (a burst of half a second: the first only): the other
            # inputs' calls wait for their pacing when the task is cancelled.
            requests_per_minute=6,
        ),
    )
    agent.add_resource(
        "model", ResourceDescriptor(clazz=OpenAIChatModelSetup, connection="conn", model="m")
    )
    return agent


@pytest.mark.parametrize("closed_by", ["operator", "function"])
def test_closing_a_cancelled_task_aborts_its_calls_and_sends_no_paced_one(
    monkeypatch, closed_by: str
) -> None:
    """``operator``: the thread-mode operator's ``close()`` (Flink closes it when the task
    fails or is cancelled; PyFlink never calls the function's ``close()`` then) tells the
    function through its hook; ``function``: the function's own ``close()``."""
    install_void_namespace(monkeypatch)
    server = HoldingServer()
    try:
        plan = AgentPlan.from_agent(_agent(server), {"max-in-flight": 4})
        function = fn.AgentProcessFunction(
            plan.model_dump_json(), {}, packed=True, key_of=lambda r: r["key"]
        )
        state = KeyedState.open(
            FakeRuntimeContext(FakeJavaBackend(key=None)), ttl=None, keyless=False
        )
        slot = SlotRuntime(plan)
        function.bind(state, slot, batch_size=32, batch_linger_ms=5)
        slot.admit_batches()
        batch = [
            [f"J{key}", [0, [b"key", pickle.dumps({"key": key, "i": i})]], KEEP_TIMESTAMP]
            for i, key in enumerate(["a", "b", "c"])
        ]
        assert function.process_batch(batch, _record, _Ctx()) == []
        assert server.received.wait(60), "the first call never reached the server"
        time.sleep(0.3)  # the other two are paced (10 s apart): they stay unsent
        assert len(server.requests) == 1 and not server.dropped.is_set()
        works = list(function._active.values())
        assert len(works) == 3 and not any(w.idle for w in works)

        if closed_by == "operator":
            entry.BarrierHook(function).task_closed()
        else:
            function.close()
        # The loop thread has ended by the time close() returned (it waits for that at most
        # fn._CANCEL_WAIT), long before the call's 600 s timeout or the pacing's 10 s.
        assert not slot._thread.is_alive()
        assert server.dropped.wait(30), "the HTTP request in flight was not aborted"
        # The paced calls were never sent, and nothing of the runs is committed: a restore
        # runs the three inputs again.
        time.sleep(0.2)
        assert len(server.requests) == 1
        for work in works:
            assert work.idle
            with work.lock:
                assert list(work.seq.collect()) == []
    finally:
        server.close()


def test_waiting_for_a_cancelled_slot_is_bounded() -> None:
    """``wait_stopped`` returns False while a run blocks the loop, and does not hang."""
    plan = AgentPlan.from_agent(agents.chat_agent(latency=100000), {})
    slot = SlotRuntime(plan)
    release = threading.Event()
    blocked = threading.Event()

    def block() -> None:
        blocked.set()
        release.wait(60)

    slot.loop.call_soon_threadsafe(block)
    assert blocked.wait(30)
    slot.cancel()
    assert slot.wait_stopped(0.05) is False
    release.set()
    assert slot.wait_stopped(30) is True
