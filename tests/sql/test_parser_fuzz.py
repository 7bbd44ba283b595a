"""Fuzzing the SQL lexer and parser: any text parses or fails with a SqlError that names a
place; nothing else escapes, in bounded time and memory per example."""

from __future__ import annotations

import time
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from flink_agents.errors import SqlError, SqlParseError
from flink_agents.sql.parser import parse_script

_PIECES = st.sampled_from(
    [
        "CREATE ", "TEMPORARY ", "AGENT ", "TOOL ", "CONNECTION ", "MODEL ", "DROP ", "ALTER ",
        "SHOW ", "DESC ", "EXTENDED ", "IF ", "NOT ", "EXISTS ", "USING ", "FUNCTION ", "PROMPT ",
        "TOOLS ", "WITH ", "COMMENT ", "RENAME ", "TO ", "SET ", "RESET ", "SELECT ", "* ",
        "FROM ", "agent_run", "(", ")", "INPUT => ", "AGENT => ", "COL => ", "CONFIG => ",
        "MAP[", "]", "DESCRIPTOR(", "TABLE ", ",", ";", "'", "''", "`", "``", '"', "a", "b.c",
        "`x y`", "'type' = 'mcp'", "'api-key' = 'sk'", "--", "/*", "*/", "\n", " ", "\t", "=",
        "=>", "1", "-1", "1e999", "长", "\x00", "\\", "$$", "LIKE ", "'%'", "EXECUTE ",
        "STATEMENT ", "SET ", "BEGIN ", "END",
    ]
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_fuzz_the_sql_parser(text: str) -> None:
    tracemalloc.start()
    started = time.process_time()
    try:
        parse_script(text)
    except SqlParseError as err:
        assert err.line is None or err.line >= 1
        assert str(err)
    except SqlError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.process_time() - started < 10
    assert peak < 32 * 1024 * 1024


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_the_sql_parser_with_any_text(text: str) -> None:
    try:
        parse_script(text)
    except SqlError:
        pass


def test_deep_nesting_is_a_parse_error_not_a_crash() -> None:
    for text in (
        "SELECT * FROM agent_run(" + "(" * 5000 + ")" * 5000 + ")",
        "CREATE AGENT a USING MODEL m USING PROMPT 'p' WITH (" + "(" * 5000,
        "SELECT MAP[" * 3000,
    ):
        try:
            parse_script(text)
        except SqlError:
            pass
