"""The ``flink-agents`` command.

Commands::

    flink-agents plan module:attr [-o plan.json] [--config key=value ...]
                                  [--resources module:function[:args]]
    flink-agents run module:attr --input in.jsonl --output out.jsonl [--key-field id]
                                 [--config key=value ...] [--resources module:function[:args]]
                                 [--batch-size N] [--no-progress]
    flink-agents cluster start|stop|status [--workdir DIR] [--port P] [--slots N]
                                          [--taskmanagers N] [--flink-config key=value ...]
    flink-agents submit job.py [--cluster DIR] [--detached] [-p N] [job arguments ...]
    flink-agents sql -f script.sql | -e 'statements' [--jobmanager host:port]  (sql/cli.py)

``module:attr`` names the agent: an :class:`~flink_agents.api.agents.agent.Agent` instance,
an ``Agent`` subclass (instantiated without arguments) or a function without arguments that
returns an agent. ``module`` is an importable module (the current directory is on the path)
or a ``path/to/file.py``; ``attr`` may be dotted (``module:Factory.build``).

``--resources module:function[:args]`` names a function returning ``{name: resource}``
(``ResourceDescriptor``, ``Prompt``, ``Tool`` or a tool function) that is added to the
environment, e.g. ``examples.workflow_single_agent:model_resources:scripted`` for the seed
example (``:local`` for the real local LLM, when it is installed). ``args`` is a comma
separated list of arguments given to the function: ``key=value`` items are keyword
arguments, other items positional (all strings). ``attr`` may also be a dict of resources
itself. The option may be repeated.

``--config key=value`` sets a configuration option (``max-retries=5``,
``error-handling-strategy=retry``) or a free key actions read through ``ctx.config``; the
value is parsed as JSON when it is valid JSON (``3``, ``true``, ``["a"]``), else kept as a
string. Options are checked by their type.

``run`` reads the whole JSONL input first (so a bad line stops it before any model is
called), then runs the agent in the local environment in batches of ``--batch-size``
records; different keys of a batch run concurrently, records of one key in input order,
and short-term memory of a key persists across batches. Each input line gives zero or more
output lines ``{"key": ..., "output": ...}`` in input order (pydantic outputs as JSON
objects). The key is the value of ``--key-field`` in each record, or else the record's
line number (each record its own key).

``cluster`` and ``submit`` delegate to :mod:`flink_agents.cluster` (a standalone cluster run
from the installed PyFlink wheel, jobs submitted with ``flink run -py``). The cluster lives
in a work directory: ``--workdir`` / ``--cluster``, else ``$FLINK_AGENTS_CLUSTER_DIR``, else
``~/.flink-agents/cluster``, so ``start``, ``submit`` and ``stop`` find the same cluster.
Arguments after the job file go to the job (after ``--`` when they start with a dash:
``flink-agents submit job.py --cluster DIR -- --output out.jsonl``).

Exit codes: 0 success; 2 usage errors (bad arguments, a ``module:attr`` that cannot be
imported or is not an agent, a missing or malformed input file, a bad ``--config``
value); 1 failures of the agent or the job (plan validation, a failing action, a cluster
command or job that failed). Errors are printed to stderr as one message; ``--debug`` adds the
traceback and log output.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flink_agents.api.agents.agent import Agent
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment
    from flink_agents.plan.agent_plan import AgentPlan

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """The command was invoked wrongly (exit code 2)."""


class CommandFailure(Exception):
    """The command was invoked correctly but failed (exit code 1)."""


# -- resolving module:attr ------------------------------------------------------------------


def _import_module(spec: str) -> Any:
    """Import ``spec``: a dotted module name or a path to a ``.py`` file."""
    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        path = Path(spec)
        if not path.is_file():
            raise UsageError(f"module file {spec!r} does not exist")
        # Import by name from its folder: plans reference functions by module name, so the
        # module must be importable under the same name wherever the plan runs.
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        spec = path.stem
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # the console script does not put the cwd on the path
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if spec == missing or spec.startswith(missing + "."):
            raise UsageError(
                f"cannot import module {spec!r}: {exc}. Run from the folder that holds it "
                "or install it (the current directory is on the import path)"
            ) from exc
        raise CommandFailure(f"importing module {spec!r} failed: {exc}") from exc
    except UsageError:
        raise
    except Exception as exc:
        raise CommandFailure(
            f"importing module {spec!r} failed: {type(exc).__name__}: {exc}"
        ) from exc


def resolve_reference(reference: str, what: str) -> Any:
    """The object named by ``module:attr`` (``attr`` may be dotted).

    Args:
        reference: ``"package.module:attr"`` or ``"path/file.py:attr"``.
        what: what the reference should name, for messages (``"agent"``).

    Raises:
        UsageError: the reference is malformed, or the module or attribute is missing.
    """
    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(
            f"{what} reference {reference!r} must look like 'package.module:name' "
            "(e.g. examples.react_agent:build_agent)"
        )
    obj = _import_module(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            available = sorted(n for n in dir(obj) if not n.startswith("_"))
            raise UsageError(
                f"{module_name!r} has no attribute {attr!r} (looked for {part!r}); "
                f"public names there: {', '.join(available[:20]) or 'none'}"
            ) from None
    return obj


def load_agent(reference: str) -> Agent:
    """The agent named by ``module:attr``: an instance, a subclass or a factory function.

    Raises:
        UsageError: the reference does not name an agent.
        CommandFailure: building the agent raised.
    """
    from flink_agents.api.agents.agent import Agent

    obj = resolve_reference(reference, "agent")
    if isinstance(obj, Agent):
        return obj
    if isinstance(obj, type):
        if not issubclass(obj, Agent):
            raise UsageError(
                f"{reference!r} is the class {obj.__name__}, which is not an Agent subclass"
            )
        _check_no_required_args(obj, reference)
        try:
            return obj()
        except Exception as exc:
            raise CommandFailure(
                f"creating {obj.__name__}() failed: {type(exc).__name__}: {exc}"
            ) from exc
    if callable(obj):
        _check_no_required_args(obj, reference)
        try:
            agent = obj()
        except Exception as exc:
            raise CommandFailure(
                f"calling {reference}() failed: {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(agent, Agent):
            raise UsageError(
                f"{reference}() returned {type(agent).__name__}, not an Agent: the factory "
                "must return an agent instance"
            )
        return agent
    raise UsageError(
        f"{reference!r} is a {type(obj).__name__}, not an agent: name an Agent instance, an "
        "Agent subclass or a function without arguments that returns an agent"
    )


def _check_no_required_args(func: Callable[..., Any], reference: str) -> None:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if required:
        raise UsageError(
            f"{reference!r} needs argument(s) {', '.join(required)}: name an agent instance or "
            "a function without arguments that builds the agent"
        )


def load_resources(spec: str) -> dict[str, Any]:
    """The resources named by ``module:function[:args]`` (or ``module:dict``).

    Raises:
        UsageError: the reference is malformed, missing, or does not give a dict.
        CommandFailure: the function raised.
    """
    parts = spec.split(":", 2)
    reference = ":".join(parts[:2])
    args: list[str] = []
    kwargs: dict[str, str] = {}
    if len(parts) == 3:
        for item in (p.strip() for p in parts[2].split(",")):
            if not item:
                continue
            name, eq, value = item.partition("=")
            if eq and name.isidentifier():
                kwargs[name] = value
            else:
                args.append(item)
    obj = resolve_reference(reference, "resources")
    if callable(obj):
        try:
            obj = obj(*args, **kwargs)
        except TypeError as exc:
            raise UsageError(f"--resources {spec!r}: bad arguments: {exc}") from exc
        except ValueError as exc:
            raise UsageError(f"--resources {spec!r}: {exc}") from exc
        except Exception as exc:
            raise CommandFailure(
                f"--resources {spec!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
    elif args or kwargs:
        raise UsageError(f"--resources {reference!r} is not a function; it takes no arguments")
    if not isinstance(obj, dict):
        raise UsageError(
            f"--resources {spec!r} gave a {type(obj).__name__}; it must give a dict "
            "{name: ResourceDescriptor | Prompt | Tool}"
        )
    return obj


# -- configuration ---------------------------------------------------------------------------


def parse_config(items: Sequence[str]) -> dict[str, Any]:
    """``key=value`` items as a dict (values parsed as JSON when they are valid JSON).

    Raises:
        UsageError: an item has no ``=`` or an empty key.
    """
    config: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UsageError(f"--config {item!r} must look like key=value (e.g. max-retries=5)")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        config[key] = value
    return config


def build_environment(
    config: Sequence[str], resources: Sequence[str]
) -> AgentsExecutionEnvironment:
    """A local environment with ``--config`` values and ``--resources`` added.

    Raises:
        UsageError: a bad config value or resource.
    """
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment
    from flink_agents.errors import ConfigurationError

    env = AgentsExecutionEnvironment.get_execution_environment()
    for key, value in parse_config(config).items():
        try:
            env.get_config().set_str(key, value)
        except ConfigurationError as exc:
            raise UsageError(f"--config {key}: {exc}") from exc
    for spec in resources:
        for name, resource in load_resources(spec).items():
            try:
                env.add_resource(name, resource)
            except (TypeError, ValueError) as exc:
                raise UsageError(f"--resources {spec!r}: resource {name!r}: {exc}") from exc
    return env


def compile_plan(agent_ref: str, env: AgentsExecutionEnvironment) -> AgentPlan:
    """Compile the agent named by ``agent_ref`` with the environment's config and resources.

    Raises:
        CommandFailure: the agent is invalid (every problem is listed).
    """
    from flink_agents.errors import PlanValidationError
    from flink_agents.plan.agent_plan import AgentPlan

    agent = load_agent(agent_ref)
    try:
        return AgentPlan.from_agent(agent, env.get_config(), env.resources)
    except PlanValidationError as exc:
        raise CommandFailure(str(exc)) from exc


# -- plan ------------------------------------------------------------------------------------


def cmd_plan(args: argparse.Namespace) -> int:
    """``flink-agents plan``: write the plan JSON (secrets are replaced by markers)."""
    env = build_environment(args.config, args.resources)
    plan = compile_plan(args.agent, env)
    text = plan.model_dump_json(indent=2)
    if args.output and args.output != "-":
        try:
            Path(args.output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.output!r}: {exc.strerror or exc}") from exc
        print(
            f"wrote the plan of {args.agent} ({len(plan.actions)} actions) to {args.output}",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text + "\n")
    return EXIT_OK


# -- run -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputRecord:
    """One line of the input file.

    Attributes:
        line: its 1-based line number.
        key: the key it runs under.
        value: the parsed JSON value.
    """

    line: int
    key: Any
    value: Any


def read_jsonl(path: str, key_field: str | None) -> list[InputRecord]:
    """Read and check the whole input file (blank lines are skipped).

    Raises:
        UsageError: the file is missing or unreadable, a line is not JSON, or a record
            lacks ``key_field``.
    """
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"input file {path!r} does not exist")
    records: list[InputRecord] = []
    try:
        with file.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UsageError(
                        f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno}); "
                        "the input must hold one JSON value per line"
                    ) from None
                if key_field is None:
                    key: Any = number
                elif isinstance(value, dict) and key_field in value:
                    key = value[key_field]
                    if not isinstance(key, (str, int, float, bool)):
                        raise UsageError(
                            f"{path}:{number}: key field {key_field!r} holds a "
                            f"{type(key).__name__}; keys must be strings or numbers"
                        )
                else:
                    raise UsageError(
                        f"{path}:{number}: the record has no field {key_field!r} "
                        "(given by --key-field)"
                    )
                records.append(InputRecord(number, key, value))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    return records


def to_json_value(value: Any) -> Any:
    """``value`` in a JSON-serializable form (pydantic models dumped, Rows as dicts)."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict):  # a pyflink Row
        return to_json_value(as_dict())
    return str(value)


