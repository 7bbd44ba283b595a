"""An asyncio loop that the operator thread can borrow for a few iterations.

Handing a zero-latency run to the loop thread and waiting for it costs two thread wake-ups,
more than the run itself. Instead every iteration of the loop runs under a lock (``gate``)
let go only while the loop blocks in ``select``; holding it, the operator thread runs a
run's first iterations itself, and a run that really waits stays on the loop. Iterations
never run concurrently, so asyncio's single-thread guarantees hold. It relies on private
``BaseEventLoop`` members (:func:`supported` checks them; the slot falls back to a plain
hand-off without them). See docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import asyncio
import selectors
import threading
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

    def _run_once(self) -> None:
        with self.gate:
            super()._run_once()  # type: ignore[misc]

    def run_borrowed(self, task: asyncio.Future[Any], iterations: int) -> None:
        """Run up to ``iterations`` rounds of the ready callbacks on the calling thread,
        until ``task`` is done; the caller must hold ``gate``.

        Unlike ``_run_once`` this does not poll the selector: I/O and timers are left to the
        loop thread, and the GIL is never let go (a zero-timeout ``select`` lets it go, and
        winning it back from the task thread upstream cost more than the run itself)."""
        previous = asyncio._get_running_loop()
        asyncio._set_running_loop(self)
        ready = self._ready  # type: ignore[attr-defined]
        try:
            while not task.done() and iterations > 0 and ready:
                for _ in range(len(ready)):
                    handle = ready.popleft()
                    if not handle._cancelled:
                        handle._run()
                iterations -= 1
        finally:
            asyncio._set_running_loop(previous)
        if not task.done() or self._ready:  # type: ignore[attr-defined]
            # Work was left for the loop (a timer, I/O or a callback registered from this
            # thread): wake the loop thread so it recomputes its select timeout.
            self._write_to_self()  # type: ignore[attr-defined]


def supported() -> bool:
    """Whether this interpreter's asyncio has what :class:`GatedLoop` relies on."""
    base = asyncio.base_events.BaseEventLoop
    return (
        hasattr(base, "_run_once")
        and hasattr(asyncio.selector_events.BaseSelectorEventLoop, "_write_to_self")
        and hasattr(asyncio.Handle, "_run")
        and "_cancelled" in asyncio.Handle.__slots__
    )
