"""Seed 002 (the FLIP draft for agents and tools in Flink SQL) as written: each SQL example,
copied into ``tests/sql/seed_002/``, runs or fails with the error the documentation gives
(``docs/user-guide/sql.md``, "The FLIP draft's examples"); after a failure the documented
replacement (``NN_*.fixed.sql``) runs and the script goes on, until the draft's
``agent_run`` query answers from a real job: an OpenAI-protocol server as the model (its key
from ``'api_key'``), the draft's MCP server over HTTP (its key from the ``api-key``
connection), a Python function tool and the draft's Java function from a ``USING JAR`` jar
(thread mode)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flink_agents.errors import CatalogError, SqlError, SqlParseError
from flink_agents.sql.options import agent_settings
from flink_agents.sql.parser import parse_script
from flink_agents.testing.ports import free_port

SEED = Path(__file__).parent / "seed_002"
REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "user-guide" / "sql.md"

#: Each example: None (runs as written) or the documented error (its class and text).
OUTCOMES: dict[str, tuple[type[Exception], str] | None] = {
    "01_create_connection.sql": None,
    "02_create_function.sql": (
        SqlParseError,
        "CREATE FUNCTION convert_to_celsius needs the class that implements it",
    ),
    "03_create_tool_mcp.sql": (
        SqlParseError,
        "expected ',' between options 'allowed_tools' and 'read_timeout'",
    ),
    "04_create_tool_function.sql": None,
    "05_create_model.sql": None,
    "06_create_agent.sql": (
        CatalogError,
        "unknown tool default_catalog.default_database.get_weather_tool",
    ),
    "07_agent_run.sql": (CatalogError, "unknown table city_table"),
}


def examples() -> list[Path]:
    return sorted(p for p in SEED.glob("*.sql") if not p.name.endswith(".fixed.sql"))


def test_every_example_has_an_outcome_and_every_error_is_documented() -> None:
    assert [p.name for p in examples()] == list(OUTCOMES)
    docs = " ".join(DOCS.read_text().split())
    for name, outcome in OUTCOMES.items():
        if outcome is not None:
            assert outcome[1] in docs, f"{name}: the error '{outcome[1]}' is not in {DOCS}"
            assert (SEED / name.replace(".sql", ".fixed.sql")).is_file(), name


def test_the_examples_parse_or_fail_with_the_documented_error() -> None:
    for path in examples():
        outcome = OUTCOMES[path.name]
        if outcome is not None and outcome[0] is SqlParseError:
            with pytest.raises(SqlParseError) as info:
                parse_script(path.read_text())
            assert outcome[1] in str(info.value), str(info.value)
        else:
            parsed = parse_script(path.read_text())
            assert len(parsed) == 1, path.name
    ours = [parse_script(p.read_text())[0].ours for p in examples() if p.name[:2] in "010406"]
    assert all(o is not None for o in ours)
    agent_run = parse_script((SEED / "07_agent_run.sql").read_text())[0].agent_runs[0]
    assert (agent_run.column_name, agent_run.partition_by, agent_run.config) == (
        "city",
        ("session_id",),
        (),
    )
    assert agent_settings({"provider": "default"}).provider == "default"


# -- on Flink ------------------------------------------------------------------------------------

SOURCE = Path(__file__).parent / "java" / "com" / "example" / "ConvertToCelsius.java"
FAHRENHEIT = {"Paris": 68.0, "London": 50.0, "Rome": 86.0}


def build_celsius_jar(tmp_path: Path) -> Path:
    """The draft's celsius.jar: ``com.example.ConvertToCelsius`` compiled against PyFlink."""
    import pyflink

    lib = Path(pyflink.__file__).parent / "lib"
    classes = tmp_path / "classes"
    subprocess.run(
        ["javac", "--release", "11", "-cp", f"{lib}/*", "-d", str(classes), str(SOURCE)],
        check=True,
        capture_output=True,
    )
    jar = tmp_path / "celsius.jar"
    with zipfile.ZipFile(jar, "w") as out:
        for path in classes.rglob("*.class"):
            out.write(path, path.relative_to(classes).as_posix())
    return jar


