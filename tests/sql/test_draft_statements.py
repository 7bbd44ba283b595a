"""The FLIP draft's forms through a real table environment: Java function tools (schema,
refusals, process mode), ``api-key`` connections and ``'api_key'`` never shown, agent
providers checked at ``CREATE``/``ALTER AGENT``, and a provider of our own answering in a
job through ``INPUT_COL =>``."""

from __future__ import annotations

import logging
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from flink_agents.errors import CatalogError, ConfigurationError, SqlError
from flink_agents.sql.result import SqlResult

pytestmark = pytest.mark.flink

KEY = "sk-draft-statements-never-shown-77"
CELSIUS = "org.flinkagents.examples.ConvertToCelsius"


def make_env(**config: Any) -> Any:
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import StreamTableEnvironment

    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    t_env = StreamTableEnvironment.create(env)
    return AgentsExecutionEnvironment.get_execution_environment(env, t_env, **config)


def text(result: SqlResult) -> str:
    with result.collect() as rows:
        return "\n".join(" | ".join(str(v) for v in row) for row in rows)


@pytest.fixture
def agents_env() -> Any:
    env = make_env()
    for statement in (
        f"CREATE TEMPORARY FUNCTION convert_to_celsius AS '{CELSIUS}' LANGUAGE JAVA",
        "CREATE TEMPORARY FUNCTION upper_py AS 'tests.sql.udfs.shout' LANGUAGE PYTHON",
        "CREATE TEMPORARY MODEL openai WITH ('provider' = 'openai', 'model' = 'gpt-4o', "
        f"'api_key' = '{KEY}', 'endpoint' = 'http://127.0.0.1:9/v1')",
    ):
        env.execute_sql(statement)
    return env


def test_a_java_function_tool_is_described_from_its_class(agents_env: Any) -> None:
    from flink_agents.api.tools.java_tool import JavaTool
    from flink_agents.runtime.flink.sql import sql_session
    from flink_agents.sql.tools import function_tool

    agents_env.execute_sql(
        "CREATE TOOL convert_to_celsius_tool USING FUNCTION convert_to_celsius WITH "
        "('type' = 'function', 'description' = 'converts degrees to celsius')"
    )
    session = sql_session(agents_env)
    tool = function_tool(
        session.host,
        "convert_to_celsius_tool",
        "default_catalog.default_database.convert_to_celsius",
        "converts degrees to celsius",
    )
    assert isinstance(tool, JavaTool)
    assert tool.metadata.description == "converts degrees to celsius"
    assert tool.metadata.args_schema == {
        "type": "object",
        "properties": {"fahrenheit": {"type": "number"}},
        "required": ["fahrenheit"],
    }
    assert tool.java_config == {
        "function_class": CELSIUS,
        "function": "default_catalog.default_database.convert_to_celsius",
        "tool_name": "convert_to_celsius_tool",
        "tool_description": "converts degrees to celsius",
    }
    desc = text(agents_env.execute_sql("DESC TOOL convert_to_celsius_tool"))
    assert "type | function" in desc and "convert_to_celsius" in desc


BAD_FUNCTIONS = {
    "TwoEvals": "public String eval(String a) { return a; } "
    "public String eval(Integer a) { return String.valueOf(a); }",
    "MapArgument": "public String eval(java.util.Map<String, String> m) { return m.toString(); }",
    "Unnamed": "public Long eval(Long a, Long b) { return a + b; }",
}


def bad_functions_jar(tmp_path: Path) -> Path:
    import pyflink

    lib = Path(pyflink.__file__).parent / "lib"
    src = tmp_path / "src" / "com" / "example"
    src.mkdir(parents=True)
    for name, body in BAD_FUNCTIONS.items():
        (src / f"{name}.java").write_text(
            f"package com.example; public class {name} extends "
            f"org.apache.flink.table.functions.ScalarFunction {{ {body} }}"
        )
    classes = tmp_path / "classes"
    subprocess.run(
        ["javac", "--release", "11", "-cp", f"{lib}/*", "-d", str(classes)]
        + [str(p) for p in src.glob("*.java")],
        check=True,
        capture_output=True,
    )
    jar = tmp_path / "bad.jar"
    with zipfile.ZipFile(jar, "w") as out:
        for path in classes.rglob("*.class"):
            out.write(path, path.relative_to(classes).as_posix())
    return jar


