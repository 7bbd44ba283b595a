"""The argument parser of ``flink-agents``: one sub-command per handler."""

from __future__ import annotations

import argparse

from flink_agents.cli._cluster import CLUSTER_DIR_ENV, cmd_cluster, cmd_stop, cmd_submit
from flink_agents.cli._run import cmd_plan, cmd_run


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``flink-agents``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show tracebacks and info logs",
    )
    parser = argparse.ArgumentParser(
        prog="flink-agents",
        description="Compile, run and submit flink-agents agents.",
        parents=[common],
    )
    parser.set_defaults(debug=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def agent_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "agent", metavar="MODULE:ATTR", help="an Agent instance, subclass or factory"
        )
        sub.add_argument(
            "--config",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a configuration value (repeatable)",
        )
        sub.add_argument(
            "--resources",
            action="append",
            default=[],
            metavar="MODULE:FUNCTION[:ARGS]",
            help="a function returning {name: resource} to add (repeatable); ARGS is a "
            "comma separated list of arguments, key=value for keyword arguments",
        )

    plan = commands.add_parser("plan", parents=[common], help="compile an agent to its plan JSON")
    agent_options(plan)
    plan.add_argument("-o", "--output", help="write the plan here (default: stdout)")
    plan.set_defaults(handler=cmd_plan)

    run = commands.add_parser(
        "run", parents=[common], help="run an agent locally over a JSONL file"
    )
    agent_options(run)
    run.add_argument("--input", "-i", required=True, help="JSONL input, one record a line")
    run.add_argument(
        "--output",
        "-o",
        required=True,
        help='JSONL output file: {"key", "output"} a line, strict JSON (NaN and infinities '
        "written as null)",
    )
    run.add_argument("--key-field", help="record field holding the key (default: line number)")
    run.add_argument("--batch-size", type=int, default=64, help="records per batch (64)")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(handler=cmd_run)

    cluster = commands.add_parser(
        "cluster", parents=[common], help="a local standalone Flink cluster"
    )
    cluster.add_argument("action", choices=["start", "stop", "status"])
    cluster.add_argument(
        "--workdir",
        help=f"the cluster's configuration/log folder (default: ${CLUSTER_DIR_ENV} or "
        "~/.flink-agents/cluster)",
    )
    cluster.add_argument("--port", type=int, help="REST port (start only; 8081)")
    cluster.add_argument("--slots", type=int, help="task slots per TaskManager (start only)")
    cluster.add_argument("--taskmanagers", type=int, help="TaskManagers (start only)")
    cluster.add_argument(
        "--flink-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="more Flink configuration (start only, repeatable)",
    )
    cluster.set_defaults(handler=cmd_cluster)

    submit = commands.add_parser(
        "submit", parents=[common], help="submit a PyFlink job file to the local cluster"
    )
    submit.add_argument("job", help="the PyFlink job file (.py)")
    submit.add_argument(
        "--cluster",
        metavar="WORKDIR",
        help="the cluster's workdir, as given to `cluster start` (same default)",
    )
    submit.add_argument("--detached", action="store_true", help="do not wait for the job")
    submit.add_argument("-p", "--parallelism", type=int, help="the job's parallelism")
    submit.add_argument(
        "--jobmanager",
        "-m",
        metavar="HOST:PORT",
        help="a JobManager's REST address (a remote cluster) instead of the local cluster",
    )
    submit.add_argument(
        "--from-savepoint",
        "-s",
        metavar="PATH",
        help="start from this savepoint (from `flink-agents stop --savepoint`)",
    )
    submit.add_argument(
        "--flink-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="an extra `flink run` argument (repeatable), e.g. --flink-arg=-Dkey=value",
    )
    submit.add_argument(
        "job_args",
        nargs="*",
        metavar="JOB_ARG",
        help="arguments of the job; put them after `--` when they start with a dash",
    )
    submit.set_defaults(handler=cmd_submit)

    stop = commands.add_parser(
        "stop", parents=[common], help="stop a job with a savepoint (for an upgrade)"
    )
    stop.add_argument("job_id", metavar="JOB_ID", help="the Flink job id")
    stop.add_argument(
        "--savepoint", required=True, metavar="DIR", help="the directory the savepoint goes to"
    )
    stop.add_argument("--jobmanager", "-m", metavar="HOST:PORT", help="a JobManager's REST address")
    stop.add_argument(
        "--cluster",
        metavar="WORKDIR",
        help="the local cluster's workdir, when no --jobmanager is given (same default)",
    )
    stop.add_argument(
        "--drain",
        action="store_true",
        help="emit the final watermark first (ends the job for good; not for upgrades)",
    )
    stop.add_argument(
        "--timeout", type=float, default=300.0, help="seconds to wait for the savepoint (300)"
    )
    stop.set_defaults(handler=cmd_stop)

    from flink_agents.cli import _trace

    _trace.add_parser(commands, [common])

    from flink_agents.cli import _sql as sql_cli

    sql_cli.add_parser(commands, [common])
    return parser
