"""Our statements through ``agents_env.execute_sql`` over a real table environment (a JVM,
no job): DDL round trips, the catalog API, tools over Flink's Python functions, agent_run
translation, SET/RESET, and every "bad input" error with what it names."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from flink_agents.errors import CatalogError, ConfigurationError, SqlError, SqlParseError
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.sql import CatalogAgent, CatalogTool, ObjectIdentifier, SqlResult
from flink_agents.sql.tools import FlinkFunctionTool

pytestmark = pytest.mark.flink  # a JVM (table environment), though no job runs

SECRET = "sk-never-shown-8d1f"
CONN_SECRET = "tok-never-shown-77aa"
DEFAULT = "default_catalog.default_database"


def make_env(**config: Any) -> Any:
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.table import StreamTableEnvironment

    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    t_env = StreamTableEnvironment.create(env)
    return AgentsExecutionEnvironment.get_execution_environment(env, t_env, **config)


@pytest.fixture
def agents_env() -> Any:
    agents_env = make_env()
    run(
        agents_env,
        "CREATE TEMPORARY FUNCTION get_weather AS 'tests.sql.udfs.get_weather' LANGUAGE PYTHON",
        "CREATE TEMPORARY MODEL gpt WITH ('provider' = 'openai', 'endpoint' = "
        f"'http://127.0.0.1:9/v1', 'model' = 'm', 'api-key' = '{SECRET}')",
        "CREATE TEMPORARY VIEW qs AS SELECT * FROM (VALUES (1, 'ann', 'hi')) AS t(id, who, q)",
    )
    return agents_env


def run(agents_env: Any, *statements: str) -> list[Any]:
    return [agents_env.execute_sql(s) for s in statements]


def rows(result: SqlResult) -> list[tuple[Any, ...]]:
    with result.collect() as it:
        return list(it)


def names(result: SqlResult) -> list[str]:
    return [r[0] for r in rows(result)]


# -- DDL round trips -------------------------------------------------------------------------


def test_tool_and_agent_life_cycle(agents_env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ok = agents_env.execute_sql(
        "CREATE TOOL weather USING FUNCTION get_weather COMMENT 'w' "
        "WITH ('description' = 'Weather of a city')"
    )
    assert ok.get_result_kind() == "SUCCESS"
    ok.print()
    assert capsys.readouterr().out == "OK\n"
    run(
        agents_env,
        "CREATE TOOL IF NOT EXISTS weather USING FUNCTION nothing_checked_when_it_exists",
        "CREATE AGENT helper USING MODEL gpt USING PROMPT 'Be brief.' USING TOOLS weather "
        "WITH ('max-iterations' = '3')",
    )
    assert names(agents_env.execute_sql("SHOW TOOLS")) == ["weather"]
    assert names(agents_env.execute_sql("SHOW AGENTS LIKE 'he%'")) == ["helper"]
    assert names(agents_env.execute_sql("SHOW AGENTS NOT LIKE 'he%'")) == []
    assert names(agents_env.execute_sql("SHOW TOOLS FROM default_database")) == ["weather"]

    agents_env.execute_sql("SHOW TOOLS").print()
    assert capsys.readouterr().out == (
        "+-----------+\n| tool name |\n+-----------+\n|   weather |\n+-----------+\n1 row in set\n"
    )
    desc = dict(rows(agents_env.execute_sql("DESC TOOL EXTENDED weather")))
    assert desc == {
        "name": f"{DEFAULT}.weather",
        "type": "function",
        "function": f"{DEFAULT}.get_weather",
        "comment": "w",
        "option description": "Weather of a city",
    }
    agents_env.execute_sql("SHOW CREATE AGENT helper").print()
    assert capsys.readouterr().out == (
        "CREATE AGENT `default_catalog`.`default_database`.`helper`\n"
        "USING MODEL `default_catalog`.`default_database`.`gpt`\n"
        "USING PROMPT 'Be brief.'\n"
        "USING TOOLS `default_catalog`.`default_database`.`weather`\n"
        "WITH (\n  'max-iterations' = '3'\n)\n"
    )

    # ALTER AGENT, every form
    run(
        agents_env,
        "CREATE TOOL shout_tool USING FUNCTION get_weather",
        "ALTER AGENT helper ADD TOOL shout_tool",
        "ALTER AGENT helper SET PROMPT 'Be kind.'",
        "CREATE TEMPORARY MODEL gpt2 WITH ('provider' = 'ollama', 'model' = 'qwen')",
        "ALTER AGENT helper SET MODEL gpt2",
        "ALTER AGENT helper SET ('memory-turns' = '2', 'max-iterations' = '4')",
        "ALTER AGENT helper RESET ('max-iterations')",
        "ALTER AGENT helper REMOVE TOOL weather",
        "ALTER AGENT helper RENAME TO assistant",
        "ALTER AGENT IF EXISTS helper SET PROMPT 'gone'",
    )
    agent = agents_env.catalog.get_agent("assistant")
    assert agent == CatalogAgent(
        model=ObjectIdentifier("default_catalog", "default_database", "gpt2"),
        prompt="Be kind.",
        tools=(ObjectIdentifier("default_catalog", "default_database", "shout_tool"),),
        options={"memory-turns": "2"},
    )
    assert not agents_env.catalog.agent_exists("helper")
    run(
        agents_env,
        "ALTER TOOL weather SET ('description' = 'new')",
        "ALTER TOOL weather RENAME TO w2",
    )
    assert agents_env.catalog.get_tool("w2").options == {"description": "new"}
    run(agents_env, "DROP AGENT assistant", "DROP TOOL w2", "DROP TOOL IF EXISTS w2")
    assert names(agents_env.execute_sql("SHOW AGENTS")) == []


def test_catalog_api_objects_are_usable_from_sql(agents_env: Any) -> None:
    catalog = agents_env.catalog
    catalog.create_tool("py_tool", CatalogTool(function=f"{DEFAULT}.get_weather"))
    catalog.create_agent(
        "py_agent",
        CatalogAgent(
            model=ObjectIdentifier("default_catalog", "default_database", "gpt"),
            prompt="p",
            tools=(catalog.identifier("py_tool"),),
        ),
    )
    assert names(agents_env.execute_sql("SHOW TOOLS")) == ["py_tool"]
    transformations = agents_env.env._j_stream_execution_environment.getTransformations()
    before = transformations.size()
    table = agents_env.sql_query(
        "SELECT id, agent_output FROM agent_run(INPUT => TABLE qs, AGENT => AGENT py_agent, "
        "COL => DESCRIPTOR(q))"
    )
    # (PyFlink 1.20 / 2.0 have no Table.get_resolved_schema: read as agent_run does)
    assert internals.table_columns(table)[0] == ["id", "agent_output"]
    # inside a larger query: a join with a filter compiles (explain plans it, no job runs)
    joined = agents_env.sql_query(
        "SELECT q.who, r.agent_output FROM qs AS q JOIN agent_run(INPUT => TABLE qs, "
        "AGENT => AGENT py_agent, COL => DESCRIPTOR(q)) AS r ON q.id = r.id WHERE r.id > 0"
    )
    assert "Join" in joined.explain()
    # the views' DataStream operators are not left in the stream environment, where a later
    # env.execute() would run the agents once more, without a sink
    assert transformations.size() == before


def test_connections_and_secrets_are_never_shown(
    agents_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    run(
        agents_env,
        "CREATE CONNECTION llm WITH ('type' = 'openai', 'endpoint' = 'http://127.0.0.1:9/v1', "
        f"'api-key' = '{SECRET}')",
        "CREATE TEMPORARY MODEL via_conn WITH ('provider' = 'openai', 'connection' = 'llm', "
        "'model' = 'm')",
        "CREATE CONNECTION tools WITH ('type' = 'mcp', 'endpoint' = 'http://127.0.0.1:9/mcp', "
        f"'api-key' = '{CONN_SECRET}')",
        "CREATE TOOL calc USING CONNECTION tools WITH ('allowed_tools' = 'multiply')",
        "CREATE AGENT a USING MODEL via_conn USING PROMPT 'p' USING TOOLS calc",
    )
    shown = [
        agents_env.execute_sql(s).to_text()
        for s in (
            "SHOW CREATE CONNECTION llm",
            "DESC CONNECTION EXTENDED llm",
            "SHOW CREATE CONNECTION tools",
            "DESC CONNECTION EXTENDED tools",
            "DESC TOOL EXTENDED calc",
            "DESC AGENT EXTENDED a",
            "SHOW CREATE AGENT a",
        )
    ]
    text = "\n".join(shown)
    assert "'api-key' = '***'" in shown[0] and " *** |" in shown[1]
    assert SECRET not in text and CONN_SECRET not in text
    # the agent_run plan: the model's key is kept out of the plan JSON
    agents_env.sql_query(
        "SELECT * FROM agent_run(INPUT => TABLE qs, AGENT => AGENT a, COL => DESCRIPTOR(q))"
    )
    from flink_agents.runtime.flink.sql import sql_session

    (plan,) = sql_session(agents_env).translator.plans
    plan_json = plan.model_dump_json()
    assert SECRET not in plan_json and "api_key" in plan_json
    assert SECRET in plan.secrets.values()  # it travels beside the plan, to the task
    assert f"Bearer {CONN_SECRET}" in plan.secrets.values()  # the MCP server's header too
    assert CONN_SECRET not in plan_json
    assert "multiply" in plan_json  # the MCP tool is offered to the model by name
    assert SECRET not in caplog.text and CONN_SECRET not in caplog.text


def test_mcp_tool_without_allowed_tools_offers_all_the_servers_tools(agents_env: Any) -> None:
    """Without ``allowed_tools`` the translation asks the (real, stdio) server for its tools,
    so an unreachable server fails the statement, not the job."""
    from flink_agents.runtime.flink.sql import sql_session

    run(
        agents_env,
        "CREATE CONNECTION tools WITH ('type' = 'mcp', 'command' = "
        f"'{sys.executable}', 'args' = '-m tests.integrations.mcp_server stdio', "
        "'timeout' = '60s')",
        "CREATE TOOL calc USING CONNECTION tools",
        "CREATE AGENT a USING MODEL gpt USING PROMPT 'p' USING TOOLS calc",
    )
    agents_env.sql_query(
        "SELECT * FROM agent_run(INPUT => TABLE qs, AGENT => AGENT a, COL => DESCRIPTOR(q))"
    )
    (plan,) = sql_session(agents_env).translator.plans
    from flink_agents.api.resource import ResourceType

    setup = plan.get_resource_provider("sql_model", ResourceType.CHAT_MODEL)
    assert setup is not None
    assert sorted(setup.arguments["tools"]) == ["env_value", "explode", "multiply", "pid"]


def test_catalog_directory_keeps_definitions_across_sessions(tmp_path: Path) -> None:
    directory = tmp_path / "agent-catalog"
    first = make_env(**{"sql.catalog-dir": str(directory)})
    run(
        first,
        "CREATE TEMPORARY FUNCTION get_weather AS 'tests.sql.udfs.get_weather' LANGUAGE PYTHON",
        "CREATE TOOL weather USING FUNCTION get_weather",
        "CREATE TEMPORARY TOOL scratch USING FUNCTION get_weather",
    )
    second = make_env(**{"sql.catalog-dir": str(directory)})
    assert names(second.execute_sql("SHOW TOOLS")) == ["weather"]  # not the temporary one
    assert second.catalog.directory == directory
    in_memory = make_env()
    assert names(in_memory.execute_sql("SHOW TOOLS")) == []


def test_set_and_reset(agents_env: Any) -> None:
    run(agents_env, "SET 'table.dml-sync' = 'true'", "SET 'pipeline.name' = 'x'")
    assert rows(agents_env.execute_sql("SET")) == [
        ("pipeline.name", "x"),
        ("table.dml-sync", "true"),
    ]
    assert agents_env.t_env.get_config().get("table.dml-sync", None) == "true"
    run(agents_env, "RESET 'pipeline.name'")
    assert rows(agents_env.execute_sql("SET")) == [("table.dml-sync", "true")]
    run(agents_env, "RESET")
    assert rows(agents_env.execute_sql("SET")) == []
    assert agents_env.t_env.get_config().get("table.dml-sync", None) in (None, "false")


# -- tools over Flink's Python functions -----------------------------------------------------


def test_tools_from_every_python_registration_path(agents_env: Any) -> None:
    """Flink's function catalog holds each registration's serialized Python function; the
    tool loads it (the same bytes PyFlink's workers get), whatever the path."""
    from pyflink.table import DataTypes
    from pyflink.table.udf import udf

    from flink_agents.runtime.flink.sql import sql_session
    from tests.sql import udfs

    t_env = agents_env.t_env
    t_env.execute_sql("CREATE FUNCTION shout AS 'tests.sql.udfs.shout' LANGUAGE PYTHON")
    t_env.create_temporary_function("weather_obj", udfs.get_weather)
    offset = 7

    def add_offset(x: int) -> int:
        """Adds the offset.

        Args:
            x: the number.
        """
        return x + offset

    t_env.create_temporary_system_function(
        "add_offset", udf(add_offset, result_type=DataTypes.INT())
    )
    host = sql_session(agents_env).host
    from flink_agents.sql.statements import Name

    cases = {
        "get_weather": ({"city": "Oslo"}, "sunny in Oslo"),  # CREATE TEMPORARY FUNCTION
        "shout": ({"text": "hey"}, "HEY"),  # CREATE FUNCTION, a ScalarFunction class
        "weather_obj": ({"city": "London"}, "rainy in London"),  # create_temporary_function
        "add_offset": ({"x": 1}, 8),  # a closure, as a temporary system function
    }
    for function, (arguments, expected) in cases.items():
        ident = host.resolve_function(Name((function,)))
        tool = FlinkFunctionTool.create("t", ident, host.python_function(ident))
        assert tool.call(**arguments) == expected, function
        again = FlinkFunctionTool.model_validate_json(tool.model_dump_json())  # as in a plan
        assert again.call(**arguments) == expected, function
    schema = FlinkFunctionTool.create(
        "t", f"{DEFAULT}.get_weather", host.python_function(f"{DEFAULT}.get_weather")
    ).metadata
    assert schema.description == "The weather of a city."
    assert schema.args_schema["properties"]["city"] == {
        "description": "the city's name.",
        "type": "string",
    }
    assert host.resolve_function(Name(("add_offset",))) == "add_offset"  # a system function


# -- bad input -------------------------------------------------------------------------------


def expect(agents_env: Any, statement: str, error: type[Exception], *fragments: str) -> str:
    with pytest.raises(error) as info:
        agents_env.execute_sql(statement)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)
    return str(info.value)


