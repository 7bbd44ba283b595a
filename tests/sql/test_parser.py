"""The parser: every statement form, agent_run calls, scripts, and errors with positions."""

from __future__ import annotations

import pytest

from flink_agents.errors import SqlParseError
from flink_agents.sql.lexer import split_statements, tokenize
from flink_agents.sql.parser import find_agent_runs, parse_script, parse_statement
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
)


def col(text: str, fragment: str | None) -> int:
    """The column (1-based) of ``fragment`` in one-line ``text`` (None: just past the end)."""
    return len(text) + 1 if fragment is None else text.index(fragment) + 1


def parts(name: Name | None) -> tuple[str, ...] | None:
    return None if name is None else name.parts


def error(text: str) -> SqlParseError:
    with pytest.raises(SqlParseError) as info:
        parse_statement(text)
    return info.value


# -- tools -----------------------------------------------------------------------------------


def test_create_tool_every_clause() -> None:
    s = parse_statement(
        "create temporary tool if not exists cat.db.weather using function db.get_weather "
        "comment 'it''s the weather' "
        "with ('description' = 'Weather of a city', 'type' = 'function')"
    )
    assert isinstance(s, CreateTool)
    assert parts(s.name) == ("cat", "db", "weather")
    assert s.temporary and s.if_not_exists
    assert parts(s.function) == ("db", "get_weather") and s.connection is None
    assert s.comment == "it's the weather"
    assert s.options == (("description", "Weather of a city"), ("type", "function"))
    assert (s.line, s.column) == (1, 1)


def test_create_tool_using_connection_and_minimal_forms() -> None:
    s = parse_statement(
        "CREATE TOOL calc USING CONNECTION `my conn` WITH ('type'='mcp', 'allowed_tools'='a,b')"
    )
    assert isinstance(s, CreateTool)
    assert parts(s.connection) == ("my conn",) and s.function is None
    assert not s.temporary and not s.if_not_exists
    bare = parse_statement("CREATE TOOL t USING FUNCTION f")
    assert isinstance(bare, CreateTool) and bare.options == () and bare.comment is None


def test_describe_show_drop_alter_tool() -> None:
    d = parse_statement("DESCRIBE TOOL EXTENDED db.t")
    assert d == Describe(1, 1, "tool", Name(("db", "t"), 1, 24), True)
    assert parse_statement("desc tool t") == Describe(1, 1, "tool", Name(("t",), 1, 11), False)
    assert col("DESCRIBE TOOL EXTENDED db.t", "db.t") == 24
    assert parse_statement("SHOW TOOLS") == Show(1, 1, "tool")
    s = parse_statement("SHOW TOOLS FROM cat.db LIKE 'w%'")
    assert isinstance(s, Show) and parts(s.database) == ("cat", "db") and s.like == "w%"
    s = parse_statement("SHOW TOOLS IN db NOT LIKE '_x'")
    assert isinstance(s, Show) and s.not_like and s.like == "_x" and parts(s.database) == ("db",)
    c = parse_statement("SHOW CREATE TOOL t")
    assert isinstance(c, ShowCreate) and c.kind == "tool" and parts(c.name) == ("t",)
    d2 = parse_statement("DROP TOOL IF EXISTS t")
    assert isinstance(d2, Drop) and d2.if_exists and not d2.temporary
    d3 = parse_statement("DROP TEMPORARY TOOL t")
    assert isinstance(d3, Drop) and d3.temporary and not d3.if_exists
    r = parse_statement("ALTER TOOL IF EXISTS t RENAME TO t2")
    assert isinstance(r, Alter) and r.if_exists and r.action == RenameTo(Name(("t2",), 1, 34))
    a = parse_statement("ALTER TOOL t SET ('description' = 'new')")
    assert isinstance(a, Alter) and a.action == SetOptions((("description", "new"),))
    a = parse_statement("ALTER TOOL t RESET ('description', 'type')")
    assert isinstance(a, Alter) and a.action == ResetOptions(("description", "type"))


# -- agents ----------------------------------------------------------------------------------


