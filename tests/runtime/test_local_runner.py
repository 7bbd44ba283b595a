"""The local host as a session: batch after batch on one loop and one thread pool (the
AgentRunner's), memory kept across batches, and nothing left running after close()."""

from __future__ import annotations

import asyncio
import signal
import threading
import time

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext
from flink_agents.errors import ActionError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner
from flink_agents.runtime.local.runner import LocalRunner


def _thread_name() -> str:
    time.sleep(0.002)  # long enough that concurrent calls need more than one thread
    return threading.current_thread().name


#: Keys whose slow run was cancelled.
CANCELLED: list[str] = []
#: Keys whose slow run began to wait.
WAITING: list[str] = []


class BlockingCallsAgent(Agent):
    """Counts its key's inputs and makes both kinds of blocking call: one through
    ``asyncio.to_thread`` (the loop's default executor, as resources do) and one through
    ``durable_execute_async`` of a plain function (the runner's executor)."""

    @action(InputEvent)
    @staticmethod
    async def call(event: InputEvent, ctx: RunnerContext) -> None:
        seen = (ctx.short_term_memory.get("seen") or 0) + 1
        ctx.short_term_memory.set("seen", seen)
        if event.input == "bad":
            raise ValueError("bad input")
        if event.input == "slow":
            WAITING.append(ctx.key)
            try:
                await asyncio.sleep(120)  # never ends by itself in these tests
            except asyncio.CancelledError:
                CANCELLED.append(ctx.key)
                raise
        by_to_thread = await asyncio.to_thread(_thread_name)
        by_durable = await ctx.durable_execute_async(_thread_name)
        ctx.send_event(OutputEvent(output={"seen": seen, "threads": [by_to_thread, by_durable]}))


def _plan(threads: int = 3) -> AgentPlan:
    return AgentPlan.from_agent(BlockingCallsAgent(), {"num-async-threads": threads})


def _wait_until_gone(threads: set[threading.Thread], timeout: float = 5.0) -> set[str]:
    """Names of the ``threads`` still alive after waiting up to ``timeout`` (the pool is shut
    down without waiting, so its threads end shortly after close())."""
    deadline = time.monotonic() + timeout
    alive = {t for t in threads if t.is_alive()}
    while alive and time.monotonic() < deadline:
        time.sleep(0.01)
        alive = {t for t in alive if t.is_alive()}
    return {t.name for t in alive}


def test_many_batches_share_one_pool_keep_memory_and_leak_no_thread():
    before = set(threading.enumerate())
    batches = 30
    with LocalRunner(_plan(threads=3)) as runner:
        for number in range(1, batches + 1):
            results = runner.run([(k, number) for k in ("a", "b", "c", "d")])
            assert [r.outputs[0]["seen"] for r in results] == [number] * 4
            new = set(threading.enumerate()) - before
            # One pool of 3 threads for every batch and both kinds of blocking call (a pool
            # per batch would have added threads batch after batch).
            assert len(new) <= 3, sorted(t.name for t in new)
            names = {name for r in results for name in r.outputs[0]["threads"]}
            assert all(name.startswith("flink-agents-call") for name in names), names
        assert runner.memory["a"] == {"seen": batches}
    assert _wait_until_gone(set(threading.enumerate()) - before) == set()
    with pytest.raises(RuntimeError, match="closed"):
        runner.run([("a", 1)])
    with pytest.raises(RuntimeError):
        runner.runner.executor.submit(_thread_name)  # the pool is shut down
    runner.close()  # a second close does nothing


def test_a_failed_batch_cancels_its_other_runs_and_the_runner_goes_on():
    CANCELLED.clear()
    with LocalRunner(_plan()) as runner:
        runner.run([("slow", 1), ("bad", 1)])  # both keys have seen one input
        with pytest.raises(ActionError, match="bad input"):
            runner.run([("slow", "slow"), ("bad", "bad")])
        # The slow run was cancelled before run() returned, not left on the loop to wake up
        # in the next batch; neither run of the failed batch was committed.
        assert CANCELLED == ["slow"]
        assert runner.memory["slow"] == {"seen": 1}
        assert runner.memory["bad"] == {"seen": 1}
        [result] = runner.run([("slow", 2)])
        assert result.outputs[0]["seen"] == 2


async def test_batches_run_from_inside_a_running_loop():
    before = set(threading.enumerate())
    runner = LocalRunner(_plan())
    first = runner.run([("k", 1)])
    second = runner.run([("k", 2)])
    assert [first[0].outputs[0]["seen"], second[0].outputs[0]["seen"]] == [1, 2]
    runner.close()
    assert _wait_until_gone(set(threading.enumerate()) - before) == set()


def test_close_cancels_a_batch_interrupted_by_ctrl_c():
    """Ctrl-C stops the loop in the middle of a batch; close() still ends its runs."""
    CANCELLED.clear()
    WAITING.clear()
    runner = LocalRunner(_plan())
    # A real SIGINT to the main thread (interrupt_main() only sets a flag, seen when the
    # loop wakes up next), sent once every run waits (a fixed delay raced the runs' start
    # on a loaded machine): the loop's wait is interrupted then.
    main = threading.main_thread().ident
    assert main is not None
    stop = threading.Event()

    def interrupt() -> None:
        while len(WAITING) < 5 and not stop.wait(0.01):
            pass
        if not stop.is_set():
            signal.pthread_kill(main, signal.SIGINT)

    sender = threading.Thread(target=interrupt, daemon=True)
    sender.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run([(f"k{i}", "slow") for i in range(5)])
    finally:
        stop.set()
        sender.join()
    assert CANCELLED == []  # interrupted, not yet cancelled
    runner.close()
    assert sorted(CANCELLED) == [f"k{i}" for i in range(5)]
    assert runner.memory == {}


def test_agent_runner_owns_its_pool_sized_by_num_async_threads():
    runner = AgentRunner(_plan(threads=2))
    futures = [runner.executor.submit(_thread_name) for _ in range(8)]
    names = {f.result() for f in futures}
    assert 1 <= len(names) <= 2 and all(n.startswith("flink-agents-call") for n in names)
    runner.close()
    with pytest.raises(RuntimeError):
        runner.executor.submit(_thread_name)
