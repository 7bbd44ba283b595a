"""A ReAct agent on the OpenAI protocol for the OpenTelemetry tests (importable by Flink's
Python workers).

Per input: the model (an :class:`OpenAIServer` stand-in answering with :func:`respond`) asks
for tool ``lookup``, then answers. ``lookup("mallory")`` fails with a message that holds the
connection's API key (a plan secret) and a URL with a password: neither may reach a span.
"""

from __future__ import annotations

from typing import Any

from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.testing import tool_call
from flink_agents.testing.servers import Request

SECRET = "sk-otel-SECRET-0123456789abcdef"
URL_PASSWORD = "pw-in-a-url-42"
MODEL = "gpt-4o-mini"
AGENT_NAME = "otel_react_agent"
#: Tokens the stand-in reports per model call (its defaults).
PROMPT_TOKENS, COMPLETION_TOKENS = 11, 7


def lookup(word: str) -> str:
    """Looks a name up.

    Args:
        word: what to look up.
    """
    if word == "mallory":
        raise RuntimeError(
            f"lookup refused with key {SECRET} at https://svc:{URL_PASSWORD}@vault.example/db"
        )
    return f"{word} has {len(word)} letters"


def respond(request: Request) -> Any:
    """The stand-in's answer: a tool call first, the final answer after the tool's result."""
    messages = request.body["messages"]
    if messages[-1]["role"] == "tool":
        return f"done: {messages[-1]['content'][:40]}"
    return tool_call("lookup", word=messages[-1]["content"])


def react_agent() -> ReActAgent:
    """The agent of the module docstring (its connection ``openai`` comes from the env)."""
    agent = ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=OpenAIChatModelSetup, connection="openai", model=MODEL, tools=["lookup"]
        ),
        name=AGENT_NAME,
    )
    agent.add_resource("lookup", FunctionTool.from_callable(lookup))
    return agent


def connection(base_url: str) -> ResourceDescriptor:
    """The OpenAI connection to the stand-in, with the secret key."""
    return ResourceDescriptor(
        clazz=OpenAIChatModelConnection, api_base_url=base_url, api_key=SECRET, max_retries=0
    )