def test_create_agent_every_clause() -> None:
    s = parse_statement(
        "CREATE TEMPORARY AGENT IF NOT EXISTS helper\n"
        "  USING MODEL cat.db.gpt\n"
        "  USING PROMPT 'You help.'\n"
        "  USING TOOLS weather, db.calc\n"
        "  COMMENT 'an agent'\n"
        "  WITH ('max-iterations' = '5')"
    )
    assert isinstance(s, CreateAgent)
    assert parts(s.model) == ("cat", "db", "gpt") and s.prompt == "You help."
    assert [t.parts for t in s.tools] == [("weather",), ("db", "calc")]
    assert (s.tools[1].line, s.tools[1].column) == (4, 24)
    assert s.temporary and s.if_not_exists and s.comment == "an agent"
    assert s.options == (("max-iterations", "5"),)
    minimal = parse_statement("create agent a using model m using prompt 'p'")
    assert isinstance(minimal, CreateAgent) and minimal.tools == () and minimal.options == ()


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("ALTER AGENT a SET MODEL m2", SetModel(Name(("m2",), 1, 25))),
        ("ALTER AGENT a SET PROMPT 'new'", SetPrompt("new")),
        ("ALTER AGENT a ADD TOOL t", AddTool(Name(("t",), 1, 24))),
        ("ALTER AGENT a REMOVE TOOL db.t", RemoveTool(Name(("db", "t"), 1, 27))),
        ("ALTER AGENT a SET ('max-iterations' = '3')", SetOptions((("max-iterations", "3"),))),
        ("ALTER AGENT a RESET ('max-iterations')", ResetOptions(("max-iterations",))),
        ("ALTER AGENT a RENAME TO b", RenameTo(Name(("b",), 1, 25))),
    ],
)
def test_alter_agent_actions(text: str, action: object) -> None:
    s = parse_statement(text)
    assert isinstance(s, Alter) and s.kind == "agent" and s.action == action


def test_agent_describe_show_drop() -> None:
    assert parse_statement("DESC AGENT a") == Describe(1, 1, "agent", Name(("a",), 1, 12))
    assert parse_statement("SHOW AGENTS") == Show(1, 1, "agent")
    s = parse_statement("SHOW CREATE AGENT db.a")
    assert isinstance(s, ShowCreate) and s.kind == "agent"
    d = parse_statement("DROP AGENT IF EXISTS a")
    assert isinstance(d, Drop) and d.kind == "agent" and d.if_exists


# -- connections, SET / RESET ----------------------------------------------------------------


def test_connection_statements() -> None:
    s = parse_statement(
        "CREATE CONNECTION IF NOT EXISTS mcp COMMENT 'tools' "
        "WITH ('type' = 'mcp', 'endpoint' = 'http://h/mcp', 'api-key' = 'k')"
    )
    assert isinstance(s, CreateConnection) and s.if_not_exists and s.comment == "tools"
    assert dict(s.options)["api-key"] == "k"
    assert parse_statement("SHOW CONNECTIONS") == Show(1, 1, "connection")
    assert isinstance(parse_statement("DESC CONNECTION EXTENDED c"), Describe)
    assert isinstance(parse_statement("SHOW CREATE CONNECTION c"), ShowCreate)
    assert isinstance(parse_statement("DROP CONNECTION c"), Drop)
    alter = parse_statement("ALTER CONNECTION c SET ('endpoint' = 'x')")
    assert isinstance(alter, Alter) and alter.kind == "connection"


