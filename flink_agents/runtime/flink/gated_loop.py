"""An asyncio loop that the operator thread can borrow for a few iterations.

Handing a zero-latency run to the loop thread and waiting for it costs two thread wake-ups,
more than the run itself. Instead every iteration of the loop runs under a lock (``gate``)
let go only while the loop blocks in ``select``; holding it, the operator thread runs a
run's first iterations itself, and a run that really waits stays on the loop. Iterations
never run concurrently, so asyncio's single-thread guarantees hold. It relies on private
``BaseEventLoop`` members (:func:`supported` checks them; the slot falls back to a plain
hand-off without them). See docs/ARCHITECTURE.md.

A run's task takes its first step while it is made (:meth:`GatedLoop.start_borrowed`), as
Python 3.12's eager tasks do: the task exists first (``asyncio.current_task()`` is the task
that goes on with the run if it waits: deadlines and cancel scopes that captured it stay
right), but its first step runs at once instead of through a handle in the ready queue.
"""

from __future__ import annotations

import asyncio
import selectors
import threading
from collections.abc import Coroutine
from typing import Any


class _GatedSelector(selectors.DefaultSelector):
    """Lets the gate go while blocked in ``select``."""

    gate: threading.Lock

    def select(self, timeout: float | None = None) -> Any:
        self.gate.release()
        try:
            return super().select(timeout)
        finally:
            self.gate.acquire()


class GatedLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose iterations run under ``gate``."""

    def __init__(self) -> None:
        self.gate = threading.Lock()
        selector = _GatedSelector()
        selector.gate = self.gate
        super().__init__(selector)

    def _first_step(self, callback: Any, *args: Any, context: Any = None) -> None:
        """``call_soon`` while :meth:`start_borrowed` makes a task (an instance attribute
        for that moment only: other callbacks pay nothing): the task's constructor schedules
        its first step, which runs now, as ``Handle._run`` would run it (the task keeps the
        coroutine's outcome)."""
        del self.call_soon  # the step itself may schedule callbacks
        try:
            if context is None:
                callback(*args)
            else:
                context.run(callback, *args)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - as Handle._run: reported, not raised
            self.call_exception_handler(
                {"message": f"Exception in the first step of {callback!r}", "exception": exc}
            )

    def _run_once(self) -> None:
        with self.gate:
            super()._run_once()  # type: ignore[misc]

    def start_borrowed(self, coro: Coroutine[Any, Any, Any], iterations: int) -> asyncio.Task[Any]:
        """A task of ``coro`` whose first step runs at once on the calling thread, then up to
        ``iterations`` rounds of the ready callbacks until it is done (:meth:`run_borrowed`);
        the caller must hold ``gate``.

        A run that finishes in its first step costs no handle in the ready queue and no
        round of it (an eager task: Python 3.12's ``eager_start``, by hand for 3.10/3.11).
        """
        previous = asyncio._get_running_loop()
        asyncio._set_running_loop(self)
        try:
            self.call_soon = self._first_step  # type: ignore[method-assign,assignment]
            try:
                task = self.create_task(coro)
            finally:
                self.__dict__.pop("call_soon", None)  # create_task failed before the step
            if not task.done():
                self._run_ready(task, iterations)
        finally:
            asyncio._set_running_loop(previous)
        if not task.done() or self._ready:  # type: ignore[attr-defined]
            self._write_to_self()  # type: ignore[attr-defined]
        return task

    def run_borrowed(self, task: asyncio.Future[Any], iterations: int) -> None:
        """Run up to ``iterations`` rounds of the ready callbacks on the calling thread,
        until ``task`` is done; the caller must hold ``gate``.

        Unlike ``_run_once`` this does not poll the selector: I/O and timers are left to the
        loop thread, and the GIL is never let go (a zero-timeout ``select`` lets it go, and
        winning it back from the task thread upstream cost more than the run itself)."""
        previous = asyncio._get_running_loop()
        asyncio._set_running_loop(self)
        try:
            self._run_ready(task, iterations)
        finally:
            asyncio._set_running_loop(previous)
        if not task.done() or self._ready:  # type: ignore[attr-defined]
            # Work was left for the loop (a timer, I/O or a callback registered from this
            # thread): wake the loop thread so it recomputes its select timeout.
            self._write_to_self()  # type: ignore[attr-defined]

    def _run_ready(self, task: asyncio.Future[Any], iterations: int) -> None:
        """Up to ``iterations`` rounds of the ready callbacks, until ``task`` is done (the
        running loop is set, the gate held)."""
        ready = self._ready  # type: ignore[attr-defined]
        while not task.done() and iterations > 0 and ready:
            for _ in range(len(ready)):
                handle = ready.popleft()
                if not handle._cancelled:
                    handle._run()
            iterations -= 1


def supported() -> bool:
    """Whether this interpreter's asyncio has what :class:`GatedLoop` relies on."""
    base = asyncio.base_events.BaseEventLoop
    return (
        hasattr(base, "_run_once")
        and hasattr(asyncio.selector_events.BaseSelectorEventLoop, "_write_to_self")
        and hasattr(asyncio.Handle, "_run")
        and "_cancelled" in asyncio.Handle.__slots__
    )
