"""The Flink side of ``flink-agents sql``: the environment (local MiniCluster or a remote
JobManager), the script run, and the results printed as they come."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import ResultKind, StreamTableEnvironment

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.runtime.flink.sql.session import ScriptStep, remote_environment, sql_session
from flink_agents.sql.result import SqlResult


def _head(step: ScriptStep) -> str:
    first = " ".join(step.statement.text.split())
    return first if len(first) <= 72 else first[:69] + "..."


def step_text(step: ScriptStep, *, detached: bool = False) -> str:
    """How the CLI shows one step: a table for results with content (a bounded SELECT is
    collected here), ``[OK] statement`` for the others, ``[QUEUED]`` / ``[JOB]`` for
    INSERTs."""
    result = step.result
    if result is None:
        return f"[QUEUED] {_head(step)} (submitted after the last statement)"
    if step.job:
        client = result.get_job_client()
        job_id = client.get_job_id() if client is not None else "?"
        return f"[JOB] {job_id} {'submitted' if detached else 'finished'} ({_head(step)})"
    if isinstance(result, SqlResult):
        return result.to_text() if result.columns else f"[OK] {_head(step)}"
    if result.get_result_kind() == ResultKind.SUCCESS_WITH_CONTENT:
        columns = internals.result_columns(result)
        with result.collect() as rows:
            return SqlResult(columns, [tuple(row) for row in rows]).to_text()
    return f"[OK] {_head(step)}"


def make_environment(
    *,
    jobmanager: tuple[str, int] | None = None,
    parallelism: int | None = None,
    config: dict[str, str] | None = None,
) -> Any:
    """The Flink agents environment over a local MiniCluster or a remote JobManager, with a
    table environment."""
    if jobmanager is not None:
        env = remote_environment(*jobmanager)
    else:
        env = StreamExecutionEnvironment.get_execution_environment()
    if parallelism:
        env.set_parallelism(parallelism)
    t_env = StreamTableEnvironment.create(env)
    return AgentsExecutionEnvironment.get_execution_environment(env, t_env, **(config or {}))


def run_command(
    script: str,
    *,
    jobmanager: tuple[str, int] | None = None,
    parallelism: int | None = None,
    config: dict[str, str] | None = None,
    detached: bool = False,
    out: TextIO | None = None,
) -> list[ScriptStep]:
    """Run ``script`` as ``flink-agents sql`` does, printing each step to ``out``.

    Raises:
        SqlError: the first failing statement (nothing submitted then).
    """
    stream = out or sys.stdout
    agents_env = make_environment(jobmanager=jobmanager, parallelism=parallelism, config=config)

    def show(step: ScriptStep) -> None:
        print(step_text(step, detached=detached), file=stream, flush=True)

    return sql_session(agents_env).execute_script(script, on_step=show, wait=not detached)
