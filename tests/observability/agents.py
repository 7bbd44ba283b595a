"""A tool-calling agent for the observability tests (importable by Flink's Python workers).

Per input: InputEvent -> ask (sends an ``audit`` event and a ChatRequestEvent) -> model asks
for tool ``lookup`` -> tool -> model answers -> ChatResponseEvent -> answer -> OutputEvent.
That is 7 events (8 with the sensory write event of the tool loop: memory events) and 6
action executions per input; the scripted model reports 10 + 20
prompt and 2 + 5 completion tokens. An input with ``hold`` set waits (a durable call) until
that file exists, so a Flink job stays running while a test reads its metrics.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.resource import Resource, ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.testing.scripted_chat_model import (
    ScriptedChatModelConnection,
    ScriptedChatModelSetup,
    tool_call,
)

#: Per input: events processed and actions executed (see the module docstring); the
#: events include the sensory write event of the chat action's tool loop (memory events).
EVENTS_PER_INPUT = 8
ACTIONS_PER_INPUT = 6
PROMPT_TOKENS_PER_INPUT = 30
COMPLETION_TOKENS_PER_INPUT = 7
SECRET = "sk-obs-SECRET-0123456789"


class Vault(Resource):
    """Holds a secret (kept out of the plan JSON, and so of the event log)."""

    api_key: str

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.TOOL


def lookup(word: str) -> str:
    """Looks a name up.

    Args:
        word: what to look up.
    """
    return f"{word} is {len(word)} letters long; " + "x" * 3000


def respond(messages: list[ChatMessage], tools: Any) -> dict[str, Any]:
    """First call: ask for the tool; second call (after the tool's answer): answer."""
    if messages[-1].role == MessageRole.TOOL:
        return {
            "role": "assistant",
            "content": f"answer: {messages[-1].content[:20]}",
            "extra_args": {"usage": {"prompt_tokens": 20, "completion_tokens": 5}},
        }
    reply = tool_call("lookup", word=messages[-1].content)
    reply["extra_args"] = {"usage": {"prompt_tokens": 10, "completion_tokens": 2}}
    return reply


async def wait_for(path: str) -> bool:
    while not os.path.exists(path):
        await asyncio.sleep(0.05)
    return True


async def ask(event: InputEvent, ctx: RunnerContext) -> None:
    record = event.input
    if isinstance(record, dict) and record.get("hold"):
        await ctx.durable_execute_async(wait_for, record["hold"])
    name = record["name"] if isinstance(record, dict) else str(record)
    vault = ctx.get_resource("vault", ResourceType.TOOL)
    key = vault.api_key  # type: ignore[attr-defined]
    ctx.send_event(Event(type="audit", attributes={"api_key": key, "note": f"called with {key}"}))
    ctx.send_event(
        ChatRequestEvent(model="model", messages=[ChatMessage(role=MessageRole.USER, content=name)])
    )


def note_audit(event: Event, ctx: RunnerContext) -> None:
    ctx.agent_metric_group.get_counter("auditEvents").inc()


def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    ctx.action_metric_group.get_histogram("answerLength").update(len(event.response.content))
    ctx.agent_metric_group.get_meter("answersPerSec").mark()
    ctx.send_event(OutputEvent(output=event.response.content))


def tool_agent() -> Agent:
    """The agent of the module docstring."""
    agent = Agent()
    agent.add_action("ask", InputEvent, ask)
    agent.add_action("note_audit", "audit", note_audit)
    agent.add_action("answer", ChatResponseEvent, answer)
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond="tests.observability.agents:respond"
        ),
    )
    agent.add_resource(
        "model",
        ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn", tools=["lookup"]),
    )
    agent.add_resource("lookup", FunctionTool.from_callable(lookup))
    agent.add_resource("vault", ResourceDescriptor(clazz=Vault, api_key=SECRET))
    return agent


def dump(path: str) -> list[dict[str, Any]]:
    """The JSON lines of a file."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
