"""Operating jobs on a running Flink cluster through its REST API: stop with a savepoint,
cancel, read a job's state and its checkpoints.

The REST API needs no Flink client, no JVM and no py4j, and reaches a remote JobManager the
same way as a local one, which is why ``flink-agents stop`` uses it: PyFlink 2.3's
``JobClient.stop_with_savepoint`` calls a Java signature that no longer exists (it lacks the
savepoint format type). A JobManager is given as ``host:port`` of its REST endpoint (or a
full ``http(s)://`` URL).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from flink_agents.errors import ClusterError

__all__ = [
    "cancel_job",
    "checkpoint_stats",
    "job_state",
    "rest_url",
    "stop_job",
    "wait_for_state",
]

#: Job states after which a job does not run any more.
TERMINAL_STATES = frozenset({"FINISHED", "CANCELED", "FAILED", "SUSPENDED"})


def rest_url(jobmanager: str) -> str:
    """``http://host:port`` for ``host:port`` (a URL is returned without its trailing /).

    Raises:
        ClusterError: ``jobmanager`` is not ``host:port`` nor a URL.
    """
    address = jobmanager.strip().rstrip("/")
    if address.startswith(("http://", "https://")):
        return address
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"a JobManager address is host:port (its REST port), got {jobmanager!r}")
    return f"http://{host}:{port}"


def _call(jobmanager: str, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(
        rest_url(jobmanager) + path,
        data=data,
        method=method,
        headers={"Content-Type": "application/json"} if data is not None else {},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            text = resp.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", errors="replace")
        raise ClusterError(
            f"{method} {path} on {jobmanager} failed: HTTP {exc.code} {detail[:2000]}"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        raise ClusterError(f"the JobManager at {jobmanager} cannot be reached: {exc}") from None
    return json.loads(text) if text.strip() else None


def job_state(jobmanager: str, job_id: str) -> str:
    """The job's state (``RUNNING``, ``CANCELED``, ``FINISHED``...)."""
    return str(_call(jobmanager, "GET", f"/jobs/{job_id}")["state"])


def cancel_job(jobmanager: str, job_id: str) -> None:
    """Ask the JobManager to cancel the job (returns at once; see :func:`wait_for_state`)."""
    _call(jobmanager, "PATCH", f"/jobs/{job_id}?mode=cancel")


def wait_for_state(
    jobmanager: str, job_id: str, states: frozenset[str] = TERMINAL_STATES, timeout: float = 60.0
) -> str:
    """Poll until the job reaches one of ``states``; returns it.

    Raises:
        ClusterError: not within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    state = job_state(jobmanager, job_id)
    while state not in states:
        if time.monotonic() > deadline:
            raise ClusterError(f"job {job_id} is still {state} after {timeout:.0f}s")
        time.sleep(0.1)
        state = job_state(jobmanager, job_id)
    return state


def stop_job(
    jobmanager: str,
    job_id: str,
    savepoint_dir: str,
    *,
    drain: bool = False,
    timeout: float = 300.0,
) -> str:
    """Stop the job with a savepoint (``POST /jobs/:id/stop``) and wait for the savepoint.

    Args:
        jobmanager: the JobManager's REST address, ``host:port``.
        job_id: the job.
        savepoint_dir: where the savepoint goes (a path or URI every JobManager and
            TaskManager can write; a local path for a local cluster).
        drain: emit the final watermark first (fires every event-time timer and window: for
            a job that ends for good, not for an upgrade).
        timeout: seconds to wait for the savepoint.

    Returns:
        The savepoint's path, for ``flink-agents submit --from-savepoint``.

    Raises:
        ClusterError: the JobManager refused or the savepoint failed (with Flink's cause).
    """
    trigger = _call(
        jobmanager,
        "POST",
        f"/jobs/{job_id}/stop",
        {"targetDirectory": savepoint_dir, "drain": drain, "formatType": "CANONICAL"},
    )
    request_id = trigger["request-id"]
    deadline = time.monotonic() + timeout
    while True:
        result = _call(jobmanager, "GET", f"/jobs/{job_id}/savepoints/{request_id}")
        if result["status"]["id"] == "COMPLETED":
            operation = result.get("operation") or {}
            if "location" in operation:
                return str(operation["location"])
            cause = operation.get("failure-cause", {})
            raise ClusterError(
                f"stopping job {job_id} with a savepoint failed: "
                f"{cause.get('serialized-throwable') or cause.get('stack-trace') or cause}"[:4000]
            )
        if time.monotonic() > deadline:
            raise ClusterError(f"the savepoint of job {job_id} did not complete in {timeout:.0f}s")
        time.sleep(0.2)


def checkpoint_stats(jobmanager: str, job_id: str) -> dict[str, Any]:
    """The job's checkpoint statistics (``GET /jobs/:id/checkpoints``: counts, ``history``
    with each checkpoint's ``end_to_end_duration`` in ms, ``summary``)."""
    result: dict[str, Any] = _call(jobmanager, "GET", f"/jobs/{job_id}/checkpoints")
    return result
