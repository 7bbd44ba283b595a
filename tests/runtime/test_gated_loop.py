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