def _batches(records: list[InputRecord], size: int) -> Iterator[list[InputRecord]]:
    for start in range(0, len(records), size):
        yield records[start : start + size]


def cmd_run(args: argparse.Namespace) -> int:
    """``flink-agents run``: run the agent locally over a JSONL file."""
    from tqdm import tqdm

    from flink_agents.errors import FlinkAgentsError
    from flink_agents.runtime.local.runner import LocalRunner

    if args.batch_size < 1:
        raise UsageError(f"--batch-size must be >= 1, got {args.batch_size}")
    records = read_jsonl(args.input, args.key_field)
    env = build_environment(args.config, args.resources)
    plan = compile_plan(args.agent, env)
    output = Path(args.output)
    if output.resolve() == Path(args.input).resolve():
        raise UsageError("--output must not be the input file")
    try:
        out_fh = output.open("w", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {args.output!r}: {exc.strerror or exc}") from exc

    runner = LocalRunner(plan)
    # One event loop for all batches: the runner makes its thread pool the loop's default
    # executor, and asyncio.run() would shut that pool down after the first batch.
    loop = asyncio.new_event_loop()
    done = written = 0
    bar = tqdm(
        total=len(records),
        unit="rec",
        desc="flink-agents run",
        file=sys.stderr,
        disable=args.no_progress,
        dynamic_ncols=True,
    )
    try:
        with out_fh:
            for batch in _batches(records, args.batch_size):
                try:
                    results = loop.run_until_complete(
                        runner.run_async([(r.key, r.value) for r in batch])
                    )
                except FlinkAgentsError as exc:
                    first = batch[0].line
                    raise CommandFailure(
                        f"the agent failed in the batch of input lines {first}-{batch[-1].line} "
                        f"({done} records done, {written} outputs written to {args.output}): "
                        f"{exc}"
                    ) from exc
                except Exception as exc:
                    raise CommandFailure(
                        f"the agent failed on input lines {batch[0].line}-{batch[-1].line}: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                for result in results:
                    for out in result.outputs:
                        line = {"key": result.key, "output": to_json_value(out)}
                        out_fh.write(json.dumps(line, ensure_ascii=False) + "\n")
                        written += 1
                out_fh.flush()
                done += len(batch)
                bar.update(len(batch))
    finally:
        bar.close()
        loop.close()
        runner.close()
    print(
        f"{done} records in, {written} outputs written to {args.output}",
        file=sys.stderr,
    )
    return EXIT_OK


# -- cluster and submit ----------------------------------------------------------------------

#: Environment variable naming the default cluster work directory.
CLUSTER_DIR_ENV = "FLINK_AGENTS_CLUSTER_DIR"


def default_cluster_dir() -> str:
    """``$FLINK_AGENTS_CLUSTER_DIR``, else ``~/.flink-agents/cluster``."""
    return os.environ.get(CLUSTER_DIR_ENV) or str(Path.home() / ".flink-agents" / "cluster")


def _cluster_module() -> Any:
    try:
        return importlib.import_module("flink_agents.cluster")
    except ImportError as exc:
        raise CommandFailure(
            f"the cluster commands need apache-flink (pip install 'flink-agents-py[flink]'): {exc}"
        ) from exc


def _call(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a cluster function; its errors become a failure with the function's message."""
    try:
        return func(*args, **kwargs)
    except (UsageError, CommandFailure):
        raise
    except Exception as exc:
        name = type(exc).__name__
        text = str(exc)
        raise CommandFailure(text if name == "ClusterError" else f"{name}: {text}") from exc


def _status_json(status: Any) -> str:
    data = status.to_dict() if hasattr(status, "to_dict") else to_json_value(status)
    return json.dumps(data, indent=2)


def cmd_cluster(args: argparse.Namespace) -> int:
    """``flink-agents cluster start|stop|status``: a local standalone Flink cluster.

    Prints the cluster's status as JSON on stdout. ``status`` exits 0 whether the cluster
    runs or not (see ``"running"``); it fails when no cluster was ever started there.
    """
    cluster = _cluster_module()
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
    print(_status_json(status))
    return EXIT_OK


def cmd_submit(args: argparse.Namespace) -> int:
    """``flink-agents submit``: submit a PyFlink job file to the local cluster.

    The job's own output (``flink run``'s) goes to stdout; the job id and duration to stderr.
    """
    job = Path(args.job)
    if not job.is_file():
        raise UsageError(f"job file {args.job!r} does not exist")
    if job.suffix != ".py":
        raise UsageError(f"job file {args.job!r} must be a Python file (.py)")
    cluster = _cluster_module()
    flink_args = list(args.flink_arg)
    if args.parallelism is not None:
        if args.parallelism < 1:
            raise UsageError(f"--parallelism must be >= 1, got {args.parallelism}")
        flink_args += ["-p", str(args.parallelism)]
    job_args = list(args.job_args)
    result = _call(
        cluster.submit,
        str(job),
        workdir=args.cluster or default_cluster_dir(),
        args=job_args,
        detached=args.detached,
        flink_args=flink_args,
    )
    if result.output:
        print(result.output)
    state = "submitted" if args.detached else "finished"
    print(
        f"job {result.job_id or '(id not printed)'} {state} in {result.seconds:.1f}s",
        file=sys.stderr,
    )
    return EXIT_OK


# -- the parser ------------------------------------------------------------------------------


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
    run.add_argument("--output", "-o", required=True, help="JSONL output file")
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

    from flink_agents.sql import cli as sql_cli  # the `sql` command lives in its own module

    sql_cli.add_parser(commands, [common])
    return parser


class _NoTracebackFormatter(logging.Formatter):
    """Log lines without tracebacks (``--debug`` shows them)."""

    def format(self, record: logging.LogRecord) -> str:
        record = logging.makeLogRecord(record.__dict__)
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return super().format(record)


def _configure_logging(*, debug: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    fmt = "%(levelname)s %(name)s: %(message)s"
    handler.setFormatter(logging.Formatter(fmt) if debug else _NoTracebackFormatter(fmt))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO if debug else logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    tail: list[str] = []
    if "--" in argv:  # what follows goes to the job, verbatim (argparse would parse it)
        cut = argv.index("--")
        argv, tail = argv[:cut], argv[cut + 1 :]
    args = parser.parse_args(argv)
    if tail:
        if args.command != "submit":
            parser.error("`--` is only for the job arguments of `submit`")
        args.job_args = [*args.job_args, *tail]
    _configure_logging(debug=args.debug)
    try:
        return int(args.handler(args))
    except UsageError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"flink-agents {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CommandFailure as exc:
        if args.debug:
            traceback.print_exc()
        print(f"flink-agents {args.command}: failed: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print(f"flink-agents {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, no traceback
        if args.debug:
            traceback.print_exc()
        else:
            print(
                f"flink-agents {args.command}: failed: {type(exc).__name__}: {exc} "
                "(run with --debug for the traceback)",
                file=sys.stderr,
            )
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
