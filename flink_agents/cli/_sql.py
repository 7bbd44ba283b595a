"""``flink-agents sql``: run a SQL script (our DDL, Flink's DDL and queries).

::

    flink-agents sql -f script.sql [--jobmanager host:port] [--detached]
                     [--config key=value ...] [-p N]
    flink-agents sql -e "SHOW TOOLS; SHOW AGENTS"

The script is parsed first: a syntax error anywhere stops it before anything runs. SHOW,
DESC and bounded SELECT results are printed as tables as they come; other statements print
one ``[OK]`` line. INSERT statements are checked where they stand and submitted together,
as one job, after the last statement succeeded (``SET 'table.dml-sync' = 'true'`` runs each
where it stands), to a local MiniCluster or, with ``--jobmanager``, to a cluster; the
command waits for the job unless ``--detached``. The first failing statement stops the
script: its line, column and the reason are printed, and no job is submitted.

``--config`` sets agents configuration values: ``sql.catalog-dir=DIR`` keeps the agent
catalog in a directory, so tools and agents created by one script are there for the next.

Exit codes: 0 success; 1 a statement or the job failed; 2 usage errors (bad arguments, an
unreadable script, a syntax error).

This module exposes :func:`add_parser` and :func:`run` for the ``flink-agents`` command.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flink_agents.errors import ConfigurationError, FlinkAgentsError, SqlError, SqlParseError

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def add_parser(subparsers: Any, parents: Sequence[argparse.ArgumentParser] = ()) -> Any:
    """Add the ``sql`` command to ``subparsers`` (of ``flink-agents``)."""
    parser = subparsers.add_parser(
        "sql",
        parents=list(parents),
        help="run SQL: CREATE TOOL / AGENT, Flink's DDL and queries, agent_run(...)",
        description="Run a SQL script: our statements (tools, agents, connections), Flink's "
        "DDL and queries, and agent_run(...) over tables.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("-f", "--file", metavar="SCRIPT", help="the script file")
    source.add_argument("-e", "--execute", metavar="STATEMENTS", help="statements to run")
    parser.add_argument(
        "--jobmanager",
        metavar="HOST:PORT",
        help="submit jobs to this JobManager (default: a local MiniCluster)",
    )
    parser.add_argument(
        "--detached", action="store_true", help="with --jobmanager: do not wait for the job"
    )
    parser.add_argument("-p", "--parallelism", type=int, help="the job's parallelism")
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an agents configuration value (repeatable), e.g. sql.catalog-dir=DIR",
    )
    parser.set_defaults(handler=run)
    return parser


class _Usage(Exception):
    pass


def _jobmanager(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise _Usage(f"--jobmanager {value!r}: expected HOST:PORT, e.g. localhost:8081")
    return host, int(port)


def _config(items: Sequence[str]) -> dict[str, str]:
    from flink_agents.api.core_options import AgentConfiguration

    config = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise _Usage(f"--config {item!r}: expected KEY=VALUE")
        config[key.strip()] = value.strip()
    try:
        AgentConfiguration(config)  # known keys' values are checked before Flink starts
    except ConfigurationError as exc:
        raise _Usage(f"--config: {exc}") from None
    return config


def _script(args: argparse.Namespace) -> tuple[str, str]:
    if args.execute is not None:
        return args.execute, "<-e>"
    path = Path(args.file)
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except OSError as exc:
        raise _Usage(f"cannot read script {args.file!r}: {exc.strerror or exc}") from None


def _where(script: str, name: str, err: SqlError) -> str:
    """The error with the script line it points at and a caret under the column."""
    text = f"{name}: {err}"
    if err.line is None:
        return text
    lines = script.splitlines()
    if 1 <= err.line <= len(lines):
        source = lines[err.line - 1]
        caret = " " * max(0, (err.column or 1) - 1) + "^"
        text += f"\n  {source}\n  {caret}"
    return text


def run(args: argparse.Namespace) -> int:
    """Run the ``sql`` command; returns the exit code."""
    from flink_agents.sql.parser import parse_script

    name = "<-e>"
    script = ""
    try:
        if args.detached and not args.jobmanager:
            raise _Usage("--detached needs --jobmanager (a local job ends with this command)")
        if args.jobmanager:
            _jobmanager(args.jobmanager)
        config = _config(args.config)
        script, name = _script(args)
        parse_script(script)  # a syntax error anywhere: nothing runs
    except _Usage as exc:
        print(f"flink-agents sql: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SqlParseError as exc:
        print(f"flink-agents sql: error: {_where(script, name, exc)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        from flink_agents.runtime.flink.sql.command import run_command

        run_command(
            script,
            jobmanager=_jobmanager(args.jobmanager) if args.jobmanager else None,
            parallelism=args.parallelism,
            config=config,
            detached=args.detached,
        )
        return EXIT_OK
    except _Usage as exc:
        print(f"flink-agents sql: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SqlError as exc:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"flink-agents sql: failed: {_where(script, name, exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except FlinkAgentsError as exc:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"flink-agents sql: failed: {exc}", file=sys.stderr)
        return EXIT_FAILURE
