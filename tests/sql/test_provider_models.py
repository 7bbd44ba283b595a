"""``CREATE MODEL ... WITH ('provider' = ...)`` for the cloud providers: options map onto
the connection and setup, secrets are masked in what is shown and kept out of the plan, and
a model created that way answers through the provider's stand-in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flink_agents.api.resource import ResourceDescriptor
from flink_agents.errors import ConfigurationError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.sql.models import model_resources
from flink_agents.sql.options import MASK, check_connection_options, masked
from flink_agents.testing.servers import Reply, ScriptedServer
from tests.integrations import agents
from tests.integrations.agents import ChatAgent

SECRET = "top-secret-value-0123456789"


def _resources(options: dict[str, str], connection: dict[str, str] | None = None) -> Any:
    return model_resources("m", options, connection)


def test_each_provider_maps_its_options():
    azure = _resources(
        {
            "provider": "azure_openai",
            "endpoint": "https://res.openai.azure.com",
            "api-version": "2024-10-21",
            "model": "gpt-dep",
            "api-key": SECRET,
            "seed": "3",
            "api": "responses",
        }
    )
    assert azure.connection.arguments["azure_endpoint"] == "https://res.openai.azure.com"
    assert azure.connection.arguments["api_version"] == "2024-10-21"
    assert azure.connection.arguments["api"] == "responses"
    assert azure.setup_arguments == {"model": "gpt-dep", "additional_kwargs": {"seed": 3}}

    vllm = _resources(
        {"provider": "vllm", "endpoint": "http://gpu:8000/v1/chat/completions", "model": "q"}
        | {"top-k": "20"}
    )
    assert vllm.connection.arguments == {"api_base_url": "http://gpu:8000/v1"}
    assert vllm.setup_arguments == {"model": "q", "top_k": 20}

    tongyi = _resources({"provider": "tongyi", "api-key": SECRET, "max-tokens": "100"})
    assert tongyi.connection.arguments == {"api_key": SECRET}
    assert tongyi.setup_arguments == {"max_tokens": 100}

    bedrock = _resources(
        {
            "provider": "bedrock",
            "region": "eu-west-1",
            "model": "anthropic.claude",
            "access-key-id": "AKID",
            "secret-access-key": SECRET,
            "top-p": "0.9",
        }
    )
    assert bedrock.connection.arguments == {
        "region": "eu-west-1",
        "aws_access_key_id": "AKID",
        "aws_secret_access_key": SECRET,
    }
    assert bedrock.setup_arguments == {"model": "anthropic.claude", "top_p": 0.9}

    gemini = _resources(
        {
            "provider": "gemini",
            "model": "gemini-2.5-flash",
            "vertex-ai": "true",
            "project": "p",
            "location": "europe-west4",
            "access-token": SECRET,
        }
    )
    assert gemini.connection.arguments == {
        "vertex_ai": True,
        "project": "p",
        "location": "europe-west4",
        "access_token": SECRET,
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"provider": "bedrock"}, "a bedrock model needs a 'model' option"),
        (
            {"provider": "bedrock", "model": "x", "access-key-id": "AKID"},
            "'access-key-id' and 'secret-access-key'",
        ),
        ({"provider": "gemini", "model": "g", "vertex-ai": "maybe"}, "must be true or false"),
        ({"provider": "openai", "api": "assistants"}, "must be chat_completions or responses"),
        ({"provider": "vllm", "region": "x", "model": "m"}, "unknown option 'region'"),
        ({"provider": "azure_openai"}, "a azure_openai model needs a 'model' option"),
    ],
)
def test_bad_options_are_clear_errors(options: dict[str, str], message: str):
    with pytest.raises(ConfigurationError, match=message):
        _resources(options)


@pytest.mark.parametrize(
    "options",
    [
        {"type": "azure_openai", "endpoint": "https://r", "api-key": SECRET},
        {"type": "vllm", "endpoint": "http://h/v1", "api-key": SECRET},
        {"type": "tongyi", "api-key": SECRET},
        {"type": "bedrock", "access-key-id": "AKID", "secret-access-key": SECRET},
        {"type": "bedrock", "session-token": SECRET, "profile": "p"},
        {"type": "gemini", "api-key": SECRET},
        {"type": "gemini", "vertex-ai": "true", "access-token": SECRET},
    ],
    ids=lambda o: o["type"],
)
def test_connection_secrets_are_masked_and_kept_out_of_the_plan(options: dict[str, str]):
    check_connection_options(options)
    shown = masked(options)
    assert SECRET not in json.dumps(shown) and MASK in shown.values()
    provider = options["type"]
    model = {"provider": provider, "connection": "c", "model": "m"}
    resources = _resources(model, options)
    agent = ChatAgent()
    agent.add_resource("conn", resources.connection)
    agent.add_resource("model", resources.setup("conn", []))
    plan = AgentPlan.from_agent(agent)
    assert SECRET not in plan.model_dump_json()
    assert SECRET in json.dumps(plan.secrets)  # it travels beside the plan, to the task


def test_a_sql_defined_bedrock_model_answers_through_the_converse_api():
    provider = agents.BEDROCK
    with ScriptedServer([Reply(provider.text_reply("from Bedrock"))]) as server:
        resources = _resources(
            {
                "provider": "bedrock",
                "endpoint": server.url,
                "region": "eu-central-1",
                "model": "claude-test",
                "access-key-id": "AKIDTEST0123",
                "secret-access-key": agents.BEDROCK_SECRET,
                "max-retries": "0",
                "timeout": "5s",
            }
        )
        agent = ChatAgent()
        agent.add_resource("conn", resources.connection)
        agent.add_resource("model", resources.setup("conn", []))
        out = agents.run_agent(agent, [{"key": "k", "value": "hi"}])
    assert out[0]["k"]["content"] == "from Bedrock"
    provider.check_auth(server.requests[0])
    assert isinstance(resources.connection, ResourceDescriptor)
