"""Which fast paths of the Flink host engaged in a job, and a warning when one did not.

A fast path that cannot engage (PyFlink changed, the bridge jar is missing or stale) leaves
the job correct but slower, so each one is noted once per job and path: a WARNING naming
the path and why when it did not engage, an INFO line when it did, and, with
:data:`REPORT_FILE` set, a JSON line in that file (how a test checks, in a MiniCluster whose
Python runs inside the JVM, that every path engaged). Notes are taken at set-up time
(``open()``, the operator's first calls), never per record. The paths are described in
docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import json
import logging
import threading

from flink_agents.api.core_options import ConfigOption

log = logging.getLogger("flink_agents.runtime.flink")

#: The thread-mode operation object replaced by a stand-in with a shorter per-record path.
LEAN_OPERATION = "lean-operation"
#: Inputs handed to Python in batches (``batch.size``).
BATCHES = "batches"
#: Durable call records saved right before each checkpoint barrier.
BARRIER_HOOK = "barrier-hook"
#: The Java operator that unwraps outputs and puts their timestamps back.
TIMESTAMP_OPERATOR = "timestamp-operator"
#: The per-record reads of pending inputs and memory skipped while keyed state holds none
#: (process mode: when the operator started without state).
STATE_PROBE = "state-probe"
#: The operator thread runs a run's first steps on the slot's loop itself (``gated_loop``).
BORROWED_LOOP = "borrowed-loop"
#: Process mode: the Python worker's Beam state sampler runs every few ms, so that a bundle's
#: end does not wait up to 200 ms for it (``_pyflink_internals.shorten_state_sampling``).
STATE_SAMPLING = "state-sampling"
#: Full garbage collections skip the objects alive at the first open (``python.gc-freeze``,
#: ``heap.freeze_startup_heap``).
HEAP_FREEZE = "heap-freeze"

#: The paths that engage with the bridge jar, by ``python.execution-mode``. Process mode
#: gets the barrier hook only at the first checkpoint barrier, the state probe only in a job
#: that started without state. The heap freeze needs no jar (on by default).
EXPECTED = {
    "thread": frozenset(
        {
            LEAN_OPERATION,
            BATCHES,
            BARRIER_HOOK,
            TIMESTAMP_OPERATOR,
            STATE_PROBE,
            BORROWED_LOOP,
            HEAP_FREEZE,
        }
    ),
    "process": frozenset(
        {TIMESTAMP_OPERATOR, BORROWED_LOOP, STATE_PROBE, STATE_SAMPLING, HEAP_FREEZE}
    ),
}


def _path(value: object) -> str | None:
    return None if value is None else str(value)


#: Agents-config key: a file that gets one JSON line per fast path and job
#: (``{"job", "path", "engaged", "detail"}``), written on the TaskManagers.
REPORT_FILE: ConfigOption[str | None] = ConfigOption(
    key="fast-paths.report-file",
    config_type=str,
    default=None,
    parse=_path,
    description="Flink: a file on the TaskManagers where each job notes which fast paths engaged.",
)

_lock = threading.Lock()
_noted: set[tuple[str, str, bool]] = set()


def note(
    job: str,
    path: str,
    engaged: bool,
    detail: str,
    *,
    report_file: str | None = None,
    warn: bool = True,
) -> None:
    """Note once per ``job`` (the function's id) whether ``path`` engaged.

    Args:
        job: the id of the job's agent function (shared by its subtasks and restarts).
        path: one of this module's path names.
        engaged: whether it engaged.
        detail: what engaged, or why not and what the job does instead.
        report_file: where to add the note as a JSON line (see :data:`REPORT_FILE`).
        warn: False when the path is off by configuration (INFO, not WARNING).
    """
    with _lock:
        if (job, path, engaged) in _noted:
            return
        _noted.add((job, path, engaged))
    if engaged:
        log.info("fast path %s engaged: %s", path, detail)
    else:
        log.log(
            logging.WARNING if warn else logging.INFO,
            "fast path %s not engaged: %s",
            path,
            detail,
        )
    if report_file:
        line = json.dumps({"job": job, "path": path, "engaged": engaged, "detail": detail})
        try:
            with _lock, open(report_file, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError as exc:
            log.warning("fast path report %s not written: %s", report_file, exc)
