"""Building blocks of Flink tests on a local MiniCluster: environments, sources, sinks.

For a job of your own (``run_agent`` builds one for you)::

    env, agents_env = make_env(parallelism=2)          # mode: FLINK_AGENTS_TEST_MODE
    out = (agents_env.from_datastream(source(env, records), key_selector=lambda r: r["id"])
           .apply(MyAgent()).to_datastream())
    assert sorted(collect(out), key=...) == ...

:func:`make_env` makes a fresh stream environment (each job gets a MiniCluster of its own)
and the agents environment over it, in the execution mode under test: ``mode=``, else
``FLINK_AGENTS_TEST_MODE`` (``thread`` or ``process``), else ``thread``. :func:`source`
gives a bounded stream of dicts; note that ``from_collection`` is not rewound on restore:
a job with an injected failure needs a replayable source (``NumberSequenceSource``, a
``FileSource``), as ``run_agent(fail_after=...)`` uses. :func:`exactly_once_sink` writes JSON
lines that a checkpoint commits; :func:`committed_records` reads what was committed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = [
    "MODE_VARIABLE",
    "collect",
    "committed_lines",
    "committed_records",
    "default_mode",
    "exactly_once_sink",
    "local_outputs",
    "make_env",
    "source",
]

#: The environment variable naming the execution mode of Flink tests.
MODE_VARIABLE = "FLINK_AGENTS_TEST_MODE"
_MODES = ("thread", "process")


def default_mode() -> str:
    """The ``python.execution-mode`` under test: ``FLINK_AGENTS_TEST_MODE``, else thread.

    Raises:
        ValueError: the variable holds something else.
    """
    mode = os.environ.get(MODE_VARIABLE) or "thread"
    if mode not in _MODES:
        raise ValueError(f"{MODE_VARIABLE} must be thread or process, got {mode!r}")
    return mode


def make_env(
    parallelism: int = 1,
    *,
    mode: str | None = None,
    flink_config: dict[str, str] | None = None,
    **agents_config: Any,
) -> tuple[Any, Any]:
    """A fresh PyFlink stream environment and the agents environment over it.

    Args:
        parallelism: the job's default parallelism.
        mode: ``thread`` or ``process`` (default: :func:`default_mode`).
        flink_config: Flink configuration of the MiniCluster (``{"key": "value"}``).
        **agents_config: agent configuration (``**{"event-log.enabled": True}``).
    """
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    mode = mode or default_mode()
    if mode not in _MODES:
        raise ValueError(f"mode must be thread or process, got {mode!r}")
    conf = Configuration()
    for key, value in (flink_config or {}).items():
        conf.set_string(key, str(value))
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(parallelism)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": mode, **agents_config}
    )
    return env, agents_env


def source(env: Any, records: list[Any]) -> Any:
    """A bounded stream of ``records`` (JSON values: JSON on the wire, parsed in Python).
    Not rewound after a restore (see the module docstring)."""
    from pyflink.common.typeinfo import Types

    return env.from_collection([json.dumps(r) for r in records], type_info=Types.STRING()).map(
        json.loads, output_type=Types.PICKLED_BYTE_ARRAY()
    )


def collect(stream: Any) -> list[Any]:
    """Run the job and return every record of ``stream`` (small outputs only: collecting
    is slow, ~600 records/s)."""
    with stream.execute_and_collect() as results:
        return list(results)


def exactly_once_sink(stream: Any, out_dir: str | os.PathLike[str]) -> Any:
    """Write ``stream`` as JSON lines to a FileSink whose files a checkpoint commits (with
    checkpointing on, committed files hold each record exactly once)."""
    from pyflink.common.serialization import Encoder
    from pyflink.common.typeinfo import Types
    from pyflink.datastream.connectors.file_system import FileSink, RollingPolicy

    return stream.map(json.dumps, output_type=Types.STRING()).sink_to(
        FileSink.for_row_format(str(out_dir), Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )


def committed_lines(
    out_dir: str | os.PathLike[str], *, skip_unreadable: bool = False
) -> list[list[str]]:
    """The lines of each committed part file of a FileSink (in-progress and pending files
    start with a dot and are left out); ``skip_unreadable``: leave out a file that cannot
    be read (a read while the job runs)."""
    found = []
    for root, _, files in os.walk(out_dir):
        for name in sorted(files):
            if name.startswith("."):
                continue
            try:
                text = Path(root, name).read_text(encoding="utf-8")
            except OSError:
                if not skip_unreadable:
                    raise
                continue
            found.append([line.strip() for line in text.splitlines() if line.strip()])
    return found


def committed_records(out_dir: str | os.PathLike[str]) -> list[Any]:
    """The JSON records of a FileSink's committed part files (:func:`exactly_once_sink`)."""
    return [json.loads(line) for part in committed_lines(out_dir) for line in part]


def local_outputs(agent: Any, records: list[Any], key: str | None = None) -> list[Any]:
    """What the local environment outputs for ``agent`` on ``records`` (values only, in
    output order): the reference a Flink job's outputs are compared with.

    Args:
        agent: the agent.
        records: the inputs (dicts when ``key`` is given).
        key: the field holding each record's key (None: each record is its own key).
    """
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    local = AgentsExecutionEnvironment.get_execution_environment()
    items = [{"key": r[key], "value": r} for r in records] if key else list(records)
    out = local.from_list(items).apply(agent).to_list()
    local.execute()
    return [next(iter(o.values())) for o in out]