def test_unknown_objects_are_named_with_what_exists(agents_env: Any) -> None:
    run(
        agents_env,
        "CREATE TOOL weather USING FUNCTION get_weather",
        "CREATE AGENT helper USING MODEL gpt USING PROMPT 'p' USING TOOLS weather",
    )
    statement = "CREATE AGENT x USING MODEL gpt USING PROMPT 'p' USING TOOLS weather, nosuch"
    expect(
        agents_env,
        statement,
        CatalogError,
        f"line 1, column {statement.index('nosuch') + 1}: unknown tool "
        "default_catalog.default_database.nosuch",
        "tools in default_catalog.default_database: weather",
    )
    expect(
        agents_env,
        "CREATE AGENT x USING MODEL gtp USING PROMPT 'p'",
        CatalogError,
        "line 1, column 28: unknown model gtp (models: gpt)",
    )
    expect(
        agents_env,
        "CREATE TOOL t USING FUNCTION get_wether",
        CatalogError,
        "unknown function get_wether (functions: get_weather)",
    )
    expect(
        agents_env,
        "CREATE TOOL t USING CONNECTION nope",
        CatalogError,
        "unknown connection default_catalog.default_database.nope",
        "connections in default_catalog.default_database: none",
    )
    expect(
        agents_env,
        "CREATE TOOL t USING FUNCTION upper",
        CatalogError,
        "function upper is not a Python or Java scalar function",
    )
    expect(agents_env, "DESC AGENT nobody", CatalogError, "agents in", "helper")
    expect(agents_env, "CREATE TOOL t", CatalogError, "needs USING FUNCTION f")
    expect(
        agents_env,
        "SELECT * FROM agent_run(INPUT => TABLE qs, AGENT => AGENT nobody, COL => DESCRIPTOR(q))",
        CatalogError,
        "line 1, column 15: unknown agent default_catalog.default_database.nobody",
        "(agents in default_catalog.default_database: helper)",
    )
    expect(
        agents_env,
        "SELECT * FROM agent_run(INPUT => TABLE nope, AGENT => AGENT helper, COL => DESCRIPTOR(q))",
        CatalogError,
        "unknown table nope (tables and views: qs)",
    )
    expect(
        agents_env,
        "SELECT * FROM agent_run(INPUT => TABLE qs PARTITION BY whom, AGENT => AGENT helper, "
        "COL => DESCRIPTOR(q))",
        SqlError,
        "PARTITION BY: unknown column 'whom' (columns: id, who, q)",
    )


