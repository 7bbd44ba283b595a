"""The Flink host's per-slot runtime without Flink: closing frees its threads and loop."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.errors import TaskCancelledError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.flink.slot import Item, KeyWork, SlotRuntime
from flink_agents.runtime.sequencing import STARTED, Arrival, Commit
from tests.flink.agents import chat_agent


def _work(slot: SlotRuntime | None = None) -> KeyWork:
    """A key's work whose protocol started a chain for one input (with its place taken)."""
    work = KeyWork("k", {})
    assert work.seq.arrive(Item("1", 0, {"key": "k", "i": 1})) is Arrival.PLACE
    if slot is not None:
        slot.acquire()
    assert work.seq.placed().action is STARTED
    return work


def _calls_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("flink-agents-call")]


def test_close_after_runs_stops_the_loop_and_the_call_threads() -> None:
    # The slot's own call threads (other tests' threads may still be ending meanwhile).
    before = set(_calls_threads())
    plan = AgentPlan.from_agent(chat_agent(latency=0.01), AgentConfiguration())
    slot = SlotRuntime(plan)
    slot.runner.executor.submit(time.sleep, 0).result()  # a blocking call made a call thread
    assert set(_calls_threads()) - before
    work = _work(slot)
    slot.start(work)
    assert work.wait_idle(5)
    [commit] = work.seq.collect()
    assert isinstance(commit, Commit) and commit.result.outputs == [{"key": "k", "i": 1}]
    slot.close()
    slot._thread.join(5)
    assert not slot._thread.is_alive()
    assert slot.loop.is_closed()
    deadline = time.monotonic() + 5
    while set(_calls_threads()) - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not set(_calls_threads()) - before


def _hung_slot(cancelled: threading.Event, max_in_flight: int = 1) -> tuple[SlotRuntime, KeyWork]:
    """A slot whose only place in flight is taken by a run whose model never answers."""
    config = AgentConfiguration()
    config.set_str("max-in-flight", str(max_in_flight))
    plan = AgentPlan.from_agent(chat_agent(latency=100000), config)
    slot = SlotRuntime(plan, cancelled=cancelled.is_set)
    work = _work(slot)
    assert not slot.start_and_settle(work)  # really waits: on the model
    return slot, work


def _raises_when_cancelled(wait: Any, cancelled: threading.Event) -> float:
    """Seconds between setting ``cancelled`` and ``wait()`` raising TaskCancelledError."""
    outcome: list[Any] = []

    def waiter() -> None:
        try:
            wait()
            outcome.append("returned")
        except TaskCancelledError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.5)
    assert thread.is_alive() and not outcome, "the wait did not block"
    started = time.monotonic()
    cancelled.set()
    thread.join(5)
    took = time.monotonic() - started
    assert outcome and isinstance(outcome[0], TaskCancelledError), outcome
    assert "cancelled" in str(outcome[0])
    return took


def test_a_full_gate_gives_up_when_the_task_is_cancelled() -> None:
    cancelled = threading.Event()
    slot, work = _hung_slot(cancelled)
    took = _raises_when_cancelled(slot.acquire, cancelled)
    assert took < 1.0
    # The hung run was cancelled with the slot: its loop thread ends.
    slot._thread.join(5)
    assert not slot._thread.is_alive()
    assert work.idle


def test_the_drain_gives_up_when_the_task_is_cancelled() -> None:
    cancelled = threading.Event()
    slot, work = _hung_slot(cancelled, max_in_flight=2)
    took = _raises_when_cancelled(
        lambda: slot.wait_for(work.wait_idle, "the key's runs to finish (drain)"), cancelled
    )
    assert took < 1.0
    slot._thread.join(5)
    assert not slot._thread.is_alive()


def test_cancel_stops_the_runs_of_a_slot() -> None:
    """What close() does when keys still have work (a stop or cancel, not the end of input):
    the runs end without finishing and the loop thread with them."""
    slot, work = _hung_slot(threading.Event())
    slot.cancel()
    assert work.wait_idle(5)
    slot._thread.join(5)
    assert not slot._thread.is_alive()
    assert list(work.seq.collect()) == []
    with pytest.raises(TaskCancelledError):
        slot.check_cancelled("anything")


@pytest.mark.parametrize("how", ["close", "cancel"])
def test_async_closes_of_resources_finish_before_the_loop_stops(how: str) -> None:
    # Resources close their HTTP clients by scheduling the client's async close on the
    # slot's loop (integrations/_common.py: PerLoop.close); the loop must run it before it
    # stops, or the coroutine is dropped unawaited (a RuntimeWarning, a leaked connection).
    cancelled = threading.Event()
    slot, work = _hung_slot(cancelled) if how == "cancel" else (SlotRuntime(_plan()), None)
    closed = threading.Event()
    close_runner = slot.runner.close

    async def aclose() -> None:
        await asyncio.sleep(0.05)  # a close that really waits (a connection's shutdown)
        closed.set()

    def runner_close() -> None:
        asyncio.run_coroutine_threadsafe(aclose(), slot.loop)
        close_runner()

    slot.runner.close = runner_close  # type: ignore[method-assign]
    if work is not None:  # a run waits on its model: cancel stops it, then shuts down
        slot.cancel()
    else:
        slot.close()
    assert slot.wait_stopped(5)
    assert closed.is_set()
    assert slot.loop.is_closed()


def _plan() -> AgentPlan:
    return AgentPlan.from_agent(chat_agent(latency=0.01), AgentConfiguration())
