"""The Flink host's per-slot runtime without Flink: closing frees its threads and loop."""

from __future__ import annotations

import threading
import time

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.flink.slot import Item, KeyWork, SlotRuntime
from tests.flink.agents import chat_agent


def _calls_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("flink-agents-call")]


def test_close_after_runs_stops_the_loop_and_the_call_threads() -> None:
    before = len(_calls_threads())
    plan = AgentPlan.from_agent(chat_agent(latency=0.01), AgentConfiguration())
    slot = SlotRuntime(plan)
    slot.runner.executor.submit(time.sleep, 0).result()  # a blocking call made a call thread
    assert len(_calls_threads()) > before
    work = KeyWork("k", {})
    work.queue.append(Item("1", 0, {"key": "k", "i": 1}))
    work.running = True
    slot.acquire()
    slot.start(work)
    assert work.wait_idle(5)
    [(item, outcome)] = work.take_results()
    assert outcome.outputs == [{"key": "k", "i": 1}]
    slot.close()
    slot._thread.join(5)
    assert not slot._thread.is_alive()
    assert slot.loop.is_closed()
    deadline = time.monotonic() + 5
    while len(_calls_threads()) > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(_calls_threads()) == before
