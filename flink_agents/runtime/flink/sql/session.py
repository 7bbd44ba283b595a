"""The statement layer in front of the table environment.

``execute_sql(statement)`` runs our statements (``CREATE TOOL``, ``CREATE AGENT``, ...,
``SET``, ``RESET``) with :class:`~flink_agents.sql.executor.StatementExecutor` and passes
every other statement to ``t_env.execute_sql``, after replacing each ``agent_run(...)`` call
with the view :class:`~flink_agents.runtime.flink.sql.agent_run.AgentRunTranslator` builds.
``sql_query(query)`` does the same for a query and returns its ``Table``.

``execute_script(script)`` runs a whole script as Flink's SQL client does, with one
guarantee more: a script stops at the first failing statement *before submitting any job*.
The whole script is parsed first (a syntax error anywhere stops it before anything runs);
statements then run in order, except INSERTs: each is checked where it stands (planned
into a statement set, so an unknown table or column fails there) and all are submitted
together, as one job, after the last statement succeeded. This matches Flink's own default
(``table.dml-sync`` false: an INSERT does not wait, so later statements cannot rely on its
result). With ``SET 'table.dml-sync' = 'true'`` each INSERT runs where it stands and is
waited for. ``BEGIN STATEMENT SET; ... END;`` and ``EXECUTE STATEMENT SET BEGIN ... END``
group INSERTs the same way. SELECT and SHOW results are returned (the CLI prints them)
as they come.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from flink_agents.errors import FlinkAgentsError, SqlError
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.runtime.flink.environment import FlinkExecutionEnvironment
from flink_agents.runtime.flink.sql.agent_run import AgentRunTranslator
from flink_agents.runtime.flink.sql.host import FlinkHost
from flink_agents.sql.catalog import AgentCatalog
from flink_agents.sql.executor import StatementExecutor
from flink_agents.sql.lexer import Statement, Token, TokenKind, split_statements
from flink_agents.sql.model_catalog import ml_predict_error
from flink_agents.sql.parser import find_agent_runs, parse_model_statement, parse_script
from flink_agents.sql.parser import parse_statement as parse_ours
from flink_agents.sql.result import SqlResult
from flink_agents.sql.statements import CreateModel, ModelStatement, ParsedStatement, SqlStatement

log = logging.getLogger("flink_agents.sql")

#: Agents configuration key: keep the agent catalog in this directory (default: memory).
CATALOG_DIR = "sql.catalog-dir"


@dataclass(frozen=True)
class ScriptStep:
    """What one statement of a script gave.

    Attributes:
        statement: the statement.
        result: its result (an :class:`SqlResult` or Flink's ``TableResult``), or None for
            an INSERT queued for the job submitted at the end.
        job: whether ``result`` is the ``TableResult`` of an INSERT job.
    """

    statement: Statement
    result: Any
    job: bool = False


def flink_error(exc: Exception, limit: int = 600) -> str:
    """A Flink (py4j) error on one line: its first line and, when there is a chain of
    causes, the root cause (where a failing job's Python exception is); no Java stack."""
    lines = [line.strip() for line in str(exc).strip().splitlines()]
    lines = [line for line in lines if line and not line.startswith(("at ", "..."))]
    if not lines:
        return type(exc).__name__
    text = lines[0]
    causes = [line.removeprefix("Caused by: ") for line in lines if line.startswith("Caused by:")]
    if causes and causes[-1] not in text:
        text += f" (root cause: {causes[-1]})"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _words(statement: Statement, count: int) -> list[str]:
    return [t.value.upper() for t in statement.tokens[:count] if t.kind is TokenKind.WORD]


class SqlSession:
    """SQL over a Flink agents environment: our statements, the agent catalog, agent_run.

    Args:
        env: the Flink agents environment (made with ``get_execution_environment(env,
            t_env)``); its table environment runs Flink's statements. The agents config key
            ``sql.catalog-dir`` keeps the agent catalog in a directory.
    """

    def __init__(self, env: FlinkExecutionEnvironment) -> None:
        self.env = env
        self.host = FlinkHost(env.t_env, execution_mode=env.execution_mode)
        self._add_jars()
        directory = env.get_config().get(CATALOG_DIR)
        self.catalog = AgentCatalog(directory or None, defaults=self.host.current)
        self.executor = StatementExecutor(self.catalog, self.host)
        self.translator = AgentRunTranslator(env, self.catalog, self.executor, self.host)

    def _add_jars(self) -> None:
        """``ADD JAR`` the job's jars (the bridge jar, ``java.jars``): Flink's SQL then sees
        their classes (``CREATE FUNCTION f AS 'org.flinkagents.examples.ConvertToCelsius'``,
        a Java function tool's bridge class) and ships them with SQL jobs."""
        from flink_agents.runtime.java import job_jars

        for jar in job_jars(self.env.get_config()):
            quoted = jar.replace("'", "''")
            self.env.t_env.execute_sql(f"ADD JAR '{quoted}'")

    @property
    def t_env(self) -> Any:
        """The table environment."""
        return self.env.t_env

    # -- single statements ---------------------------------------------------------------------
    def execute_sql(self, statement: str) -> Any:
        """Run one statement: ours, or Flink's with its ``agent_run`` calls replaced.

        Returns:
            An :class:`~flink_agents.sql.result.SqlResult` for our statements, Flink's
            ``TableResult`` for the others (an INSERT's job is submitted, not waited for).

        Raises:
            SqlParseError: one of our statements (or an ``agent_run`` call) does not parse.
            SqlError: an unknown object, a bad ``agent_run`` argument...
            ConfigurationError: a bad option.
        """
        parsed = self._parse_one(statement)
        if parsed.ours is not None:
            return self._execute_ours(parsed.ours)
        return self.t_env.execute_sql(self.rewrite(parsed))

    def sql_query(self, query: str) -> Any:
        """The ``Table`` of a query (``agent_run`` calls replaced by their views)."""
        parsed = self._parse_one(query)
        if parsed.ours is not None:
            raise SqlError(
                "sql_query takes a query; run statements such as "
                f"{_words(parsed.statement, 2)[0]} with execute_sql",
                line=parsed.statement.line,
                column=parsed.statement.column,
            )
        return self.t_env.sql_query(self.rewrite(parsed))

    def _parse_one(self, text: str) -> ParsedStatement:
        statements = split_statements(text)
        if len(statements) != 1:
            raise SqlError(
                f"expected one statement, got {len(statements)}; use a script "
                "(flink-agents sql -f) for several"
            )
        statement = statements[0]
        ours = parse_ours(statement)
        runs = () if ours is not None else tuple(find_agent_runs(statement))
        return self._with_models(ParsedStatement(statement, ours, runs))

    def _with_models(self, parsed: ParsedStatement) -> ParsedStatement:
        """Where Flink's SQL has no models (1.20, 2.0): a model statement made ours; a
        statement calling ``ML_PREDICT`` refused with what to use instead."""
        models = self.host.own_models
        if models is None or parsed.ours is not None:
            return parsed
        model = parse_model_statement(parsed.statement)
        if model is not None:
            return replace(parsed, ours=model, agent_runs=())
        error = ml_predict_error(parsed.statement, models.flink_version)
        if error is not None:
            raise error
        return parsed

    def _execute_ours(self, ours: SqlStatement) -> SqlResult:
        if isinstance(ours, CreateModel | ModelStatement):
            assert self.host.own_models is not None  # made ours only then
            return self.host.own_models.execute(ours)
        return self.executor.execute(ours)

    def rewrite(self, parsed: ParsedStatement) -> str:
        """The statement's text with each ``agent_run(...)`` replaced by its view."""
        text = parsed.statement.text
        views = [self.translator.view(call) for call in parsed.agent_runs]
        for call, view in reversed(list(zip(parsed.agent_runs, views, strict=True))):
            text = text[: call.start] + view + text[call.end :]
        return text

    # -- scripts -------------------------------------------------------------------------------
    def execute_script(
        self,
        script: str,
        *,
        on_step: Callable[[ScriptStep], None] | None = None,
        wait: bool = True,
    ) -> list[ScriptStep]:
        """Run a script (see the module docstring for the order of things).

        Args:
            script: statements separated by ``;``.
            on_step: called with each statement's result as it comes (the CLI prints it).
            wait: wait for the INSERT job(s) to finish (a local MiniCluster job must be
                waited for, or it ends with this process).

        Returns:
            The steps, ending with one for the submitted INSERT job, if any (its statement
            is the first queued INSERT, its result the job's ``TableResult``).

        Raises:
            SqlError: the first failing statement (its line and column named); no INSERT job
                was submitted then.
        """
        parsed = [self._with_models(item) for item in parse_script(script)]
        steps: list[ScriptStep] = []
        pending = self.t_env.create_statement_set()
        queued: list[Statement] = []
        group: list[ParsedStatement] | None = None  # inside BEGIN STATEMENT SET; ... END;

        def emit(step: ScriptStep) -> None:
            steps.append(step)
            if on_step is not None:
                on_step(step)

        for item in parsed:
            statement = item.statement
            words = _words(statement, 3)
            try:
                if item.ours is not None:
                    if group is not None:
                        raise SqlError("a statement set holds INSERT statements only")
                    emit(ScriptStep(statement, self._execute_ours(item.ours)))
                elif words == ["BEGIN", "STATEMENT", "SET"]:
                    group = []
                    emit(ScriptStep(statement, SqlResult()))
                elif words[:1] == ["END"] and len(statement.tokens) == 2 and group is not None:
                    inserts, group = group, None
                    self._inserts(inserts, pending, queued, emit, wait)
                elif group is not None:
                    if words[:1] != ["INSERT"]:
                        raise SqlError("a statement set holds INSERT statements only")
                    group.append(item)
                elif words[:1] == ["INSERT"]:
                    self._inserts([item], pending, queued, emit, wait)
                elif words == ["EXECUTE", "STATEMENT", "SET"]:
                    self._inserts(self._block(statement), pending, queued, emit, wait)
                else:
                    emit(ScriptStep(statement, self.t_env.execute_sql(self.rewrite(item))))
            except SqlError as exc:
                if exc.line is None:
                    raise type(exc)(
                        exc.message, line=statement.line, column=statement.column
                    ) from exc
                raise
            except FlinkAgentsError as exc:
                raise SqlError(str(exc), line=statement.line, column=statement.column) from exc
            except Exception as exc:
                raise SqlError(
                    f"Flink rejected the statement: {flink_error(exc)}",
                    line=statement.line,
                    column=statement.column,
                ) from exc
        if group is not None:
            raise SqlError("BEGIN STATEMENT SET without END", line=None)
        if queued:
            first = queued[0]
            try:
                result = pending.execute()
                if wait:
                    result.wait()
            except Exception as exc:
                raise SqlError(
                    f"the INSERT job failed: {flink_error(exc)}",
                    line=first.line,
                    column=first.column,
                ) from exc
            emit(ScriptStep(first, result, job=True))
        return steps

    def _dml_sync(self) -> bool:
        return (self.host.config_value("table.dml-sync") or "false").lower() == "true"

    def _inserts(
        self,
        inserts: list[ParsedStatement],
        pending: Any,
        queued: list[Statement],
        emit: Callable[[ScriptStep], None],
        wait: bool,
    ) -> None:
        """Queue INSERTs (checked now), or run them now under ``table.dml-sync``."""
        if self._dml_sync():
            now = self.t_env.create_statement_set()
            for item in inserts:
                now.add_insert_sql(self.rewrite(item))
            result = now.execute()
            if wait:
                result.wait()
            emit(ScriptStep(inserts[0].statement, result, job=True))
            return
        for item in inserts:
            pending.add_insert_sql(self.rewrite(item))
            queued.append(item.statement)
            emit(ScriptStep(item.statement, None))

    def _block(self, statement: Statement) -> list[ParsedStatement]:
        """The INSERTs of ``EXECUTE STATEMENT SET BEGIN ...; ...; END``."""
        tokens = statement.tokens
        begin = next(i for i, t in enumerate(tokens) if t.is_word("BEGIN"))
        end = max(i for i, t in enumerate(tokens) if t.is_word("END"))
        after_begin: Token = tokens[begin + 1]
        start = after_begin.start - statement.offset
        stop = tokens[end].start - statement.offset
        inner = statement.text[start:stop]
        parsed = []
        for inner_statement in split_statements(
            inner, line=after_begin.line, column=after_begin.column
        ):
            if _words(inner_statement, 1) != ["INSERT"]:
                raise SqlError(
                    "a statement set holds INSERT statements only",
                    line=inner_statement.line,
                    column=inner_statement.column,
                )
            runs = tuple(find_agent_runs(inner_statement))
            parsed.append(ParsedStatement(inner_statement, None, runs))
        return parsed


def sql_session(env: FlinkExecutionEnvironment) -> SqlSession:
    """The SQL session of ``env`` (made on first use, then kept with it)."""
    session = env.__dict__.get("_sql_session")
    if session is None:
        session = env.__dict__["_sql_session"] = SqlSession(env)
    return session


def remote_environment(host: str, port: int) -> Any:
    """A PyFlink ``StreamExecutionEnvironment`` that submits to the JobManager at
    ``host:port`` (``createRemoteEnvironment`` over py4j; ``execution.target=remote`` set
    from Python does not reach the cluster)."""
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.java_gateway import get_gateway

    gateway = get_gateway()
    j_env_class = gateway.jvm.org.apache.flink.streaming.api.environment.StreamExecutionEnvironment
    j_env = j_env_class.createRemoteEnvironment(
        host,
        int(port),
        internals.java_configuration(Configuration()),
        gateway.new_array(gateway.jvm.String, 0),
    )
    return StreamExecutionEnvironment(j_env)