def test_bad_options_say_which_and_why(agents_env: Any) -> None:
    run(agents_env, "CREATE TOOL weather USING FUNCTION get_weather")
    expect(
        agents_env,
        "CREATE AGENT x USING MODEL gpt USING PROMPT 'p' WITH ('max-iterations' = 'many')",
        ConfigurationError,
        "invalid value 'many' for option 'max-iterations'",
    )
    expect(
        agents_env,
        "CREATE AGENT x USING MODEL gpt USING PROMPT 'p' WITH ('temperature' = '1')",
        ConfigurationError,
        "unknown option 'temperature' for an agent; supported:",
    )
    expect(
        agents_env,
        "CREATE TOOL t USING FUNCTION get_weather WITH ('allowed_tools' = 'x')",
        ConfigurationError,
        "unknown option 'allowed_tools' for a function tool; supported: description, type",
    )
    run(agents_env, "CREATE TEMPORARY MODEL bad WITH ('provider' = 'openai', 'temprature' = '1')")
    expect(
        agents_env,
        "CREATE AGENT x USING MODEL bad USING PROMPT 'p'",
        ConfigurationError,
        "model default_catalog.default_database.bad: unknown option 'temprature' for a openai "
        "model; supported:",
    )
    run(agents_env, "CREATE AGENT ok USING MODEL gpt USING PROMPT 'p'")
    expect(
        agents_env,
        "SELECT * FROM agent_run(INPUT => TABLE qs, AGENT => AGENT ok, COL => DESCRIPTOR(q), "
        "CONFIG => MAP['max-in-flight', '0'])",
        ConfigurationError,
        "invalid value '0' for option 'max-in-flight'",
    )
    expect(
        agents_env,
        "CREATE CONNECTION c WITH ('type' = 'mcp')",
        ConfigurationError,
        "either 'endpoint'",
    )


