"""The Python process's garbage collector under the agent operator (``python.gc-freeze``).

A call in flight keeps its run's objects (events, messages, the task, its frames) for as
long as the model takes, so CPython's young collections see them alive and promote them;
every few seconds the promoted objects trigger a full collection, which walks every object
the process holds with the GIL held. Most of those are what start-up loaded and nothing
will free: PyFlink, Beam, pydantic's schemas, the SDKs and the plan. Measured on the
concurrency job (2,000 keys, 256 calls of 200 ms in flight, thread mode): a full collection
of ~177,000 such objects every ~2 s, 80-110 ms each, during which no run and no input moves
(a timer due then fires up to 110 ms late); 8 % of the wall time.

:func:`freeze_startup_heap` collects once and moves every object alive then into the
permanent generation (``gc.freeze()``), once per Python process, at the first agent
operator's ``open()``: later full collections walk only what was made since (4 ms each
there). The price: an object alive at that moment that later becomes unreachable *through a
reference cycle* is never freed (objects freed by their reference count, nearly all, are
freed as before). See docs/user-guide/configuration.md, "On Flink".
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
#: Whether this module froze the heap in this process.
_frozen = False


def freeze_startup_heap() -> tuple[int, bool]:
    """Collect, then freeze the objects alive now, once per process.

    Returns:
        The objects in the permanent generation, and whether this call froze them (False:
        an earlier operator's ``open()`` in this process did).
    """
    global _frozen
    with _lock:
        if _frozen:
            return gc.get_freeze_count(), False
        gc.collect()
        gc.freeze()
        _frozen = True
        return gc.get_freeze_count(), True


def thaw() -> None:
    """Undo :func:`freeze_startup_heap` (tests: a test process outlives many operators and
    must collect their cycles)."""
    global _frozen
    with _lock:
        if _frozen:
            gc.unfreeze()
            _frozen = False
