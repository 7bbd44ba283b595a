"""Agents of the tool authorization tests (importable: plans reference them by module path).

The agent has three tools: ``lookup`` (offered by the setup ``model``), ``drop_database``
(side effects; a resource of the agent that no setup offers: what an injected instruction
would ask for) and ``extra`` (offered only when an interceptor adds it). Every tool records
its calls in :data:`RAN`, so a test sees that a refused tool never ran.
"""

from __future__ import annotations

import json
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action, tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.hooks import HookContext
from flink_agents.api.interceptors import ModelCallRequest
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

#: Calls of the tools' functions, in order.
RAN: list[str] = []
#: What each model call was offered (tool names), in order.
OFFERED: list[list[str]] = []
#: What ``before_tool`` hooks saw: (tool, side_effects).
SEEN_BY_HOOK: list[tuple[str, bool]] = []
#: Switches of the interceptors.
SWITCHES = {"hide_lookup": True}


def lookup(word: str) -> str:
    """Look a word up.

    Args:
        word: the word.
    """
    RAN.append(f"lookup:{word}")
    return f"{word} is a word"


def drop_database(name: str) -> str:
    """Drop a database.

    Args:
        name: the database.
    """
    RAN.append(f"drop_database:{name}")
    return "dropped"


def extra(x: int) -> int:
    """Double a number.

    Args:
        x: the number.
    """
    RAN.append(f"extra:{x}")
    return 2 * x


def scripted(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """First call: the tool calls the user message lists (``{"calls": [[name, args]...]}``);
    after the tool results: each result as ``name[id]=content``, joined by ``; ``."""
    OFFERED.append(sorted(t.name for t in tools or []))
    last = messages[-1]
    if last.role is MessageRole.TOOL:
        return "; ".join(
            f"{m.extra_args.get('name')}[{m.extra_args.get('tool_call_id')}]={m.content}"
            for m in messages
            if m.role is MessageRole.TOOL
        )
    request = json.loads(last.content)
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(request["calls"])
        ],
    }


class GuardedAgent(Agent):
    """Asks the setup ``model`` (extra request fields from the input's ``request``); outputs
    the final answer."""

    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(
                model="model",
                messages=[ChatMessage(role=MessageRole.USER, content=json.dumps(event.input))],
                **event.input.get("request", {}),
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.response.content))


class DirectToolAgent(Agent):
    """Sends its own ToolRequestEvent (the input gives model, calls and maybe
    ``offered_tools``) and outputs the responses and errors."""

    @action(InputEvent)
    @staticmethod
    def send(event: InputEvent, ctx: RunnerContext) -> None:
        calls = [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(event.input["calls"])
        ]
        extra_fields = {k: v for k, v in event.input.items() if k == "offered_tools"}
        ctx.send_event(
            ToolRequestEvent(model=event.input["model"], tool_calls=calls, **extra_fields)
        )

    @action(ToolResponseEvent)
    @staticmethod
    def done(event: ToolResponseEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            OutputEvent(
                output={
                    "responses": event.responses,
                    "codes": (event.model_extra or {}).get("error_codes", {}),
                }
            )
        )


def hide_lookup(request: ModelCallRequest, call_next: Any) -> Any:
    """Model interceptor: offers no ``lookup`` while the switch is on."""
    if SWITCHES["hide_lookup"]:
        request.tools = [t for t in request.tools if t.name != "lookup"]
    return call_next(request)


def add_extra(request: ModelCallRequest, call_next: Any) -> Any:
    """Model interceptor: offers the tool ``extra`` too."""
    request.tools = [*request.tools, FunctionTool.from_callable(extra)]
    return call_next(request)


def note_side_effects(hc: HookContext) -> None:
    """``before_tool`` hook: records what it sees."""
    SEEN_BY_HOOK.append((hc.tool or "", hc.side_effects))


def approve_side_effects(hc: HookContext) -> None:
    """``before_tool`` hook: a human decides on every call that changes the world."""
    if hc.side_effects:
        hc.require_approval()


def guarded_agent(
    *,
    base: Agent | None = None,
    interceptors: tuple[Any, ...] = (),
    hooks: tuple[Any, ...] = (),
    offered: tuple[str, ...] = ("lookup",),
) -> Agent:
    """A :class:`GuardedAgent` (or ``base``) with its model and tools (``drop_database`` is
    offered by the setup ``admin`` only, which the agent never asks)."""
    agent = base if base is not None else GuardedAgent()
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond="tests.runtime.authorization_agents:scripted",
        ),
    )
    agent.add_resource(
        "model",
        ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn", tools=list(offered)),
    )
    agent.add_resource(
        "admin",
        ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="conn", tools=["lookup", "drop_database"]
        ),
    )
    agent.add_resource("lookup", FunctionTool.from_callable(lookup))
    agent.add_resource(
        "drop_database", FunctionTool.from_callable(drop_database, side_effects=True)
    )
    agent.add_resource("extra", FunctionTool.from_callable(extra))
    for interceptor in interceptors:
        agent.add_model_interceptor(interceptor)
    for i, hook in enumerate(hooks):
        agent.add_hook(f"hook{i}", "before_tool", hook)
    return agent


@tool(side_effects=True)
def marked(x: int) -> int:
    """A tool marked by the decorator.

    Args:
        x: a number.
    """
    return x