def test_functions_that_cannot_be_tools_are_refused(
    agents_env: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(CatalogError, match="upper is not a Python or Java scalar function"):
        agents_env.execute_sql("CREATE TOOL t USING FUNCTION upper")
    with pytest.raises(CatalogError, match="unknown function nope"):
        agents_env.execute_sql("CREATE TOOL t USING FUNCTION nope")
    jar = bad_functions_jar(tmp_path)
    for name in BAD_FUNCTIONS:
        agents_env.execute_sql(
            f"CREATE TEMPORARY FUNCTION {name.lower()} AS 'com.example.{name}' LANGUAGE JAVA "
            f"USING JAR '{jar}'"
        )
    with pytest.raises(CatalogError, match="has 2 public eval methods; a tool needs exactly one"):
        agents_env.execute_sql("CREATE TOOL t USING FUNCTION twoevals")
    with pytest.raises(CatalogError, match="has type java.util.Map, which a model cannot pass"):
        agents_env.execute_sql("CREATE TOOL t USING FUNCTION mapargument")
    caplog.set_level(logging.WARNING)
    agents_env.execute_sql("CREATE TOOL unnamed_tool USING FUNCTION unnamed")  # works, warns
    assert "have no names (the model sees arg0, arg1, ...)" in caplog.text


def test_java_function_tools_need_thread_mode() -> None:
    env = make_env(**{"python.execution-mode": "process"})
    env.execute_sql(f"CREATE TEMPORARY FUNCTION c AS '{CELSIUS}' LANGUAGE JAVA")
    with pytest.raises(CatalogError) as info:
        env.execute_sql("CREATE TOOL t USING FUNCTION c")
    message = str(info.value)
    assert "calls the Java function" in message and "needs python.execution-mode thread" in message
    assert "(this job: process)" in message and "LANGUAGE PYTHON" in message
    # a Python function tool is fine in process mode
    env.execute_sql("CREATE TEMPORARY FUNCTION p AS 'tests.sql.udfs.get_weather' LANGUAGE PYTHON")
    env.execute_sql("CREATE TOOL p_tool USING FUNCTION p")


def test_set_process_mode_refuses_java_tools_at_agent_run(agents_env: Any) -> None:
    agents_env.execute_sql("CREATE TOOL c_tool USING FUNCTION convert_to_celsius")
    agents_env.execute_sql("CREATE AGENT a USING MODEL openai USING PROMPT 'p' USING TOOLS c_tool")
    agents_env.execute_sql(
        "CREATE TEMPORARY VIEW cities AS SELECT * FROM (VALUES ('Paris')) AS t(city)"
    )
    agents_env.execute_sql("SET 'python.execution-mode' = 'process'")
    with pytest.raises(SqlError, match="needs python.execution-mode thread") as info:
        agents_env.sql_query(
            "SELECT * FROM agent_run(INPUT => TABLE cities, AGENT => AGENT a, "
            "INPUT_COL => DESCRIPTOR(city))"
        )
    assert info.value.line == 1


def test_api_key_connections_and_the_alias_are_never_shown(agents_env: Any) -> None:
    agents_env.execute_sql(f"CREATE CONNECTION keys WITH ('type' = 'api-key', 'api_key' = '{KEY}')")
    shown = text(agents_env.execute_sql("SHOW CREATE CONNECTION keys"))
    assert "'api_key' = '***" in shown and KEY not in shown
    desc = text(agents_env.execute_sql("DESC CONNECTION EXTENDED keys"))
    assert "type | api-key" in desc and KEY not in desc
    agents_env.execute_sql(
        "CREATE TEMPORARY MODEL keyed WITH ('provider' = 'openai', 'model' = 'm', "
        "'connection' = 'keys')"
    )
    agents_env.execute_sql("CREATE AGENT ka USING MODEL keyed USING PROMPT 'p'")
    with pytest.raises(ConfigurationError, match="needs the server's address"):
        agents_env.execute_sql("CREATE TOOL m USING CONNECTION keys WITH ('type' = 'mcp')")
    agents_env.execute_sql(
        "CREATE TOOL m USING CONNECTION keys WITH ('type' = 'mcp', "
        "'endpoint' = 'http://127.0.0.1:9/mcp', 'allowed_tools' = 'a')"
    )
    with pytest.raises(CatalogError, match="tool .*m use"):
        agents_env.execute_sql("DROP CONNECTION keys")


def test_providers_are_checked_at_create_and_alter(agents_env: Any) -> None:
    agents_env.execute_sql(
        "CREATE AGENT d USING MODEL openai USING PROMPT 'p' WITH ('provider' = 'default')"
    )
    with pytest.raises(ConfigurationError, match="unknown agent provider 'langchain'; known:"):
        agents_env.execute_sql(
            "CREATE AGENT x USING MODEL openai USING PROMPT 'p' WITH ('provider' = 'langchain')"
        )
    with pytest.raises(ConfigurationError, match="unknown agent provider 'nope'"):
        agents_env.execute_sql("ALTER AGENT d SET ('provider' = 'nope')")
    agents_env.execute_sql(
        "ALTER AGENT d SET ('provider' = 'tests.sql.providers:Shout', 'suffix' = '?')"
    )
    with pytest.raises(ConfigurationError, match=r"unknown option\(s\) \['memory-turns'\]"):
        agents_env.execute_sql("ALTER AGENT d SET ('memory-turns' = '3')")
    assert "provider | tests.sql.providers:Shout" in text(
        agents_env.execute_sql("DESC AGENT EXTENDED d")
    )


def test_a_provider_of_our_own_answers_in_a_job(agents_env: Any) -> None:
    agents_env.execute_sql(
        "CREATE AGENT shouter USING MODEL openai USING PROMPT 'unused' "
        "WITH ('provider' = 'tests.sql.providers:Shout', 'suffix' = '!!')"
    )
    agents_env.execute_sql(
        "CREATE TEMPORARY VIEW cities AS SELECT * FROM (VALUES (1, 'Paris'), (2, 'Rome')) "
        "AS t(id, city)"
    )
    table = agents_env.sql_query(
        "SELECT * FROM agent_run(INPUT => TABLE cities PARTITION BY id, "
        "AGENT => AGENT shouter, INPUT_COL => DESCRIPTOR(city), CONFIG => MAP['suffix', '?'])"
    )
    with table.execute().collect() as rows:
        assert sorted(tuple(r) for r in rows) == [(1, "Paris", "PARIS?"), (2, "Rome", "ROME?")]
