"""Thread mode with batches: the operator admits a whole batch without waiting on its
task thread (it waits for a free in-flight place before the batch, running its mailbox
meanwhile); inputs beyond ``max-in-flight`` queue in the slot and start as places free."""

from __future__ import annotations

import pickle
import threading
import time
from typing import Any

import pytest

pytest.importorskip("pyflink")

from flink_agents.errors import TaskCancelledError  # noqa: E402
from flink_agents.plan.agent_plan import AgentPlan  # noqa: E402
from flink_agents.runtime.flink import function as fn  # noqa: E402
from flink_agents.runtime.flink.output import KEEP_TIMESTAMP  # noqa: E402
from flink_agents.runtime.flink.slot import SlotRuntime  # noqa: E402
from flink_agents.runtime.flink.state import KeyedState  # noqa: E402
from flink_agents.runtime.sequencing import Commit  # noqa: E402
from tests.fakes import FakeJavaBackend, FakeRuntimeContext, install_void_namespace  # noqa: E402
from tests.flink import agents  # noqa: E402


class _Ctx:
    """A timer service that accepts timers (the test collects runs itself)."""

    def timer_service(self) -> _Ctx:
        return self

    def current_processing_time(self) -> int:
        return 0

    def register_processing_time_timer(self, at: int) -> None:
        pass

    def register_event_time_timer(self, at: int) -> None:
        pass

    def timestamp(self) -> None:
        return None


def _batch(*keys: str) -> list[Any]:
    """``[Java key, input as PyFlink hands it over, timestamp]`` per record."""
    return [
        [f"J{key}", [0, [b"key", pickle.dumps({"key": key, "i": i})]], KEEP_TIMESTAMP]
        for i, key in enumerate(keys)
    ]


def _record(value: Any) -> Any:
    return pickle.loads(value[1][1])


def test_a_batch_beyond_max_in_flight_is_admitted_at_once_and_runs_max_at_a_time(
    monkeypatch,
) -> None:
    install_void_namespace(monkeypatch)
    plan = AgentPlan.from_agent(agents.timed_chat_agent(latency=0.5), {"max-in-flight": 2})
    function = fn.AgentProcessFunction(
        plan.model_dump_json(), {}, packed=True, key_of=lambda r: r["key"]
    )
    state = KeyedState.open(FakeRuntimeContext(FakeJavaBackend(key=None)), ttl=None, keyless=False)
    slot = SlotRuntime(plan)
    function.bind(state, slot, batch_size=32, batch_linger_ms=5)
    slot.admit_batches()
    try:
        keys = ["a", "b", "c", "d", "a"]  # a's second input queues behind its first
        assert function.process_batch(_batch(*keys), _record, _Ctx()) == []
        works = dict(function._active)
        # Returned without waiting for a place: no run has finished yet (each takes 0.5 s);
        # two run, three queue in the slot, and the operator's next batch waits.
        assert not any(w.idle for w in works.values())
        assert slot._in_flight == 2 and len(slot._queued) == 3
        assert not slot.wait_for_room(0)
        runs: list[Any] = []
        deadline = time.monotonic() + 60
        while len(runs) < len(keys) and time.monotonic() < deadline:
            time.sleep(0.05)
            for work in works.values():
                with work.lock:
                    decisions = work.seq.collect()
                runs += [o for d in decisions if isinstance(d, Commit) for o in d.result.outputs]
        assert sorted((r["key"], r["i"]) for r in runs) == [
            ("a", 0),
            ("a", 4),
            ("b", 1),
            ("c", 2),
            ("d", 3),
        ]
        # Never more than max-in-flight at once.
        events = sorted([(r["t0"], 1) for r in runs] + [(r["t1"], -1) for r in runs])
        running = most = 0
        for _, step in events:
            running += step
            most = max(most, running)
        assert most <= 2
        assert slot.wait_for_room(0) and slot._in_flight == 0
    finally:
        slot.close()


def test_waiting_for_room_raises_when_the_task_is_cancelled() -> None:
    cancelled = threading.Event()
    plan = AgentPlan.from_agent(agents.chat_agent(latency=100000), {"max-in-flight": 1})
    slot = SlotRuntime(plan, cancelled=cancelled.is_set)
    slot.admit_batches()
    try:
        assert slot.try_acquire()  # the only place
        assert not slot.try_acquire()
        assert not slot.wait_for_room(0.01)
        cancelled.set()
        started = time.monotonic()
        with pytest.raises(TaskCancelledError, match="in-flight place"):
            slot.wait_for_room(0.01)
        assert time.monotonic() - started < 60
    finally:
        slot.close()
