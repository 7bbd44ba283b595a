"""The agent catalog: in memory and in a directory, temporary objects, dependencies,
options and what is shown of secrets."""

from __future__ import annotations

import json
import logging
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flink_agents.errors import CatalogError, ConfigurationError
from flink_agents.sql import (
    AgentCatalog,
    CatalogAgent,
    CatalogConnection,
    CatalogTool,
    ObjectIdentifier,
)
from flink_agents.sql.executor import describe, show_create
from flink_agents.sql.models import model_resources
from flink_agents.sql.options import (
    MASK,
    agent_settings,
    check_connection_options,
    check_tool_options,
    duration_seconds,
    mcp_server_arguments,
)

SECRET = "sk-do-not-show-4242"
MODEL = ObjectIdentifier("default_catalog", "default_database", "gpt")


def ident(name: str) -> ObjectIdentifier:
    return ObjectIdentifier("default_catalog", "default_database", name)


@pytest.fixture(params=["memory", "directory"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> AgentCatalog:
    return AgentCatalog(tmp_path / "catalog" if request.param == "directory" else None)


def test_tools_crud(catalog: AgentCatalog) -> None:
    tool = CatalogTool(function="default_catalog.default_database.f", comment="c")
    catalog.create_tool("weather", tool)
    assert catalog.tool_exists("weather")
    assert catalog.tool_exists("default_database.weather")
    assert catalog.tool_exists("default_catalog.default_database.weather")
    assert catalog.get_tool("weather") == tool
    assert catalog.list_tools() == ["weather"]
    assert catalog.list_tools("default_catalog.default_database") == ["weather"]
    assert catalog.list_tools("other_db") == []
    with pytest.raises(
        CatalogError, match="tool default_catalog.default_database.weather already exists"
    ):
        catalog.create_tool("weather", tool)
    catalog.create_tool("weather", CatalogTool(function="g"), ignore_if_exists=True)
    assert catalog.get_tool("weather").function == "default_catalog.default_database.f"

    catalog.alter_tool("weather", tool.copy_with(options={"description": "d"}))
    assert catalog.get_tool("weather").options == {"description": "d"}
    catalog.rename_tool("weather", "weather2")
    assert catalog.list_tools() == ["weather2"]
    with pytest.raises(CatalogError, match="a rename stays in database"):
        catalog.rename_tool("weather2", "other.db.x")
    catalog.drop_tool("weather2")
    assert catalog.list_tools() == []
    catalog.drop_tool("weather2", ignore_if_not_exists=True)
    catalog.alter_tool("nope", tool, ignore_if_not_exists=True)
    catalog.rename_tool("nope", "x", ignore_if_not_exists=True)


def test_unknown_object_lists_what_exists(catalog: AgentCatalog) -> None:
    catalog.create_tool("b", CatalogTool(function="f"))
    catalog.create_tool("a", CatalogTool(function="f"))
    with pytest.raises(CatalogError) as info:
        catalog.get_tool("c")
    assert str(info.value) == (
        "unknown tool default_catalog.default_database.c "
        "(tools in default_catalog.default_database: a, b)"
    )
    with pytest.raises(CatalogError, match=r"agents in default_catalog.default_database: none"):
        catalog.drop_agent("x")


def test_agent_needs_existing_tools_and_keeps_them(catalog: AgentCatalog) -> None:
    with pytest.raises(CatalogError, match="unknown tool default_catalog.default_database.t"):
        catalog.create_agent("a", CatalogAgent(model=MODEL, prompt="p", tools=(ident("t"),)))
    catalog.create_tool("t", CatalogTool(function="f"))
    catalog.create_agent("a", CatalogAgent(model=MODEL, prompt="p", tools=(ident("t"),)))
    catalog.create_agent("b", CatalogAgent(model=MODEL, prompt="p", tools=(ident("t"),)))
    with pytest.raises(CatalogError) as info:
        catalog.drop_tool("t")
    assert "cannot be dropped" in str(info.value)
    assert "agent default_catalog.default_database.a" in str(info.value)
    assert "agent default_catalog.default_database.b" in str(info.value)
    assert "ALTER AGENT ... REMOVE TOOL" in str(info.value)
    with pytest.raises(CatalogError, match="cannot be renamed"):
        catalog.rename_tool("t", "t2")
    # IF EXISTS does not force it either: dropping a used tool is always refused
    with pytest.raises(CatalogError, match="cannot be dropped"):
        catalog.drop_tool("t", ignore_if_not_exists=True)
    catalog.alter_agent("a", catalog.get_agent("a").copy_with(tools=()))
    catalog.drop_agent("b")
    catalog.drop_tool("t")


def test_connection_used_by_a_tool_cannot_be_dropped(catalog: AgentCatalog) -> None:
    catalog.create_connection("mcp", CatalogConnection(options={"type": "mcp"}))
    catalog.create_tool("calc", CatalogTool(connection=ident("mcp")))
    with pytest.raises(CatalogError, match="tool default_catalog.default_database.calc uses it"):
        catalog.drop_connection("mcp")
    with pytest.raises(CatalogError, match="unknown connection"):
        catalog.create_tool("x", CatalogTool(connection=ident("nope")))


def test_temporary_objects_hide_permanent_ones(tmp_path: Path) -> None:
    catalog = AgentCatalog(tmp_path)
    catalog.create_tool("t", CatalogTool(function="permanent"))
    catalog.create_tool("t", CatalogTool(function="temporary"), temporary=True)
    assert catalog.get_tool("t").function == "temporary"
    assert catalog.is_temporary("tool", "t")
    assert catalog.list_tools() == ["t"]
    catalog.drop_tool("t")  # the temporary one
    assert catalog.get_tool("t").function == "permanent"
    assert not catalog.is_temporary("tool", "t")
    # temporary objects are never written to the directory
    catalog.create_tool("only_here", CatalogTool(function="f"), temporary=True)
    assert not list(tmp_path.rglob("only_here*"))


def test_directory_catalog_survives_sessions(tmp_path: Path) -> None:
    first = AgentCatalog(tmp_path / "cat")
    first.create_connection(
        "mcp", CatalogConnection(options={"type": "mcp", "api-key": SECRET}, comment="c")
    )
    first.create_tool("t", CatalogTool(connection=ident("mcp"), options={"allowed_tools": "a"}))
    first.create_agent(
        "db2.helper",
        CatalogAgent(model=MODEL, prompt="It's p", tools=(ident("t"),), options={"k": "v"}),
    )
    # a new catalog over the same directory (a new session or job) sees the same objects
    second = AgentCatalog(tmp_path / "cat")
    assert second.get_agent("db2.helper") == first.get_agent("db2.helper")
    assert second.list_agents("db2") == ["helper"]
    assert second.get_tool("t").connection == ident("mcp")
    assert second.get_connection("mcp").comment == "c"
    # the files are private to their owner (a connection holds its credentials)
    for path in (tmp_path / "cat").rglob("*.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        json.loads(path.read_text())
    second.drop_agent("db2.helper")
    assert not AgentCatalog(tmp_path / "cat").agent_exists("db2.helper")


def test_odd_names_round_trip_through_files(tmp_path: Path) -> None:
    catalog = AgentCatalog(tmp_path)
    odd = ObjectIdentifier("my.cat", "db/x", "we ird.name")
    catalog.create_tool(odd, CatalogTool(function="f"))
    assert AgentCatalog(tmp_path).get_tool(odd).function == "f"
    assert odd in AgentCatalog(tmp_path)._permanent.list("tool")


LONG_NAMES = [
    "长" * 28,  # 28 CJK characters: 252 bytes quoted
    "a" * 251,  # 251 ASCII characters: 256 with .json
    "x" * 5000,  # far past any file system's limit
]


@pytest.mark.parametrize("name", LONG_NAMES, ids=["cjk-28", "ascii-251", "ascii-5000"])
def test_names_too_long_for_a_file_name_are_stored_hashed(tmp_path: Path, name: str) -> None:
    catalog = AgentCatalog(tmp_path)
    long_db = ObjectIdentifier("cat", "d" * 300, name)
    for ident in (ObjectIdentifier("cat", "db", name), long_db):
        catalog.create_tool(ident, CatalogTool(function="f"))
        again = AgentCatalog(tmp_path)
        assert again.get_tool(ident).function == "f"
        assert ident in again._permanent.list("tool")  # the name is read from the file
        again.drop_tool(ident)
        assert not AgentCatalog(tmp_path).tool_exists(ident)
        again.drop_tool(ident, ignore_if_not_exists=True)  # DROP ... IF EXISTS: no OSError
    assert all(len(p.name) <= 255 for p in tmp_path.rglob("*"))


def test_a_catalog_directory_that_cannot_be_written_is_a_catalog_error(tmp_path: Path) -> None:
    catalog = AgentCatalog(tmp_path / "cat")
    (tmp_path / "cat" / "default_catalog").write_text("a file where a directory belongs")
    with pytest.raises(CatalogError, match="cannot (read|write) the catalog file"):
        catalog.create_tool("t", CatalogTool(function="f"))


def test_damaged_file_is_a_clear_error(tmp_path: Path) -> None:
    catalog = AgentCatalog(tmp_path)
    catalog.create_tool("t", CatalogTool(function="f"))
    (path,) = tmp_path.rglob("t.json")
    path.write_text("{not json")
    with pytest.raises(CatalogError, match="is damaged"):
        catalog.get_tool("t")


def test_defaults_follow_the_current_database() -> None:
    current = ["cat", "db1"]
    catalog = AgentCatalog(defaults=lambda: (current[0], current[1]))
    catalog.create_tool("t", CatalogTool(function="f"))
    current[1] = "db2"
    assert catalog.list_tools() == []
    assert catalog.list_tools("db1") == ["t"]
    assert catalog.get_tool("db1.t").function == "f"
    assert catalog.identifier("t") == ObjectIdentifier("cat", "db2", "t")


# -- what is shown of secrets ----------------------------------------------------------------


def test_show_create_and_describe_never_show_secrets() -> None:
    conn = CatalogConnection(
        options={"type": "openai", "endpoint": "http://x/v1", "api-key": SECRET, "token": SECRET},
        comment="it's mine",
    )
    text = show_create("connection", ident("c"), conn, temporary=True)
    assert SECRET not in text
    assert text == (
        "CREATE TEMPORARY CONNECTION `default_catalog`.`default_database`.`c`\n"
        "COMMENT 'it''s mine'\n"
        "WITH (\n"
        "  'type' = 'openai',\n"
        "  'endpoint' = 'http://x/v1',\n"
        f"  'api-key' = '{MASK}',\n"
        f"  'token' = '{MASK}'\n"
        ")"
    )
    rows = dict(describe(ident("c"), conn, False, extended=True))
    assert rows["option api-key"] == MASK and rows["option endpoint"] == "http://x/v1"
    assert SECRET not in repr(describe(ident("c"), conn, False, extended=True))


def test_show_create_of_tool_and_agent() -> None:
    tool = CatalogTool(function="default_catalog.default_database.get_weather")
    assert show_create("tool", ident("w"), tool, False) == (
        "CREATE TOOL `default_catalog`.`default_database`.`w`\n"
        "USING FUNCTION `default_catalog`.`default_database`.`get_weather`"
    )
    agent = CatalogAgent(model=MODEL, prompt="p", tools=(ident("w"),), options={"a": "b"})
    assert show_create("agent", ident("h"), agent, False) == (
        "CREATE AGENT `default_catalog`.`default_database`.`h`\n"
        "USING MODEL `default_catalog`.`default_database`.`gpt`\n"
        "USING PROMPT 'p'\n"
        "USING TOOLS `default_catalog`.`default_database`.`w`\n"
        "WITH (\n  'a' = 'b'\n)"
    )
    assert describe(ident("h"), agent, True, extended=False) == [
        ("name", "default_catalog.default_database.h"),
        ("model", "default_catalog.default_database.gpt"),
        ("prompt", "p"),
        ("tool", "default_catalog.default_database.w"),
        ("temporary", "true"),
    ]


def test_model_secret_stays_out_of_repr_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    resources = model_resources(
        "gpt", {"provider": "openai", "endpoint": "http://h/v1/chat/completions", "api-key": SECRET}
    )
    assert resources.connection.arguments["api_base_url"] == "http://h/v1"
    assert resources.connection.arguments["api_key"] == SECRET
    assert SECRET not in repr(resources.connection)
    assert SECRET not in caplog.text


# -- options ---------------------------------------------------------------------------------


def test_agent_settings() -> None:
    settings = agent_settings({"max-iterations": "3", "memory-turns": "2", "description": "d"})
    assert settings.memory_turns == 2 and settings.config == {"max-iterations": 3}
    later = agent_settings({"max_iterations": "3"}, {"max-iterations": "7"})
    assert later.config["max-iterations"] == 7 and later.memory_turns == 10
    with pytest.raises(ConfigurationError, match="invalid value 'x' for option 'max-iterations'"):
        agent_settings({"max-iterations": "x"})
    with pytest.raises(ConfigurationError, match="option 'memory-turns' = '-1' must be an integer"):
        agent_settings({"memory-turns": "-1"})
    with pytest.raises(ConfigurationError) as info:
        agent_settings({"max-iteration": "3"})
    assert "unknown option 'max-iteration' for an agent; supported:" in str(info.value)
    assert "max-iterations" in str(info.value) and "error-handling-strategy" in str(info.value)


def test_tool_and_connection_options() -> None:
    check_tool_options("function", {"description": "d", "type": "function"})
    with pytest.raises(ConfigurationError, match="unknown option 'allowed_tools' for a function"):
        check_tool_options("function", {"allowed_tools": "a"})
    with pytest.raises(ConfigurationError, match="does not match the tool"):
        check_tool_options("function", {"type": "mcp"})
    check_tool_options(
        "mcp", {"type": "mcp_server", "allowed_tools": "a, b", "read_timeout": "30s"}
    )
    with pytest.raises(ConfigurationError, match="'read_timeout' = 'soon' is not a duration"):
        check_tool_options("mcp", {"read_timeout": "soon"})
    with pytest.raises(
        ConfigurationError, match="needs a 'type' option: one of mcp, api-key, openai"
    ):
        check_connection_options({"endpoint": "x"})
    with pytest.raises(ConfigurationError, match="'type' = 'kafka' is not a connection type"):
        check_connection_options({"type": "kafka"})
    with pytest.raises(ConfigurationError, match="either 'endpoint' .* or 'command'"):
        check_connection_options({"type": "mcp"})
    with pytest.raises(ConfigurationError, match="unknown option 'model' for an mcp connection"):
        check_connection_options({"type": "mcp", "endpoint": "http://h", "model": "x"})
    check_connection_options({"type": "openai", "endpoint": "http://h/v1", "api-key": "k"})
    with pytest.raises(
        ConfigurationError, match="unknown option 'provider' for a openai connection"
    ):
        check_connection_options({"type": "openai", "provider": "openai"})


def test_mcp_server_arguments() -> None:
    http = mcp_server_arguments(
        {"type": "mcp", "endpoint": "http://h/mcp", "api-key": SECRET, "timeout": "5s"},
        {"read_timeout": "2min"},
    )
    assert http == {
        "url": "http://h/mcp",
        "headers": {"Authorization": f"Bearer {SECRET}"},
        "timeout": 120.0,
    }
    stdio = mcp_server_arguments(
        {"type": "mcp", "command": sys.executable, "args": "-m 'my server' x"}, {}
    )
    assert stdio["args"] == ["-m", "my server", "x"]
    as_json = mcp_server_arguments({"type": "mcp", "command": "c", "args": '["a b", "c"]'}, {})
    assert as_json["args"] == ["a b", "c"]
    with pytest.raises(ConfigurationError, match="'api-key' is for an HTTP MCP server"):
        mcp_server_arguments({"type": "mcp", "command": "c", "api-key": SECRET}, {})


def test_durations() -> None:
    assert duration_seconds("30s", "k") == 30
    assert duration_seconds("500 ms", "k") == 0.5
    assert duration_seconds("2min", "k") == 120
    assert duration_seconds("1.5", "k") == 1.5
    with pytest.raises(ConfigurationError, match="must be a positive duration"):
        duration_seconds("0s", "k")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {},
            "model m needs a 'provider' option: one of openai, ollama, anthropic, azure_openai, "
            "vllm, tongyi, bedrock, gemini, local, scripted",
        ),
        ({"provider": "bard"}, "option 'provider' = 'bard' is not supported"),
        (
            {"provider": "openai", "temprature": "1"},
            "unknown option 'temprature' for a openai model",
        ),
        (
            {"provider": "openai", "temperature": "hot"},
            "option 'temperature' = 'hot' must be a number",
        ),
        ({"provider": "openai", "max-tokens": "0"}, "option 'max-tokens' = '0' must be >= 1"),
        ({"provider": "ollama"}, "a ollama model needs a 'model' option"),
        ({"provider": "scripted"}, "needs 'respond' = 'module:function'"),
        ({"provider": "openai", "api-key-env": "FLINK_AGENTS_NO_SUCH_VAR"}, "which is not set"),
    ],
)
def test_model_option_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        model_resources("m", options)
    assert message in str(info.value)
    assert str(info.value).startswith("model m")