def test_set_and_reset() -> None:
    assert parse_statement("SET") == SetConfig(1, 1)
    assert parse_statement("SET 'table.dml-sync' = 'true'") == SetConfig(
        1, 1, "table.dml-sync", "true"
    )
    assert parse_statement("RESET") == ResetConfig(1, 1)
    assert parse_statement("RESET 'table.dml-sync'") == ResetConfig(1, 1, "table.dml-sync")


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM t",
        "CREATE TABLE t (a INT) WITH ('connector' = 'datagen')",
        "CREATE TEMPORARY FUNCTION f AS 'm.f' LANGUAGE PYTHON",
        "CREATE MODEL m WITH ('provider' = 'openai')",
        "DROP TABLE t",
        "SHOW TABLES",
        "SHOW CREATE TABLE t",
        "DESC t",
        "ALTER TABLE t RENAME TO u",
        "INSERT INTO s SELECT * FROM t",
        "DESC agent",  # Flink's table named agent
        "DESCRIBE tool",
    ],
)
def test_flink_statements_are_not_ours(text: str) -> None:
    assert parse_statement(text) is None


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "at", "expected", "found"),
    [
        ("CREATE TOOL t USING FUNCTON f", "FUNCTON", "FUNCTION or CONNECTION", "'FUNCTON'"),
        ("CREATE AGENT a USING MODEL m", None, "USING", "the end of the statement"),
        ("CREATE AGENT a USING MODEL m USING PROMPT p", "p", "the prompt text", "'p'"),
        ("CREATE TOOL t WITH ('a' = 'b' 'c' = 'd')", "'c'", "','", "between options 'a' and 'c'"),
        ("CREATE TOOL t WITH ('a' 'b')", "'b'", "'='", "string 'b'"),
        ("CREATE TOOL t WITH (a = 'b')", "a =", "an option key", "'a'"),
        ("DESC TOOL EXTENDED", None, "the tool name", "the end of the statement"),
        ("ALTER TOOL t SET MODEL m", "MODEL", "'('", "'MODEL'"),
        ("ALTER AGENT a DROP TOOL t", "DROP", "SET MODEL, SET PROMPT", "'DROP'"),
        ("SHOW CREATE AGENT a b", "b", "the end of the statement", "'b'"),
        ("SHOW TOOLS FROM a.b.c", ".c", "at most 2 name parts", "'.'"),
        ("CREATE TOOL a.b.c.d USING FUNCTION f", ".d", "at most 3 name parts", "'.'"),
        ("CREATE TOOL with USING FUNCTION f", "with", "the tool name", "'with'"),
        ("SET 'k'", None, "'='", "the end of the statement"),
    ],
)
def test_syntax_errors_name_line_column_and_expected(
    text: str, at: str | None, expected: str, found: str
) -> None:
    err = error(text)
    column = col(text, at)
    assert (err.line, err.column) == (1, column), str(err)
    assert err.expected is not None and expected in err.expected
    assert str(err).startswith(f"line 1, column {column}: expected ")
    assert found in str(err)


def test_syntax_error_on_a_later_line() -> None:
    err = error("CREATE AGENT a\n  USING MODEL m\n  USING PROMPT 'p'\n  USING TOOLS")
    assert (err.line, err.column) == (4, 14)
    assert "expected a tool name" in str(err)


def test_duplicate_option_is_an_error() -> None:
    err = error("CREATE CONNECTION c WITH ('type' = 'mcp', 'type' = 'x')")
    text = "CREATE CONNECTION c WITH ('type' = 'mcp', 'type' = 'x')"
    assert "option 'type' is given twice" in str(err)
    assert (err.line, err.column) == (1, text.rindex("'type'") + 1)


def test_unterminated_string_and_comment() -> None:
    with pytest.raises(SqlParseError, match=r"line 2, column 27: unterminated string"):
        split_statements("SELECT 1;\nCREATE TOOL t WITH ('a' = 'b)")
    with pytest.raises(SqlParseError, match=r"line 1, column 10: unterminated comment"):
        tokenize("SELECT 1 /* never closed")


# -- agent_run -------------------------------------------------------------------------------


def test_agent_run_named_arguments_and_span() -> None:
    text = (
        "INSERT INTO sink SELECT * FROM agent_run(\n"
        "  INPUT => TABLE db.questions PARTITION BY user_id, region,\n"
        "  AGENT => AGENT helper,\n"
        "  COL => DESCRIPTOR(question),\n"
        "  CONFIG => MAP['max-iterations', '5', 'memory-turns', '2']) AS r"
    )
    (call,) = find_agent_runs(text)
    assert text[call.start : call.end].startswith("agent_run(")
    assert text[call.start : call.end].endswith("'2'])")
    assert parts(call.input) == ("db", "questions")
    assert call.partition_by == ("user_id", "region")
    assert parts(call.agent) == ("helper",) and call.column_name == "question"
    assert call.config == (("max-iterations", "5"), ("memory-turns", "2"))
    assert (call.line, call.column) == (1, 32)


