"""The FLIP draft's forms without Flink: ``'api_key'`` as an alias, ``api-key`` connections
for models and MCP tools, agent providers, and the parse errors of the draft's malformed
statements."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from flink_agents.errors import ConfigurationError, SqlParseError
from flink_agents.sql.catalog import CatalogAgent, ObjectIdentifier
from flink_agents.sql.models import model_resources
from flink_agents.sql.options import (
    agent_settings,
    check_connection_options,
    check_tool_options,
    mcp_server_arguments,
    normalized,
)
from flink_agents.sql.parser import parse_statement
from flink_agents.sql.providers import (
    AgentProvider,
    AgentProviderContext,
    DefaultAgentProvider,
    agent_provider,
    register_agent_provider,
)

KEY = "sk-draft-never-shown-31"


# -- api_key / api-key --------------------------------------------------------------------------


def test_api_key_is_an_alias_of_api_key() -> None:
    assert normalized({"api_key": "k", "model": "m"}) == {"api-key": "k", "model": "m"}
    assert normalized({"api_key_env": "V"}) == {"api-key-env": "V"}
    with pytest.raises(ConfigurationError, match="option 'api-key' is given twice"):
        normalized({"api-key": "a", "api_key": "b"})
    model = model_resources("m", {"provider": "openai", "model": "gpt-4o", "api_key": KEY})
    assert model.connection.arguments["api_key"] == KEY
    check_connection_options({"type": "openai", "api_key": KEY})
    check_connection_options({"type": "mcp", "endpoint": "http://h/mcp", "api_key": KEY})


def test_api_key_connections() -> None:
    check_connection_options({"type": "api-key", "api-key": KEY})
    check_connection_options({"type": "api_key", "api_key": KEY})  # the draft's spelling
    check_connection_options({"type": "API-KEY", "api-key-env": "OPENAI_API_KEY"})
    with pytest.raises(ConfigurationError, match="needs either 'api-key'.*or 'api-key-env'"):
        check_connection_options({"type": "api-key"})
    with pytest.raises(ConfigurationError, match="not both"):
        check_connection_options({"type": "api-key", "api-key": KEY, "api-key-env": "V"})
    with pytest.raises(ConfigurationError, match="unknown option 'endpoint' for an api-key"):
        check_connection_options({"type": "api-key", "api-key": KEY, "endpoint": "x"})


def test_a_model_takes_its_key_from_an_api_key_connection() -> None:
    options = {"provider": "openai", "model": "gpt-4o", "connection": "keys"}
    model = model_resources("m", options, {"type": "api-key", "api-key": KEY})
    assert model.connection.arguments["api_key"] == KEY
    own = model_resources("m", {**options, "api-key": "own"}, {"type": "api-key", "api-key": KEY})
    assert own.connection.arguments["api_key"] == "own"  # the model's own wins
    with pytest.raises(ConfigurationError, match="of type 'mcp', not 'openai' \\(or 'api-key'"):
        model_resources("m", options, {"type": "mcp", "endpoint": "http://h"})


def test_mcp_tools_over_an_api_key_connection() -> None:
    tool = {"type": "mcp", "endpoint": "https://h/mcp", "allowed_tools": "tool1,tool2"}
    check_tool_options("mcp", tool, "api-key")
    with pytest.raises(ConfigurationError, match="needs the server's address in its own"):
        check_tool_options("mcp", {"type": "mcp", "allowed_tools": "a"}, "api-key")
    with pytest.raises(ConfigurationError, match="names the server itself"):
        check_tool_options("mcp", tool, "mcp")
    arguments = mcp_server_arguments({"type": "api-key", "api_key": KEY}, tool)
    assert arguments == {"url": "https://h/mcp", "headers": {"Authorization": f"Bearer {KEY}"}}


# -- agent providers ----------------------------------------------------------------------------


def test_default_provider_and_its_options() -> None:
    settings = agent_settings({"provider": "default", "memory-turns": "2", "max-iterations": "3"})
    assert (settings.provider, settings.memory_turns) == ("default", 2)
    assert settings.config == {"max-iterations": 3}
    assert settings.options == {"memory-turns": "2"}
    assert agent_settings({}).provider == "default"
    with pytest.raises(ConfigurationError, match="unknown option 'colour' for an agent"):
        agent_settings({"provider": "default", "colour": "red"})
    with pytest.raises(ConfigurationError, match="cannot be changed per call"):
        agent_settings({}, {"provider": "default"})


def test_unknown_and_custom_providers() -> None:
    with pytest.raises(
        ConfigurationError, match=r"unknown agent provider 'nope'; known: .*default"
    ):
        agent_settings({"provider": "nope"})
    shout = agent_settings({"provider": "tests.sql.providers:Shout", "suffix": "?"})
    assert (shout.provider, shout.options, shout.memory_turns) == (
        "tests.sql.providers:Shout",
        {"suffix": "?"},
        0,
    )
    with pytest.raises(ConfigurationError, match="unknown option\\(s\\) \\['memory-turns'\\]"):
        agent_settings({"provider": "tests.sql.providers:Shout", "memory-turns": "3"})
    with pytest.raises(ConfigurationError, match="cannot be loaded: ModuleNotFoundError"):
        agent_provider("no_such_module_xyz:Provider")
    with pytest.raises(ConfigurationError, match="not an AgentProvider"):
        agent_provider("tests.sql.providers:shout")


class Echo(AgentProvider):
    def create_agent(self, context: AgentProviderContext) -> Any:
        raise NotImplementedError


@pytest.fixture
def registered() -> Iterator[None]:
    from flink_agents.sql import providers

    register_agent_provider("Echo", Echo)
    yield
    providers._registered.pop("echo", None)


def test_registered_and_entry_point_providers(
    registered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(agent_provider("echo"), Echo)
    with pytest.raises(ConfigurationError, match="unknown option 'x' for agent provider Echo"):
        agent_settings({"provider": "ECHO", "x": "1"})
    with pytest.raises(ValueError, match="cannot register"):
        register_agent_provider("default", Echo)

    class EntryPoint:
        name = "fromplugin"

        def load(self) -> type[AgentProvider]:
            return Echo

    import importlib.metadata

    real = importlib.metadata.entry_points

    def entry_points(**kwargs: Any) -> Any:
        if kwargs.get("group") == "flink_agents.sql.agent_providers":
            return [EntryPoint()]
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    assert isinstance(agent_provider("fromplugin"), Echo)


def test_the_default_provider_makes_our_agent() -> None:
    from flink_agents.sql.agent import SqlAgent

    model = model_resources("m", {"provider": "openai", "model": "gpt-4o", "api-key": KEY})
    ident = ObjectIdentifier("c", "d", "a")
    context = AgentProviderContext(
        identifier=ident,
        agent=CatalogAgent(model=ObjectIdentifier("c", "d", "m"), prompt="Be brief."),
        model=model,
        tool_names=("t1",),
        columns=("id", "q"),
        column=1,
        partitioned=True,
        options={"memory-turns": "4"},
    )
    agent = DefaultAgentProvider().create_agent(context)
    assert isinstance(agent, SqlAgent)
    config = agent.actions["sql_start_action"].config
    assert config == {"prompt": "Be brief.", "column": 1, "memory_turns": 4}
    keyless = DefaultAgentProvider().create_agent(
        AgentProviderContext(**{**context.__dict__, "partitioned": False})
    )
    assert keyless.actions["sql_start_action"].config["memory_turns"] == 0


# -- the draft's malformed statements -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "CREATE FUNCTION convert_to_celsius\nUSING JAR 'celsius.jar'\n"
            "COMMENT 'function to convert degree to celsius'",
            "write CREATE FUNCTION convert_to_celsius AS 'com.example.MyFunction' [LANGUAGE "
            "JAVA] USING JAR 'celsius.jar', without COMMENT",
        ),
        ("CREATE TEMPORARY SYSTEM FUNCTION f", "CREATE FUNCTION f needs the class"),
        ("CREATE FUNCTION IF NOT EXISTS db.f LANGUAGE JAVA", "CREATE FUNCTION db.f needs the"),
        (
            "CREATE FUNCTION f AS 'a.B' LANGUAGE JAVA USING JAR 'x.jar' COMMENT 'c'",
            "Flink's CREATE FUNCTION has no COMMENT clause",
        ),
        (
            "CREATE TOOL t WITH ('type' = 'mcp', 'allowed_tools' = 'tool1,tool2'\n"
            "  'read_timeout' = '30s')",
            "line 2, column 3: expected ',' between options 'allowed_tools' and 'read_timeout'",
        ),
    ],
)
def test_malformed_draft_statements_say_what_to_write(text: str, message: str) -> None:
    with pytest.raises(SqlParseError) as info:
        parse_statement(text)
    assert message in str(info.value), str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "CREATE FUNCTION f AS 'com.example.F' LANGUAGE JAVA USING JAR 'celsius.jar'",
        "CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS f AS 'x.y' LANGUAGE PYTHON",
        "CREATE TABLE t (comment STRING) WITH ('connector' = 'datagen')",
        "CREATE FUNCTION `my fn` AS 'a.B'",
    ],
)
def test_well_formed_create_function_goes_to_flink(text: str) -> None:
    assert parse_statement(text) is None
