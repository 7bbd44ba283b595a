"""Agents, tools and provider descriptions shared by the integration tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import ErrorEvent, InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.integrations.chat_models.anthropic.anthropic_chat_model import (
    AnthropicChatModelConnection,
    AnthropicChatModelSetup,
)
from flink_agents.integrations.chat_models.ollama_chat_model import (
    OllamaChatModelConnection,
    OllamaChatModelSetup,
)
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.testing import servers as fs

FAST = {"retry_initial_backoff": 0.01, "retry_max_backoff": 0.05, "timeout": 2.0}


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


def divide(a: float, b: float) -> float:
    """Divide a by b.

    Args:
        a: dividend.
        b: divisor.
    """
    return a / b


class ChatAgent(Agent):
    """Sends the input to the chat model setup ``model``; outputs the final answer."""

    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(
                model="model", messages=[ChatMessage(role=MessageRole.USER, content=event.input)]
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            OutputEvent(
                output={"content": event.response.content, "extra": event.response.extra_args}
            )
        )

    @action(ErrorEvent)
    @staticmethod
    def failed(event: ErrorEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output={"error": event.error, "type": event.error_type}))


def run_agent(agent: Agent, inputs: list[Any], **config: Any) -> list[dict[str, Any]]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    for k, v in config.items():
        env.get_config().set_str(k, v)
    out = env.from_list(inputs).apply(agent).to_list()
    env.execute()
    return out


@dataclass
class Provider:
    """How to reach one provider's fake server and read its requests."""

    name: str
    connection: type
    setup: type
    path: str
    base: Callable[[str], dict[str, Any]]
    text_reply: Callable[[str], Any]
    tool_reply: Callable[[str, str, dict[str, Any]], Any]
    setup_args: dict[str, Any]
    error_body: Callable[[str], Any]
    #: tool results sent back in a request: [(call id or name, content)]
    tool_results: Callable[[Any], list[tuple[str, str]]]
    key_header: str | None

    def connection_descriptor(self, url: str, **kw: Any) -> ResourceDescriptor:
        return ResourceDescriptor(clazz=self.connection, **self.base(url), **{**FAST, **kw})

    def make_connection(self, url: str, **kw: Any) -> Any:
        return self.connection(**self.base(url), **{**FAST, **kw})


def _openai_results(body: Any) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _ollama_results(body: Any) -> list[tuple[str, str]]:
    return [(m["tool_name"], m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _anthropic_results(body: Any) -> list[tuple[str, str]]:
    return [
        (b["tool_use_id"], b["content"])
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]


OPENAI = Provider(
    name="openai",
    connection=OpenAIChatModelConnection,
    setup=OpenAIChatModelSetup,
    path="/v1/chat/completions",
    base=lambda url: {"api_base_url": url + "/v1", "api_key": "sk-test-openai-0123456789"},
    text_reply=lambda text: fs.openai_reply(text),
    tool_reply=lambda cid, name, args: fs.openai_reply(None, [(cid, name, args)]),
    setup_args={"model": "gpt-test"},
    error_body=lambda msg: {"error": {"message": msg, "type": "server_error"}},
    tool_results=_openai_results,
    key_header="authorization",
)
OLLAMA = Provider(
    name="ollama",
    connection=OllamaChatModelConnection,
    setup=OllamaChatModelSetup,
    path="/api/chat",
    base=lambda url: {"base_url": url},
    text_reply=lambda text: fs.ollama_reply(text),
    tool_reply=lambda cid, name, args: fs.ollama_reply("", [(name, args)]),
    setup_args={"model": "qwen3"},
    error_body=lambda msg: {"error": msg},
    tool_results=_ollama_results,
    key_header=None,
)
ANTHROPIC = Provider(
    name="anthropic",
    connection=AnthropicChatModelConnection,
    setup=AnthropicChatModelSetup,
    path="/v1/messages",
    base=lambda url: {"base_url": url, "api_key": "sk-ant-test-0123456789"},
    text_reply=lambda text: fs.anthropic_reply(text),
    tool_reply=lambda cid, name, args: fs.anthropic_reply("Let me add.", [(cid, name, args)]),
    setup_args={"model": "claude-test"},
    error_body=lambda msg: {"type": "error", "error": {"type": "api_error", "message": msg}},
    tool_results=_anthropic_results,
    key_header="x-api-key",
)
PROVIDERS = [OPENAI, OLLAMA, ANTHROPIC]


def request_text(body: Any) -> str:
    return json.dumps(body)
