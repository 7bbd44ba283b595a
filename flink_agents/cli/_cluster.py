"""``flink-agents cluster start|stop|status`` and ``flink-agents submit``: a local standalone
Flink cluster, through :mod:`flink_agents.ops.cluster`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from flink_agents.cli._loading import parse_config
from flink_agents.errors import ClusterError, CommandError, CommandFailure, UsageError

T = TypeVar("T")

#: Environment variable naming the default cluster work directory.
CLUSTER_DIR_ENV = "FLINK_AGENTS_CLUSTER_DIR"


def default_cluster_dir() -> str:
    """``$FLINK_AGENTS_CLUSTER_DIR``, else ``~/.flink-agents/cluster``."""
    return os.environ.get(CLUSTER_DIR_ENV) or str(Path.home() / ".flink-agents" / "cluster")


def _call(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a cluster function; its errors become a failure: a :class:`ClusterError` with
    its own message, anything else with its type's name in front."""
    try:
        return func(*args, **kwargs)
    except CommandError:
        raise
    except ClusterError as exc:
        raise CommandFailure(str(exc)) from exc
    except Exception as exc:
        raise CommandFailure(f"{type(exc).__name__}: {exc}") from exc


def cmd_cluster(args: argparse.Namespace) -> None:
    """``flink-agents cluster start|stop|status``: a local standalone Flink cluster.

    Prints the cluster's status as JSON on stdout. ``status`` exits 0 whether the cluster
    runs or not (see ``"running"``); it fails when no cluster was ever started there.
    """
    from flink_agents.ops import cluster

    workdir = args.workdir or default_cluster_dir()
    if args.action == "start":
        extra = parse_config(args.flink_config) if args.flink_config else None
        for name in ("port", "slots", "taskmanagers"):
            value = getattr(args, name)
            if value is not None and value < 1:
                raise UsageError(f"--{name} must be >= 1, got {value}")
        options = {
            k: v
            for k, v in (
                ("port", args.port),
                ("slots", args.slots),
                ("taskmanagers", args.taskmanagers),
            )
            if v is not None
        }
        print(f"starting a Flink cluster in {workdir} ...", file=sys.stderr)
        status = _call(cluster.start_cluster, workdir, extra_config=extra, **options)
    elif args.action == "stop":
        status = _call(cluster.stop_cluster, workdir)
    else:
        status = _call(cluster.cluster_status, workdir)
    print(json.dumps(status.to_dict(), indent=2))


def cmd_submit(args: argparse.Namespace) -> None:
    """``flink-agents submit``: submit a PyFlink job file to the local cluster.

    The job's own output (``flink run``'s) goes to stdout; the job id and duration to stderr.
    """
    job = Path(args.job)
    if not job.is_file():
        raise UsageError(f"job file {args.job!r} does not exist")
    if job.suffix != ".py":
        raise UsageError(f"job file {args.job!r} must be a Python file (.py)")
    from flink_agents.ops import cluster

    if args.parallelism is not None and args.parallelism < 1:
        raise UsageError(f"--parallelism must be >= 1, got {args.parallelism}")
    if args.jobmanager is not None:
        _check_jobmanager(args.jobmanager)
        workdir = args.cluster  # its client configuration only, if given
    else:
        workdir = args.cluster or default_cluster_dir()
    result = _call(
        cluster.submit,
        str(job),
        workdir=workdir,
        args=list(args.job_args),
        detached=args.detached,
        flink_args=list(args.flink_arg),
        jobmanager=args.jobmanager,
        from_savepoint=args.from_savepoint,
        parallelism=args.parallelism,
    )
    if result.output:
        print(result.output)
    state = "submitted" if args.detached else "finished"
    print(
        f"job {result.job_id or '(id not printed)'} {state} in {result.seconds:.1f}s",
        file=sys.stderr,
    )


def _check_jobmanager(address: str) -> None:
    from flink_agents.ops.jobs import rest_url

    try:
        rest_url(address)
    except ClusterError as exc:
        raise UsageError(str(exc)) from None


def cmd_stop(args: argparse.Namespace) -> None:
    """``flink-agents stop JOB_ID --savepoint DIR``: stop a job with a savepoint through the
    JobManager's REST API; prints ``{"job_id", "savepoint", "state"}`` as JSON."""
    from flink_agents.ops import cluster, jobs

    if args.jobmanager is not None:
        _check_jobmanager(args.jobmanager)
        jobmanager = args.jobmanager
    else:
        workdir = Path(args.cluster or default_cluster_dir())
        status = _call(cluster.cluster_status, workdir)
        if not status.running:
            raise CommandFailure(f"the cluster in {workdir} is not running")
        jobmanager = status.rest_url
    print(f"stopping job {args.job_id} with a savepoint ...", file=sys.stderr)
    location = _call(
        jobs.stop_job,
        jobmanager,
        args.job_id,
        args.savepoint if "://" in args.savepoint else str(Path(args.savepoint).resolve()),
        drain=args.drain,
        timeout=args.timeout,
    )
    state = _call(jobs.wait_for_state, jobmanager, args.job_id, timeout=60.0)
    print(json.dumps({"job_id": args.job_id, "savepoint": location, "state": state}, indent=2))