def test_model_from_connection_and_providers() -> None:
    resources = model_resources(
        "gpt",
        {"provider": "openai", "connection": "c", "model": "gpt-x", "temperature": "0.5"},
        {"type": "openai", "endpoint": "http://h/v1", "api-key": SECRET},
    )
    assert resources.connection.arguments == {"api_base_url": "http://h/v1", "api_key": SECRET}
    setup = resources.setup("conn", ["t1"])
    assert setup.arguments == {
        "connection": "conn",
        "tools": ["t1"],
        "model": "gpt-x",
        "temperature": 0.5,
    }
    with pytest.raises(ConfigurationError, match="its connection is of type 'mcp'"):
        model_resources("gpt", {"provider": "openai"}, {"type": "mcp"})
    ollama = model_resources(
        "o",
        {"provider": "ollama", "model": "qwen", "endpoint": "http://h:1/api/chat", "timeout": "9s"},
    )
    assert ollama.connection.arguments == {"base_url": "http://h:1", "request_timeout": 9.0}
    local = model_resources("l", {"provider": "local", "max-tokens": "64", "model-path": "/m.gguf"})
    assert local.connection.arguments == {"model_path": "/m.gguf"}
    assert local.setup_arguments == {"max_tokens": 64}
    anthropic = model_resources(
        "a", {"provider": "anthropic", "model": "claude", "api-key": SECRET}
    )
    assert anthropic.connection.class_path.endswith("AnthropicChatModelConnection")


def test_sql_package_imports_without_pyflink() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["pyflink"] = None
        import flink_agents.sql, flink_agents.sql.executor, flink_agents.sql.agent
        import flink_agents.cli._sql
        assert not any(m.startswith("pyflink") for m in sys.modules if sys.modules[m])
        print(sorted(flink_agents.sql.__all__))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(
        [
            "AgentCatalog",
            "CatalogAgent",
            "CatalogConnection",
            "CatalogTool",
            "ObjectIdentifier",
            "SqlResult",
        ]
    )
