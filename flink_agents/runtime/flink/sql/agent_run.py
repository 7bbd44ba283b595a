"""``agent_run(INPUT => TABLE t [PARTITION BY ...], AGENT => AGENT a, COL => DESCRIPTOR(c))``
as a temporary view that the rest of the query reads.

The input table becomes a DataStream (``to_data_stream``: insert-only input), keyed by the
``PARTITION BY`` columns (keyless without), runs through the agent of the catalog agent on
our Flink host (``from_datastream(...).apply(agent).to_datastream(row type)``), and comes
back as a table with the input's columns and types plus ``agent_output`` (``agent_output0``,
``agent_output1``... when the input has that column already). The view is registered under
a fully qualified name, so the query text can refer to it whatever the current database.

The DataStream operators built here are taken back out of the stream environment's list
of transformations: the table planner reaches them through the view, and left in the list
they would run a second time, without a sink, in a later ``env.execute()``.
"""

from __future__ import annotations

import logging
from typing import Any

from pyflink.common.typeinfo import RowTypeInfo, Types
from pyflink.datastream import KeySelector
from pyflink.table import DataTypes, Schema

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.errors import CatalogError, SqlError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.runtime.flink.environment import FlinkAgentBuilder, FlinkExecutionEnvironment
from flink_agents.sql.catalog import AgentCatalog, CatalogAgent, ObjectIdentifier
from flink_agents.sql.executor import StatementExecutor
from flink_agents.sql.options import (
    AgentSettings,
    agent_settings,
    allowed_tools,
    mcp_server_arguments,
)
from flink_agents.sql.providers import AgentProviderContext, agent_provider
from flink_agents.sql.statements import AgentRunCall
from flink_agents.sql.tools import function_tool

log = logging.getLogger("flink_agents.sql")

#: Name of the answer column, and the prefix of its numbered forms.
OUTPUT_COLUMN = "agent_output"


def output_column(columns: list[str]) -> str:
    """``agent_output``, or the first free ``agent_output0``, ``agent_output1``, ..."""
    taken = {c.lower() for c in columns}
    if OUTPUT_COLUMN not in taken:
        return OUTPUT_COLUMN
    n = 0
    while f"{OUTPUT_COLUMN}{n}" in taken:
        n += 1
    return f"{OUTPUT_COLUMN}{n}"


class ColumnsKey(KeySelector):
    """Key of a row: the value of one column, or a tuple of several."""

    def __init__(self, indices: list[int]) -> None:
        self.indices = list(indices)

    def get_key(self, value: Any) -> Any:
        if len(self.indices) == 1:
            return value[self.indices[0]]
        return tuple(value[i] for i in self.indices)


class _ConfiguredEnvironment:
    """The Flink agents environment with the agent's own configuration (agent options and
    ``CONFIG``): compiling the plan reads ``get_config()``; everything else is the
    environment's."""

    def __init__(self, env: FlinkExecutionEnvironment, config: AgentConfiguration) -> None:
        self._env = env
        self._config = config

    def get_config(self) -> AgentConfiguration:
        return self._config

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


