"""Runs our statements against the agent catalog; sees Flink's catalogs through a host.

The executor knows nothing of PyFlink: what it needs of Flink (the current catalog and
database, whether a function or model exists, a Python function's serialized form, a
model's options, the table configuration) comes from a :class:`Host`, implemented over a
table environment in :mod:`flink_agents.runtime.flink.sql`.

Output of the statements:

- ``SHOW TOOLS|AGENTS|CONNECTIONS``: one column ``tool name`` (``agent name``,
  ``connection name``), sorted.
- ``DESC``: ``name | value`` rows: ``name``, ``type``, ``function`` / ``connection`` (tools),
  ``model``, ``prompt``, ``tool`` (agents), ``comment``, ``temporary``; ``EXTENDED`` adds
  one ``option <key>`` row per option. Secret options show ``****``.
- ``SHOW CREATE``: one column ``result`` holding the statement (secrets as ``****``).
- Everything else: ``OK``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from flink_agents.errors import CatalogError, ConfigurationError
from flink_agents.sql.catalog import (
    AgentCatalog,
    CatalogAgent,
    CatalogConnection,
    CatalogObject,
    CatalogTool,
    Kind,
    ObjectIdentifier,
    like_pattern,
    quote_identifier,
)
from flink_agents.sql.models import ModelResources, model_resources
from flink_agents.sql.options import (
    API_KEY,
    agent_settings,
    check_connection_options,
    check_tool_options,
    connection_type,
    masked,
)
from flink_agents.sql.result import SqlResult
from flink_agents.sql.statements import (
    AddTool,
    Alter,
    CreateAgent,
    CreateConnection,
    CreateTool,
    Describe,
    Drop,
    Name,
    RemoveTool,
    RenameTo,
    ResetConfig,
    ResetOptions,
    SetConfig,
    SetModel,
    SetOptions,
    SetPrompt,
    Show,
    ShowCreate,
    SqlStatement,
)
from flink_agents.sql.tools import function_tool


class Host(Protocol):
    """What the executor needs of Flink."""

    def current(self) -> tuple[str, str]:
        """The current catalog and database."""

    def resolve_function(self, name: Name) -> str:
        """The function's identifier as stored (``cat.db.f``, or ``f`` for a temporary
        system function); :class:`CatalogError` listing the functions when unknown."""

    def function_language(self, function: str) -> str:
        """``python`` or ``java``: the language of the function's implementation."""

    def python_function(self, function: str) -> bytes:
        """The serialized form of a Python scalar function; :class:`CatalogError` when it
        is not one (a table function...)."""

    def java_function(
        self, function: str, name: str, description: str
    ) -> tuple[str, dict[str, Any]]:
        """A Java scalar function's class and its tool metadata (``description``,
        ``args_schema``); :class:`CatalogError` saying why it cannot be a tool."""

    def execution_mode(self) -> str:
        """``python.execution-mode`` the job will run with (``thread`` or ``process``)."""

    def resolve_model(self, name: Name) -> ObjectIdentifier:
        """The model's identifier; :class:`CatalogError` listing the models when unknown."""

    def model_options(self, model: ObjectIdentifier) -> dict[str, str]:
        """The model's options in Flink's catalog."""

    def set_config(self, key: str | None, value: str | None) -> list[tuple[str, str]]:
        """``SET 'key' = 'value'`` (returns nothing) or ``SET`` (returns the keys set)."""

    def reset_config(self, key: str | None) -> None:
        """``RESET 'key'`` or ``RESET`` (every key set with ``SET``)."""


_COLUMN = {"tool": "tool name", "agent": "agent name", "connection": "connection name"}


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _with(options: Mapping[str, str]) -> list[str]:
    if not options:
        return []
    items = [f"  {sql_string(k)} = {sql_string(v)}" for k, v in masked(options).items()]
    return ["WITH (", ",\n".join(items), ")"]