def test_dropping_a_used_tool_is_refused_with_the_agents_name(agents_env: Any) -> None:
    run(
        agents_env,
        "CREATE TOOL weather USING FUNCTION get_weather",
        "CREATE AGENT helper USING MODEL gpt USING PROMPT 'p' USING TOOLS weather",
    )
    for statement in ("DROP TOOL weather", "DROP TOOL IF EXISTS weather"):
        expect(
            agents_env,
            statement,
            CatalogError,
            "tool default_catalog.default_database.weather cannot be dropped: agent "
            "default_catalog.default_database.helper uses it",
        )
    expect(agents_env, "ALTER TOOL weather RENAME TO w", CatalogError, "cannot be renamed")
    assert agents_env.catalog.tool_exists("weather")


def test_syntax_errors_and_updating_input(agents_env: Any) -> None:
    expect(
        agents_env,
        "CREATE AGENT a USING MODEL gpt\n  USING PROMT 'p'",
        SqlParseError,
        "line 2, column 9: expected PROMPT after USING, found 'PROMT'",
    )
    expect(agents_env, "SHOW TOOLS; SHOW AGENTS", SqlError, "expected one statement, got 2")
    run(agents_env, "CREATE AGENT a USING MODEL gpt USING PROMPT 'p'")
    run(
        agents_env, "CREATE TEMPORARY VIEW counts AS SELECT who, COUNT(*) AS n FROM qs GROUP BY who"
    )
    expect(
        agents_env,
        "SELECT * FROM agent_run(INPUT => TABLE counts, AGENT => AGENT a, COL => DESCRIPTOR(who))",
        SqlError,
        "agent_run cannot read table counts",
        "insert-only",
    )
    with pytest.raises(SqlError, match="sql_query takes a query"):
        agents_env.sql_query("SHOW TOOLS")


def test_flink_errors_are_one_line_with_their_root_cause() -> None:
    from flink_agents.runtime.flink.sql.session import flink_error

    java = (
        "An error occurred while calling o1323.await.\n"
        ": java.util.concurrent.ExecutionException: Failed to wait job finish\n"
        "\tat java.base/java.util.concurrent.CompletableFuture.reportGet(Unknown Source)\n"
        "Caused by: org.apache.flink.runtime.client.JobExecutionException: Job execution failed.\n"
        "\t... 6 more\n"
        "Caused by: pemja.core.PythonException: <class 'flink_agents.errors.ToolError'>: boom\n"
    )
    assert flink_error(RuntimeError(java)) == (
        "An error occurred while calling o1323.await. (root cause: "
        "pemja.core.PythonException: <class 'flink_agents.errors.ToolError'>: boom)"
    )
    assert flink_error(RuntimeError("Object 'nope' not found")) == "Object 'nope' not found"
    assert flink_error(RuntimeError("")) == "RuntimeError"