class AgentRunTranslator:
    """Builds the views of ``agent_run`` calls.

    Args:
        env: the Flink agents environment (its table environment runs the queries).
        catalog: the agent catalog.
        executor: the statement executor (it resolves models and connections).
        host: Flink's catalogs.
    """

    def __init__(
        self,
        env: FlinkExecutionEnvironment,
        catalog: AgentCatalog,
        executor: StatementExecutor,
        host: Any,
    ) -> None:
        self.env = env
        self.catalog = catalog
        self.executor = executor
        self.host = host
        self._count = 0
        #: The plans of the views built, oldest first (for inspection: ``model_dump_json()``).
        self.plans: list[AgentPlan] = []

    def view(self, call: AgentRunCall) -> str:
        """Register the view of ``call``; returns its identifier as SQL text.

        Raises:
            SqlError: an unknown table, column or agent (with the statement's position), a
                bad option, an updating input.
        """
        try:
            return self._view(call)
        except SqlError as exc:
            if exc.line is None:
                raise type(exc)(exc.message, line=call.line, column=call.column) from None
            raise

    def _view(self, call: AgentRunCall) -> str:
        t_env = self.env.t_env
        table = self.host.table(call.input)
        names, types = internals.table_columns(table)
        column = self._column(names, call.column_name, "COL => DESCRIPTOR")
        keys = [self._column(names, c, "PARTITION BY") for c in call.partition_by]
        agent_ident = self.catalog.identifier(call.agent.parts)
        definition = self.catalog.get_agent(agent_ident)
        settings = agent_settings(definition.options, dict(call.config))
        agent = self._agent(agent_ident, definition, names, column, bool(keys), settings)
        config = self.env.get_config().copy()
        for key, value in settings.config.items():
            config.set_str(key, value)

        # to_data_stream adds a transformation too: the ones added here are removed below
        before = internals.stream_transformations(self.env.env).size()
        try:
            try:
                stream = t_env.to_data_stream(table)
            except Exception as exc:  # noqa: BLE001 - py4j: the planner's TableException
                raise SqlError(
                    f"agent_run cannot read table {call.input}: {str(exc).splitlines()[0]} "
                    "(agent_run takes insert-only input)"
                ) from None
            row_type = stream.get_type()
            row_type = internals.row_type_info(row_type)
            out_name = output_column(names)
            out_type = RowTypeInfo(
                [*row_type.get_field_types(), Types.STRING()], [*names, out_name]
            )
            builder = FlinkAgentBuilder(
                _ConfiguredEnvironment(self.env, config),  # type: ignore[arg-type]
                stream,
                ColumnsKey(keys) if keys else None,
            )
            outputs = builder.apply(agent).to_datastream(out_type)
            self.plans.append(builder.plan)
            schema_builder = Schema.new_builder()
            for name, data_type in zip(names, types, strict=True):
                schema_builder.column(name, data_type)
            schema_builder.column(out_name, DataTypes.STRING())
            result = t_env.from_data_stream(outputs, schema_builder.build())
        finally:
            added = internals.stream_transformations(self.env.env)
            for _ in range(added.size() - before):
                del added[before]  # py4j list: removes the Java element
        self._share_jars()
        self._count += 1
        catalog, database = self.host.current()
        view = ObjectIdentifier(catalog, database, f"_agent_run_{self._count}")
        t_env.create_temporary_view(view.as_sql(), result)
        log.debug(
            "agent_run over %s with agent %s (key: %s) is view %s",
            call.input,
            agent_ident,
            ", ".join(call.partition_by) or "none",
            view,
        )
        return view.as_sql()

    def _share_jars(self) -> None:
        """Put the job's jars (our bridge jar, ``java.jars``) into the table configuration's
        ``pipeline.jars`` too. A table job configures the stream environment from the table
        configuration before it builds the job; once the table environment holds a Python
        function, that replaced the environment's ``pipeline.jars`` and the job failed with
        ``ClassNotFoundException: org.flinkagents.flink.CarriedTimestampOperator``."""
        from pyflink.common import Configuration

        env_conf = internals.environment_config(self.env.env)
        env_jars = Configuration.parse_list_value(env_conf.getString("pipeline.jars", "") or "")
        table_config = self.env.t_env.get_config()
        jars = Configuration.parse_list_value(table_config.get("pipeline.jars", "") or "")
        merged = jars + [j for j in env_jars if j and j not in jars]
        if merged != jars:
            table_config.set("pipeline.jars", ";".join(merged))

    @staticmethod
    def _column(names: list[str], name: str, where: str) -> int:
        if name in names:
            return names.index(name)
        lowered = [n.lower() for n in names]
        if name.lower() in lowered and lowered.count(name.lower()) == 1:
            return lowered.index(name.lower())
        raise SqlError(f"{where}: unknown column {name!r} (columns: {', '.join(names)})")

    def _agent(
        self,
        agent_ident: ObjectIdentifier,
        definition: CatalogAgent,
        columns: list[str],
        column: int,
        partitioned: bool,
        settings: AgentSettings,
    ) -> Agent:
        """The agent of the call, made by the catalog agent's provider."""
        model = self.executor.model(definition.model)
        tools: dict[str, Any] = {}
        servers: dict[str, Any] = {}
        tool_names: list[str] = []
        for ident in definition.tools:
            tool = self.catalog.get_tool(ident)
            if tool.function is not None:
                tools[ident.name] = function_tool(
                    self.host, ident.name, tool.function, tool.options.get("description")
                )
                tool_names.append(ident.name)
                continue
            assert tool.connection is not None
            connection = self.catalog.get_connection(tool.connection)
            from flink_agents.integrations.mcp.mcp import MCPServer

            server = MCPServer(**mcp_server_arguments(connection.options, tool.options))
            names = allowed_tools(tool.options)
            if not names:  # all of the server's tools: ask it now (and fail early)
                try:
                    names = [t.name for t in server.list_tools()]
                finally:
                    server.close()
            servers[f"mcp_{ident.name}"] = server
            tool_names.extend(names)
        duplicates = sorted({n for n in tool_names if tool_names.count(n) > 1})
        if duplicates:
            raise CatalogError(
                f"the tools of agent {agent_ident} offer the model two tools named "
                f"{', '.join(duplicates)}; give them distinct names (or narrow allowed_tools)"
            )
        context = AgentProviderContext(
            identifier=agent_ident,
            agent=definition,
            model=model,
            tools=tools,
            mcp_servers=servers,
            tool_names=tuple(tool_names),
            columns=tuple(columns),
            column=column,
            partitioned=partitioned,
            options=settings.options,
            config=settings.config,
        )
        agent = agent_provider(settings.provider).create_agent(context)
        if not isinstance(agent, Agent):
            raise CatalogError(
                f"agent provider '{settings.provider}' of agent {agent_ident} returned "
                f"{type(agent).__name__}, not an Agent"
            )
        return agent