class StatementExecutor:
    """Runs our statements.

    Args:
        catalog: the agent catalog.
        host: Flink's side (functions, models, configuration).
    """

    def __init__(self, catalog: AgentCatalog, host: Host) -> None:
        self.catalog = catalog
        self.host = host

    def identifier(self, name: Name) -> ObjectIdentifier:
        """``name`` completed with the current catalog and database."""
        return self.catalog.identifier(name.parts)

    def execute(self, statement: SqlStatement) -> SqlResult:
        """Run one of our statements.

        Raises:
            CatalogError: an unknown or existing object, or an object still in use.
            ConfigurationError: a bad option.
        """
        if isinstance(statement, CreateTool):
            return self._create_tool(statement)
        if isinstance(statement, CreateAgent):
            return self._create_agent(statement)
        if isinstance(statement, CreateConnection):
            options = dict(statement.options)
            check_connection_options(options)
            conn = CatalogConnection(options=options, comment=statement.comment)
            self.catalog.create(
                "connection",
                self.identifier(statement.name),
                conn,
                ignore_if_exists=statement.if_not_exists,
                temporary=statement.temporary,
            )
            return SqlResult()
        if isinstance(statement, Drop):
            self.catalog.drop(
                statement.kind,  # type: ignore[arg-type]
                self.identifier(statement.name),
                ignore_if_not_exists=statement.if_exists,
                temporary=True if statement.temporary else None,
            )
            return SqlResult()
        if isinstance(statement, Show):
            return self._show(statement)
        if isinstance(statement, ShowCreate):
            kind: Kind = statement.kind  # type: ignore[assignment]
            ident = self.identifier(statement.name)
            obj = self.catalog.get(kind, ident)
            text = show_create(kind, ident, obj, self.catalog.is_temporary(kind, ident))
            return SqlResult(["result"], [(text,)], raw=True)
        if isinstance(statement, Describe):
            kind = statement.kind  # type: ignore[assignment]
            ident = self.identifier(statement.name)
            obj = self.catalog.get(kind, ident)
            temporary = self.catalog.is_temporary(kind, ident)
            return SqlResult(
                ["name", "value"], describe(ident, obj, temporary, extended=statement.extended)
            )
        if isinstance(statement, Alter):
            return self._alter(statement)
        if isinstance(statement, SetConfig):
            rows = self.host.set_config(statement.key, statement.value)
            if statement.key is None:
                return SqlResult(["key", "value"], rows)
            return SqlResult()
        if isinstance(statement, ResetConfig):
            self.host.reset_config(statement.key)
            return SqlResult()
        raise TypeError(f"not one of our statements: {statement!r}")

    def _require(self, kind: Kind, name: Name) -> ObjectIdentifier:
        """``name``'s identifier; :class:`CatalogError` at the name's position when no such
        object exists (the message lists the objects of that database)."""
        ident = self.identifier(name)
        try:
            self.catalog.get(kind, ident)
        except CatalogError as exc:
            raise CatalogError(exc.message, line=name.line, column=name.column) from None
        return ident

    # -- tools ---------------------------------------------------------------------------------
    def _check_tool(self, tool: CatalogTool, name: str) -> None:
        if tool.function is not None:
            check_tool_options(tool.tool_type, tool.options)
            # The function loads and can be described to a model (a Java one: in thread mode)
            function_tool(self.host, name, tool.function, tool.options.get("description"))
        elif tool.connection is not None:
            conn = self.catalog.get_connection(tool.connection)
            kind = connection_type(conn.options)
            if kind not in ("mcp", API_KEY):
                raise ConfigurationError(
                    f"connection {tool.connection} is of type "
                    f"'{conn.options.get('type', '')}': a tool USING CONNECTION needs an "
                    f"'mcp' connection (the server) or an '{API_KEY}' connection (its key; the "
                    "tool's 'endpoint' names the server)"
                )
            check_tool_options(tool.tool_type, tool.options, kind)

    def _create_tool(self, statement: CreateTool) -> SqlResult:
        ident = self.identifier(statement.name)
        if statement.function is None and statement.connection is None:
            raise CatalogError(
                f"tool {ident} needs USING FUNCTION f (a Python or Java scalar function of "
                "Flink's catalog) or USING CONNECTION c (an mcp or api-key connection)"
            )
        if statement.if_not_exists and self.catalog.exists("tool", ident):
            return SqlResult()
        function = None
        if statement.function is not None:
            function = self.host.resolve_function(statement.function)
        connection = None
        if statement.connection is not None:
            connection = self._require("connection", statement.connection)
        tool = CatalogTool(
            function=function,
            connection=connection,
            options=dict(statement.options),
            comment=statement.comment,
        )
        self._check_tool(tool, ident.name)
        self.catalog.create(
            "tool",
            ident,
            tool,
            ignore_if_exists=statement.if_not_exists,
            temporary=statement.temporary,
        )
        return SqlResult()

    # -- agents --------------------------------------------------------------------------------
    def _check_agent(self, agent: CatalogAgent) -> None:
        agent_settings(agent.options)
        self.model(agent.model)  # resolves the provider options
        names: dict[str, ObjectIdentifier] = {}
        for tool in agent.tools:
            self.catalog.get_tool(tool)
            if tool.name in names and names[tool.name] != tool:
                raise CatalogError(
                    f"tools {names[tool.name]} and {tool} have the same name {tool.name!r}: "
                    "a model tells tools apart by name"
                )
            names[tool.name] = tool

    def model(self, model: ObjectIdentifier) -> ModelResources:
        """The chat model resources of a Flink model (its options checked)."""
        options = self.host.model_options(model)
        connection = None
        if options.get("connection"):
            conn_ident = self.catalog.identifier(options["connection"])
            connection = dict(self.catalog.get_connection(conn_ident).options)
        return model_resources(str(model), options, connection)

    def _create_agent(self, statement: CreateAgent) -> SqlResult:
        ident = self.identifier(statement.name)
        if statement.if_not_exists and self.catalog.exists("agent", ident):
            return SqlResult()
        for name in statement.tools:
            self._require("tool", name)
        tools = tuple(dict.fromkeys(self.identifier(t) for t in statement.tools))
        agent = CatalogAgent(
            model=self.host.resolve_model(statement.model),
            prompt=statement.prompt,
            tools=tools,
            options=dict(statement.options),
            comment=statement.comment,
        )
        self._check_agent(agent)
        self.catalog.create(
            "agent",
            ident,
            agent,
            ignore_if_exists=statement.if_not_exists,
            temporary=statement.temporary,
        )
        return SqlResult()

    # -- show / alter --------------------------------------------------------------------------
    def _show(self, statement: Show) -> SqlResult:
        database = str(statement.database) if statement.database is not None else None
        names = self.catalog.list_objects(statement.kind, database)  # type: ignore[arg-type]
        if statement.like is not None:
            pattern = like_pattern(statement.like)
            names = [n for n in names if bool(pattern.fullmatch(n)) != statement.not_like]
        return SqlResult([_COLUMN[statement.kind]], [(n,) for n in names])

    def _alter(self, statement: Alter) -> SqlResult:
        kind: Kind = statement.kind  # type: ignore[assignment]
        ident = self.identifier(statement.name)
        if statement.if_exists and not self.catalog.exists(kind, ident):
            return SqlResult()
        action = statement.action
        if isinstance(action, RenameTo):
            self.catalog.rename(kind, ident, ".".join(action.new_name.parts))
            return SqlResult()
        obj = self.catalog.get(kind, ident)
        new: CatalogObject
        if isinstance(action, (SetOptions, ResetOptions)):
            options = dict(obj.options)
            if isinstance(action, SetOptions):
                options.update(action.options)
            else:
                for key in action.keys:
                    options.pop(key, None)
            new = obj.copy_with(options=options)
        elif isinstance(obj, CatalogAgent) and isinstance(action, SetModel):
            new = obj.copy_with(model=self.host.resolve_model(action.model))
        elif isinstance(obj, CatalogAgent) and isinstance(action, SetPrompt):
            new = obj.copy_with(prompt=action.prompt)
        elif isinstance(obj, CatalogAgent) and isinstance(action, AddTool):
            tool = self._require("tool", action.tool)
            if tool in obj.tools:
                raise CatalogError(f"agent {ident} already uses tool {tool}")
            new = obj.copy_with(tools=(*obj.tools, tool))
        elif isinstance(obj, CatalogAgent) and isinstance(action, RemoveTool):
            tool = self.identifier(action.tool)
            if tool not in obj.tools:
                uses = ", ".join(str(t) for t in obj.tools) or "none"
                raise CatalogError(f"agent {ident} does not use tool {tool} (its tools: {uses})")
            new = obj.copy_with(tools=tuple(t for t in obj.tools if t != tool))
        else:  # the parser only gives agents the agent actions
            raise TypeError(f"cannot apply {action!r} to a {kind}")
        if isinstance(new, CatalogTool):
            self._check_tool(new, ident.name)
        elif isinstance(new, CatalogAgent):
            self._check_agent(new)
        else:
            check_connection_options(dict(new.options))
        self.catalog.alter(kind, ident, new)
        return SqlResult()


