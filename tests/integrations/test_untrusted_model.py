"""The model is untrusted, checked at the wire of every provider: a tool name the model was
not offered never runs; the text we build for the model (tool errors, text ReAct's
observations, chat-history summaries) reaches the server without a plan secret."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.chat_history import ChatHistory
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action
from flink_agents.api.events.chat_event import ChatRequestEvent
from flink_agents.api.events.event import InputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.testing import servers as fs
from flink_agents.testing.servers import Reply, ScriptedServer
from tests.integrations import agents
from tests.integrations.agents import OPENAI, ChatAgent, Provider
from tests.integrations.every_provider import every_provider, secret_of

#: The key of another connection of the plan (never used for a call): a plan secret.
BILLING_KEY = "sk-billing-SECRET-4711-abcdef"
#: Tool functions' calls.
RAN: list[str] = []

by_provider = pytest.mark.parametrize("p", every_provider())


@pytest.fixture(autouse=True)
def _fresh():
    RAN.clear()


def lookup(word: str) -> str:
    """Look a word up.

    Args:
        word: the word.
    """
    RAN.append(f"lookup:{word}")
    return f"{word}: found"


def drop_database(name: str) -> str:
    """Drop a database.

    Args:
        name: which.
    """
    RAN.append(f"drop_database:{name}")
    return "dropped"


def charge(amount: int) -> str:
    """Charge a card; fails with the keys in its message, as careless code does.

    Args:
        amount: how much.
    """
    raise ConnectionError(
        f"billing refused {amount}: key {BILLING_KEY} invalid; "
        f"other keys tried: {' '.join(OWN_KEYS)}"
    )


#: The keys of the provider connections of the tests (the tool's error names all of them).
OWN_KEYS: list[str] = [s for p in every_provider() if (s := secret_of(p.values[0]))]


def _secrets_of(p: Provider) -> list[str]:
    own = secret_of(p)
    return [BILLING_KEY, *([own] if own else [])]


def _agent(p: Provider, server: ScriptedServer, tools: list[str]) -> ChatAgent:
    agent = ChatAgent()
    agent.add_resource("conn", p.connection_descriptor(server.url))
    agent.add_resource(
        "model", ResourceDescriptor(clazz=p.setup, connection="conn", tools=tools, **p.setup_args)
    )
    agent.add_resource(
        "billing", ResourceDescriptor(clazz=OpenAIChatModelConnection, api_key=BILLING_KEY)
    )
    agent.add_resource("lookup", FunctionTool.from_callable(lookup))
    agent.add_resource("drop_database", FunctionTool.from_callable(drop_database))
    agent.add_resource("charge", FunctionTool.from_callable(charge))
    return agent


def _ids(p: Provider, name: str) -> str:
    # Ollama's calls have no ids: results go back by tool name.
    return name if p.name == "ollama" else f"call_{name}"


@by_provider
def test_a_tool_name_the_model_was_not_offered_never_runs(p: Provider):
    # The model asks for drop_database (what an injected instruction would ask for): a tool
    # of the agent that this setup does not offer.
    call_id = getattr(p, "call_id", None) or _ids(p, "drop_database")

    def respond(request: Any) -> Reply:
        if not p.tool_results(request.body):
            return Reply(p.tool_reply(call_id, "drop_database", {"name": "prod"}))
        return Reply(p.text_reply("ok"))

    with ScriptedServer(respond=respond) as server:
        out = agents.run_agent(_agent(p, server, ["lookup"]), [{"key": "k", "value": "go"}])
    assert RAN == []
    assert [o["k"]["content"] for o in out] == ["ok"]
    assert "lookup" in json.dumps(server.requests[0].body)
    assert "drop_database" not in json.dumps(server.requests[0].body)  # not offered
    ((_, result),) = p.tool_results(server.requests[1].body)
    assert result == "Error: unknown tool 'drop_database'; the tools you can call are: lookup"


@by_provider
def test_a_tool_error_reaches_the_provider_without_plan_secrets(p: Provider):
    call_id = getattr(p, "call_id", None) or _ids(p, "charge")

    def respond(request: Any) -> Reply:
        if not p.tool_results(request.body):
            return Reply(p.tool_reply(call_id, "charge", {"amount": 30}))
        return Reply(p.text_reply("sorry, billing is down"))

    with ScriptedServer(respond=respond) as server:
        out = agents.run_agent(_agent(p, server, ["charge"]), [{"key": "k", "value": "pay"}])
    assert [o["k"]["content"] for o in out] == ["sorry, billing is down"]
    sent = json.dumps(server.requests[1].body)
    for secret in _secrets_of(p):
        assert secret not in sent
    ((_, error),) = p.tool_results(server.requests[1].body)
    assert error.startswith("Error: tool 'charge' failed: ConnectionError: billing refused 30")
    assert "key *** invalid" in error


def _react_replies(request: Any) -> Reply:
    users = [m for m in request.body["messages"] if m["role"] == "user"]
    if not users[-1]["content"].startswith("Observation:"):
        return Reply(fs.openai_reply('Thought: pay.\nAction: charge\nAction Input: {"amount": 5}'))
    return Reply(fs.openai_reply("Answer: could not pay"))


def test_a_text_react_observation_reaches_the_provider_without_plan_secrets():
    env = AgentsExecutionEnvironment.get_execution_environment()
    with ScriptedServer(respond=_react_replies) as server:
        env.add_resource("conn", OPENAI.connection_descriptor(server.url))
        env.add_resource(
            "billing", ResourceDescriptor(clazz=OpenAIChatModelConnection, api_key=BILLING_KEY)
        )
        env.add_resource("charge", FunctionTool.from_callable(charge))
        agent = ReActAgent(
            chat_model=ResourceDescriptor(
                clazz=OpenAIChatModelSetup, connection="conn", model="m", tools=["charge"]
            ),
            tool_calling="text",
        )
        out = env.from_list([{"key": "k", "value": "pay 5"}]).apply(agent).to_list()
        env.execute()
    assert out == [{"k": "could not pay"}]
    observation = server.requests[1].body["messages"][-1]["content"]
    assert observation.startswith("Observation: Error: tool 'charge' failed: ConnectionError")
    for secret in _secrets_of(OPENAI):
        assert secret not in json.dumps(server.requests[1].body)


class HistoryAgent(ChatAgent):
    """ChatAgent whose requests keep a history of 2 messages, older turns summarized."""

    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(
                model="model",
                messages=[ChatMessage(role=MessageRole.USER, content=event.input)],
                chat_history=ChatHistory(max_messages=2, overflow="summarize"),  # type: ignore[call-arg]
            )
        )


def test_a_history_summary_request_reaches_the_provider_without_plan_secrets():
    # The model (as if steered) repeats a plan secret in an answer; the answer goes into
    # the key's history, and later requests, the summary request included, mask it.
    def respond(request: Any) -> Reply:
        text = json.dumps(request.body["messages"])
        if "Summarize" in text or "summar" in text.lower():
            return Reply(fs.openai_reply("a summary"))
        return Reply(fs.openai_reply(f"the billing key is {BILLING_KEY}"))

    agent = HistoryAgent()
    with ScriptedServer(respond=respond) as server:
        agent.add_resource("conn", OPENAI.connection_descriptor(server.url))
        agent.add_resource(
            "model", ResourceDescriptor(clazz=OPENAI.setup, connection="conn", **OPENAI.setup_args)
        )
        agent.add_resource(
            "billing", ResourceDescriptor(clazz=OpenAIChatModelConnection, api_key=BILLING_KEY)
        )
        agents.run_agent(agent, [{"key": "k", "value": "first"}, {"key": "k", "value": "second"}])
    bodies = [json.dumps(r.body) for r in server.requests]
    assert len(bodies) >= 3  # first, summary of the first turn, second
    assert any("summar" in b.lower() for b in bodies[1:])
    for body in bodies:
        assert BILLING_KEY not in body
    assert any("the billing key is ***" in b for b in bodies[1:])
