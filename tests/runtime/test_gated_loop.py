"""The gated event loop of the Flink host's slot: the operator thread borrows it for the first
steps of a run, the loop thread drives whatever really waits (no Flink needed)."""

from __future__ import annotations

import asyncio
import threading

from flink_agents.runtime.flink import gated_loop


def _start() -> tuple[gated_loop.GatedLoop, threading.Thread]:
    loop = gated_loop.GatedLoop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    return loop, thread


def _stop(loop: gated_loop.GatedLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_supported_here() -> None:
    assert gated_loop.supported()


def test_a_run_that_never_waits_finishes_on_the_borrowing_thread() -> None:
    loop, thread = _start()
    seen: list[int] = []

    async def run() -> str:
        seen.append(threading.get_ident())
        await asyncio.sleep(0)  # one hop through the ready queue
        seen.append(threading.get_ident())
        return "done"

    try:
        with loop.gate:
            task = loop.create_task(run())
            loop.run_borrowed(task, 2)
            assert task.done() and task.result() == "done"
        assert seen == [threading.get_ident()] * 2
    finally:
        _stop(loop, thread)


def test_a_run_that_waits_is_finished_by_the_loop_thread() -> None:
    loop, thread = _start()
    seen: list[int] = []
    finished = threading.Event()

    async def run() -> None:
        seen.append(threading.get_ident())
        await asyncio.sleep(0.05)  # a real wait: a timer only the loop thread serves
        seen.append(threading.get_ident())
        finished.set()

    try:
        with loop.gate:
            task = loop.create_task(run())
            loop.run_borrowed(task, 2)
            assert not task.done()
        assert finished.wait(5), "the loop thread did not pick up the waiting run"
        assert seen == [threading.get_ident(), thread.ident]
    finally:
        _stop(loop, thread)


def test_borrowing_skips_cancelled_callbacks_and_leaves_later_ones_to_the_loop() -> None:
    loop, thread = _start()
    calls: list[str] = []
    try:
        with loop.gate:
            loop.call_soon(calls.append, "cancelled").cancel()
            loop.call_soon(calls.append, "ran")
            task = loop.create_task(asyncio.sleep(10))
            loop.run_borrowed(task, 1)
            assert calls == ["ran"]
            task.cancel()
    finally:
        _stop(loop, thread)


def test_a_started_task_takes_its_first_step_at_once_as_the_current_task() -> None:
    loop, thread = _start()
    seen: list[object] = []

    async def run() -> str:
        seen.append(asyncio.current_task())
        return "done"

    try:
        with loop.gate:
            task = loop.start_borrowed(run(), 0)  # no round of the ready queue
            # Done in the constructor's step: nothing went through the ready queue.
            assert task.done() and task.result() == "done"
            assert seen == [task]
            assert not loop._ready  # type: ignore[attr-defined]
            assert "call_soon" not in vars(loop)
    finally:
        _stop(loop, thread)


def test_a_started_task_that_waits_keeps_its_deadline_and_its_failure() -> None:
    from flink_agents.api.timeouts import bounded
    from flink_agents.errors import CallTimeoutError

    loop, thread = _start()
    finished = threading.Event()
    outcome: list[BaseException] = []

    async def slow() -> None:
        await asyncio.sleep(10)

    async def run() -> None:
        # The deadline is armed in the first step (on this thread): it must cancel the task
        # that goes on with the run on the loop thread.
        try:
            await bounded(slow, 0.05, "tool", "slow")()
        except CallTimeoutError as exc:
            outcome.append(exc)
        finished.set()

    async def fails() -> None:
        raise ValueError("boom")

    try:
        with loop.gate:
            task = loop.start_borrowed(run(), 1)
            assert not task.done()
            failing = loop.start_borrowed(fails(), 1)
            assert isinstance(failing.exception(), ValueError)
        assert finished.wait(5), "the deadline did not end the waiting run"
        assert len(outcome) == 1
    finally:
        _stop(loop, thread)