def describe(
    ident: ObjectIdentifier, obj: CatalogObject, temporary: bool, *, extended: bool
) -> list[tuple[str, str]]:
    """``DESC`` rows of an object (secret options masked)."""
    rows: list[tuple[str, str]] = [("name", str(ident))]
    if isinstance(obj, CatalogTool):
        rows.append(("type", obj.tool_type))
        if obj.function is not None:
            rows.append(("function", obj.function))
        if obj.connection is not None:
            rows.append(("connection", str(obj.connection)))
    elif isinstance(obj, CatalogAgent):
        rows.append(("model", str(obj.model)))
        rows.append(("prompt", obj.prompt))
        rows.extend(("tool", str(t)) for t in obj.tools)
    else:
        rows.append(("type", connection_type(obj.options)))
    if obj.comment:
        rows.append(("comment", obj.comment))
    if temporary:
        rows.append(("temporary", "true"))
    if extended:
        rows.extend((f"option {k}", v) for k, v in masked(obj.options).items())
    return rows


def show_create(kind: Kind, ident: ObjectIdentifier, obj: CatalogObject, temporary: bool) -> str:
    """The ``CREATE`` statement of an object (secret options masked)."""
    head = f"CREATE {'TEMPORARY ' if temporary else ''}{kind.upper()} {ident.as_sql()}"
    lines = [head]
    if isinstance(obj, CatalogTool):
        if obj.function is not None:
            parts = obj.function.split(".")
            lines.append("USING FUNCTION " + ".".join(quote_identifier(p) for p in parts))
        if obj.connection is not None:
            lines.append(f"USING CONNECTION {obj.connection.as_sql()}")
    elif isinstance(obj, CatalogAgent):
        lines.append(f"USING MODEL {obj.model.as_sql()}")
        lines.append(f"USING PROMPT {sql_string(obj.prompt)}")
        if obj.tools:
            lines.append("USING TOOLS " + ", ".join(t.as_sql() for t in obj.tools))
    if obj.comment:
        lines.append(f"COMMENT {sql_string(obj.comment)}")
    lines.extend(_with(obj.options))
    return "\n".join(lines)