def test_agent_run_positional_table_wrapper_and_input_col() -> None:
    text = "SELECT a.* FROM TABLE(AGENT_RUN(TABLE t, AGENT x, DESCRIPTOR(q))) a JOIN u ON 1=1"
    (call,) = find_agent_runs(text)
    assert text[call.start : call.end] == "TABLE(AGENT_RUN(TABLE t, AGENT x, DESCRIPTOR(q)))"
    assert call.partition_by == () and call.config == ()
    (named,) = find_agent_runs(
        "SELECT * FROM agent_run(AGENT => x, INPUT_COL => DESCRIPTOR(`q a`), "
        "INPUT => TABLE t PARTITION BY (k1, k2))"
    )
    assert named.column_name == "q a" and named.partition_by == ("k1", "k2")


def test_several_agent_runs_in_one_statement() -> None:
    text = (
        "SELECT * FROM agent_run(INPUT => TABLE a, AGENT => AGENT x, COL => DESCRIPTOR(c)) "
        "UNION ALL SELECT * FROM agent_run(INPUT => TABLE b, AGENT => AGENT y, COL => "
        "DESCRIPTOR(c)) -- agent_run( in a comment\n WHERE 'agent_run(' <> ''"
    )
    calls = find_agent_runs(text)
    assert [c.input.parts for c in calls] == [("a",), ("b",)]
    assert calls[0].end < calls[1].start


@pytest.mark.parametrize(
    ("text", "message", "at"),
    [
        ("SELECT * FROM agent_run(INPUT => TABLE t)", "missing AGENT => AGENT a, COL", ")"),
        ("SELECT * FROM agent_run(FOO => 1)", "unknown agent_run argument FOO", "FOO"),
        ("SELECT * FROM agent_run(INPUT => t)", "expected TABLE after INPUT =>", "t)"),
        ("SELECT * FROM agent_run(TABLE t, TABLE u)", "argument INPUT is given twice", "TABLE u"),
        (
            "SELECT * FROM agent_run(TABLE t, AGENT a, DESCRIPTOR(c, d))",
            "DESCRIPTOR takes one column",
            ", d",
        ),
        (
            "SELECT * FROM agent_run(TABLE t, AGENT a, DESCRIPTOR(c), MAP['k'])",
            "needs key, value pairs",
            "])",
        ),
        ("SELECT * FROM agent_run(42)", "expected an agent_run argument", "42"),
    ],
)
def test_agent_run_errors(text: str, message: str, at: str) -> None:
    with pytest.raises(SqlParseError) as info:
        find_agent_runs(text)
    assert message in str(info.value)
    assert (info.value.line, info.value.column) == (1, col(text, at)), str(info.value)


# -- scripts ---------------------------------------------------------------------------------


def test_script_split_keeps_positions_strings_comments_and_blocks() -> None:
    script = (
        "-- a comment; with a semicolon\n"
        "CREATE TABLE t (a INT);\n"
        "  SELECT ';' FROM t /* ; */;\n"
        "EXECUTE STATEMENT SET BEGIN\n"
        "  INSERT INTO a SELECT CASE WHEN x THEN 1 END FROM t;\n"
        "  INSERT INTO b SELECT 1;\n"
        "END;\n"
        "SHOW TOOLS;;\n"
    )
    parsed = parse_script(script)
    assert [(p.statement.line, p.statement.column) for p in parsed] == [
        (2, 1),
        (3, 3),
        (4, 1),
        (8, 1),
    ]
    assert parsed[1].statement.text == "SELECT ';' FROM t /* ; */"
    assert parsed[2].statement.text.endswith("END")
    assert [p.ours for p in parsed[:3]] == [None, None, None]
    assert parsed[3].ours == Show(8, 1, "tool")


def test_script_syntax_error_reports_script_position() -> None:
    script = "CREATE TABLE t (a INT);\n\nCREATE TOOL x\n  USING FUNCTON f;\nSELECT 1"
    with pytest.raises(SqlParseError) as info:
        parse_script(script)
    assert (info.value.line, info.value.column) == (4, 9)


def test_begin_without_end() -> None:
    with pytest.raises(SqlParseError, match="BEGIN without END"):
        split_statements("EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1;")