@pytest.fixture
def mcp_endpoint(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The draft's MCP server (tool1, tool2) over HTTP, taking only the connection's key."""
    port = free_port()
    refused = tmp_path / "refused.txt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.sql.draft_mcp_server", str(port), "some key"],
        cwd=REPO,
        env={**os.environ, "DRAFT_MCP_REFUSED": str(refused)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the draft's MCP server did not start")
    try:
        yield f"http://127.0.0.1:{port}/mcp", refused
    finally:
        proc.terminate()
        proc.wait(10)


def weather_model(request: Any) -> Any:
    """The draft's ``openai`` model: asks for the weather and humidity of the city, converts
    the temperature with the Java function, then answers from the results."""
    from flink_agents.testing.servers import Reply, openai_reply

    if request.headers.get("authorization") != "Bearer some-key":  # the model's 'api_key'
        return Reply({"error": {"message": "bad key"}}, status=401)
    messages = request.body["messages"]
    offered = sorted(t["function"]["name"] for t in request.body.get("tools") or [])
    convert = "convert_to_celsius_tool" in offered
    expected = ["get_weather_tool", "tool1", "tool2"]
    if [t for t in offered if t != "convert_to_celsius_tool"] != expected:
        return Reply(openai_reply(f"unexpected tools {offered}"))
    city = [m for m in messages if m["role"] == "user"][-1]["content"]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        return Reply(
            openai_reply(
                None,
                [("w", "get_weather_tool", {"city": city}), ("h", "tool1", {"city": city})],
            )
        )
    if len(results) == 2 and convert:
        arguments = {"fahrenheit": FAHRENHEIT[city]}
        return Reply(openai_reply(None, [("c", "convert_to_celsius_tool", arguments)]))
    return Reply(openai_reply(" | ".join(str(r) for r in results)))


def run(session: Any, text: str) -> Any:
    statements = [s for s in re.split(r";\s*\n", text.strip()) if s.strip()]
    return [session.execute_sql(s) for s in statements][-1]


@pytest.mark.flink
def test_the_drafts_examples_on_flink(tmp_path: Path, mcp_endpoint: tuple[str, Path]) -> None:
    from flink_agents.runtime.flink.sql import sql_session
    from flink_agents.testing.minicluster import make_env
    from flink_agents.testing.servers import ScriptedServer

    endpoint, refused = mcp_endpoint
    fill = {"celsius_jar": str(build_celsius_jar(tmp_path)), "mcp_endpoint": endpoint}
    _, agents_env = make_env(parallelism=1)
    session = sql_session(agents_env)
    with ScriptedServer(respond=weather_model) as model_server:
        fill["openai_endpoint"] = f"{model_server.url}/v1"
        result = None
        for path in examples():
            outcome = OUTCOMES[path.name]
            if outcome is None:
                result = run(session, path.read_text())
                continue
            with pytest.raises(SqlError) as info:
                run(session, path.read_text())
            assert isinstance(info.value, outcome[0]), (path.name, info.value)
            assert outcome[1] in str(info.value), (path.name, str(info.value))
            # the documented replacement, then the example as written when it can run now
            fixed = SEED / path.name.replace(".sql", ".fixed.sql")
            run(session, fixed.read_text().format(**fill))
            if path.name in ("06_create_agent.sql", "07_agent_run.sql"):
                result = run(session, path.read_text())
        with result.collect() as rows:
            answers = sorted(tuple(r) for r in rows)
        # the draft's grammar, ALTER AGENT ... ADD TOOL: its Java function tool too
        session.execute_sql("ALTER AGENT weather_agent ADD TOOL convert_to_celsius_tool")
        with run(session, (SEED / "07_agent_run.sql").read_text()).collect() as rows:
            converted = sorted(tuple(r) for r in rows)
    assert answers == [
        ("s1", "Paris", "sunny in Paris | humidity in Paris: 40%"),
        ("s1", "Rome", "sunny in Rome | humidity in Rome: 40%"),
        ("s2", "London", "rainy in London | humidity in London: 40%"),
    ]
    assert converted == [
        ("s1", "Paris", "sunny in Paris | humidity in Paris: 40% | 20.0"),
        ("s1", "Rome", "sunny in Rome | humidity in Rome: 40% | 30.0"),
        ("s2", "London", "rainy in London | humidity in London: 40% | 10.0"),
    ]
    assert not refused.exists(), "the MCP server saw a request without the connection's key"
    # the key of the draft's connection is stored, never shown
    shown = session.execute_sql("SHOW CREATE CONNECTION mcp_connection")
    with shown.collect() as rows:
        text = "\n".join(str(r[0]) for r in rows)
    assert "'type' = 'api-key'" in text and "some key" not in text
