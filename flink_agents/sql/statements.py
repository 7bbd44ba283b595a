"""Our statements as objects: what the parser gives and the executor runs.

Each statement knows where it starts (``line``, ``column``); names know where they stand,
so errors about them (an unknown tool, model, ...) point at the name in the script.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flink_agents.sql.lexer import Statement


@dataclass(frozen=True)
class Name:
    """An identifier as written: 1 to 3 parts, and where it stands."""

    parts: tuple[str, ...]
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        return ".".join(self.parts)


Options = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SqlStatement:
    """Base of our statements: where the statement starts."""

    line: int
    column: int


@dataclass(frozen=True)
class CreateTool(SqlStatement):
    """``CREATE [TEMPORARY] TOOL [IF NOT EXISTS] name [USING FUNCTION f | USING CONNECTION c]
    [COMMENT '...'] [WITH (...)]``."""

    name: Name
    temporary: bool = False
    if_not_exists: bool = False
    function: Name | None = None
    connection: Name | None = None
    comment: str | None = None
    options: Options = ()


@dataclass(frozen=True)
class CreateAgent(SqlStatement):
    """``CREATE [TEMPORARY] AGENT [IF NOT EXISTS] name USING MODEL m USING PROMPT '...'
    [USING TOOLS t1, t2] [COMMENT '...'] [WITH (...)]``."""

    name: Name
    model: Name
    prompt: str
    tools: tuple[Name, ...] = ()
    temporary: bool = False
    if_not_exists: bool = False
    comment: str | None = None
    options: Options = ()


@dataclass(frozen=True)
class CreateConnection(SqlStatement):
    """``CREATE [TEMPORARY] CONNECTION [IF NOT EXISTS] name [COMMENT '...'] WITH (...)``."""

    name: Name
    temporary: bool = False
    if_not_exists: bool = False
    comment: str | None = None
    options: Options = ()


@dataclass(frozen=True)
class Describe(SqlStatement):
    """``{DESC | DESCRIBE} TOOL|AGENT|CONNECTION [EXTENDED] name``."""

    kind: str
    name: Name
    extended: bool = False


@dataclass(frozen=True)
class Show(SqlStatement):
    """``SHOW TOOLS|AGENTS|CONNECTIONS [(FROM | IN) [catalog.]database] [[NOT] LIKE 'p']``."""

    kind: str
    database: Name | None = None
    like: str | None = None
    not_like: bool = False


@dataclass(frozen=True)
class ShowCreate(SqlStatement):
    """``SHOW CREATE TOOL|AGENT|CONNECTION name``."""

    kind: str
    name: Name


@dataclass(frozen=True)
class Drop(SqlStatement):
    """``DROP [TEMPORARY] TOOL|AGENT|CONNECTION [IF EXISTS] name``."""

    kind: str
    name: Name
    if_exists: bool = False
    temporary: bool = False


@dataclass(frozen=True)
class AlterAction:
    """Base of what an ``ALTER`` changes."""


@dataclass(frozen=True)
class RenameTo(AlterAction):
    """``RENAME TO new_name``."""

    new_name: Name


@dataclass(frozen=True)
class SetOptions(AlterAction):
    """``SET ('k' = 'v', ...)``."""

    options: Options


@dataclass(frozen=True)
class ResetOptions(AlterAction):
    """``RESET ('k', ...)``."""

    keys: tuple[str, ...]


@dataclass(frozen=True)
class SetModel(AlterAction):
    """``SET MODEL m`` (agents)."""

    model: Name


@dataclass(frozen=True)
class SetPrompt(AlterAction):
    """``SET PROMPT '...'`` (agents)."""

    prompt: str


@dataclass(frozen=True)
class AddTool(AlterAction):
    """``ADD TOOL t`` (agents)."""

    tool: Name


@dataclass(frozen=True)
class RemoveTool(AlterAction):
    """``REMOVE TOOL t`` (agents)."""

    tool: Name


@dataclass(frozen=True)
class Alter(SqlStatement):
    """``ALTER TOOL|AGENT|CONNECTION [IF EXISTS] name <action>``."""

    kind: str
    name: Name
    action: AlterAction
    if_exists: bool = False


@dataclass(frozen=True)
class SetConfig(SqlStatement):
    """``SET`` (list the table configuration) or ``SET 'key' = 'value'``."""

    key: str | None = None
    value: str | None = None


@dataclass(frozen=True)
class ResetConfig(SqlStatement):
    """``RESET`` (all keys set with SET) or ``RESET 'key'``."""

    key: str | None = None


@dataclass(frozen=True)
class CreateModel(SqlStatement):
    """``CREATE [TEMPORARY] MODEL [IF NOT EXISTS] name [INPUT (...)] [OUTPUT (...)]
    [COMMENT '...'] WITH (...)``, run by this package where Flink has no ``CREATE MODEL``
    (Flink 1.20 and 2.0; see :mod:`flink_agents.sql.model_catalog`).

    Attributes:
        input_schema: the ``INPUT (...)`` column list as written (kept, not used).
        output_schema: the ``OUTPUT (...)`` column list as written (kept, not used).
    """

    name: Name
    temporary: bool = False
    if_not_exists: bool = False
    input_schema: str | None = None
    output_schema: str | None = None
    comment: str | None = None
    options: Options = ()


@dataclass(frozen=True)
class ModelStatement(SqlStatement):
    """``DROP [TEMPORARY] MODEL [IF EXISTS] name``, ``SHOW MODELS``, ``SHOW CREATE MODEL
    name`` or ``DESC[RIBE] MODEL name``, run by this package where Flink has no models.

    Attributes:
        action: ``drop``, ``show``, ``show-create`` or ``describe``.
    """

    action: str
    name: Name | None = None
    if_exists: bool = False
    temporary: bool = False


@dataclass(frozen=True)
class AgentRunCall:
    """One ``agent_run(...)`` call inside a statement.

    Attributes:
        start: offset in the statement text where the call (or its ``TABLE(...)``
            wrapper) starts.
        end: offset just after it.
        line: where the call starts in the script.
        column: where the call starts in the script.
        input: the input table or view.
        partition_by: the key columns (empty: keyless).
        agent: the catalog agent.
        column_name: the input column the agent answers (``COL`` / ``INPUT_COL``).
        config: ``CONFIG`` entries, in order.
    """

    start: int
    end: int
    line: int
    column: int
    input: Name
    agent: Name
    column_name: str
    partition_by: tuple[str, ...] = ()
    config: Options = ()


@dataclass(frozen=True)
class ParsedStatement:
    """A statement of a script, parsed.

    Attributes:
        statement: the statement text and tokens.
        ours: our statement, or None for a statement Flink runs.
        agent_runs: the ``agent_run`` calls in a statement Flink runs.
    """

    statement: Statement
    ours: SqlStatement | None = None
    agent_runs: tuple[AgentRunCall, ...] = field(default_factory=tuple)
