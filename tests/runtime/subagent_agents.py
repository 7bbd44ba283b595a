"""Agents of the sub-agent tests (importable: plans reference their functions by module).

A **team**: a ReAct agent (``coordinator``) whose scripted model delegates each question to
the sub-agent ``researcher`` (a ReAct agent of its own, called as a tool), whose scripted
model calls the tool ``lookup`` and answers with what it found. Each input is a dict
``{"id": ..., "q": ..., "log": path}``; every model call really made is appended to the
``log`` file as ``{"model", "id", "q", "step"}`` (the workers of a Flink job may be other
processes), so a test sees whether a call was made twice. Replies report token usage.

A **workflow**: an action that calls sub-agents with ``ctx.call_agent`` (a counter keeping
per-key short-term memory, a failing one), and agents that nest or call themselves.
"""

from __future__ import annotations

import json
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.resource import Resource, ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.agent_tool import AgentTool
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

#: Token usage every scripted reply reports.
PARENT_USAGE = {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
CHILD_USAGE = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
#: Tool calls made in this process (``lookup``), in order.
LOOKUPS: list[str] = []
#: Tool calls an interceptor saw (``(interceptor, tool name)``), in order.
INTERCEPTED: list[tuple[str, str]] = []


def _question(messages: list[ChatMessage]) -> dict[str, Any]:
    first = next(m for m in messages if m.role == MessageRole.USER)
    return dict(json.loads(first.content))


def _log(doc: dict[str, Any], model: str, step: int) -> None:
    if doc.get("log"):
        with open(doc["log"], "a", encoding="utf-8") as fh:
            line = {"model": model, "id": doc["id"], "q": doc["q"], "step": step}
            fh.write(json.dumps(line) + "\n")


def _tool_results(messages: list[ChatMessage]) -> list[str]:
    return [m.content for m in messages if m.role == MessageRole.TOOL]


def _reply(content: str, usage: dict[str, int], **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "extra_args": {"usage": usage}, **extra}


def _call(name: str, usage: dict[str, int], **arguments: Any) -> dict[str, Any]:
    call = {"type": "function", "function": {"name": name, "arguments": arguments}}
    return _reply("", usage, tool_calls=[call])


def coordinator_reply(messages: list[ChatMessage], tools: Any) -> dict[str, Any]:
    """Delegates the question to ``researcher``, then answers with its result."""
    doc = _question(messages)
    results = _tool_results(messages)
    _log(doc, "coordinator", len(results) + 1)
    if not results:
        task = {"id": doc["id"], "q": doc["q"], "log": doc.get("log"), "tool": doc.get("tool")}
        return _call("researcher", PARENT_USAGE, input=json.dumps(task))
    return _reply(f"{doc['id']}: {results[-1]}", PARENT_USAGE)


def researcher_reply(messages: list[ChatMessage], tools: Any) -> dict[str, Any]:
    """Looks the question up (``lookup``, or the tool ``tool`` of the question), then
    answers with what it found."""
    doc = _question(messages)
    results = _tool_results(messages)
    _log(doc, "researcher", len(results) + 1)
    if not results:
        return _call(doc.get("tool") or "lookup", CHILD_USAGE, q=doc["q"])
    return _reply(f"found {results[-1]}", CHILD_USAGE)


def lookup(q: str) -> str:
    """Look a question up.

    Args:
        q: the question.
    """
    LOOKUPS.append(q)
    return f"<{q}>"


def researcher(*, latency: float = 0.0, approval: bool = False) -> ReActAgent:
    """The sub-agent: a ReAct agent with the tool ``lookup`` (which needs a human's
    approval with ``approval``)."""
    agent = ReActAgent(
        ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="researcher_model", tools=["lookup"]
        ),
        name="researcher",
        description="Finds facts about a question.",
    )
    agent.add_resource(
        "researcher_model",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond=researcher_reply,
            name="researcher",
            latency=latency,
        ),
    )
    agent.add_resource(
        "lookup",
        FunctionTool.from_callable(lookup).model_copy(update={"requires_approval": approval}),
    )
    return agent


def team(
    *, latency: float = 0.0, approval: bool = False, as_tool: bool = True, **tool: Any
) -> ReActAgent:
    """The coordinator with its sub-agent ``researcher``: an ``AgentTool`` (with ``tool``'s
    arguments), or (``as_tool=False``) an ``AGENT`` resource its setup lists as a tool."""
    agent = ReActAgent(
        ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="coordinator_model", tools=["researcher"]
        ),
        name="coordinator",
    )
    agent.add_resource(
        "coordinator_model",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond=coordinator_reply,
            name="coordinator",
            latency=latency,
        ),
    )
    sub = researcher(latency=latency, approval=approval)
    if as_tool:
        agent.add_resource("researcher", AgentTool(sub, **tool))
    else:
        agent.add_resource("researcher", ResourceType.AGENT, sub)
    return agent


def question(i: int, log: str | None = None, **extra: Any) -> dict[str, Any]:
    """Input ``i`` of the team (keys ``k0``..``k2``)."""
    return {"id": f"k{i % 3}", "q": f"q{i}", "log": log, **extra}


def expected_answer(record: dict[str, Any]) -> str:
    """What the team answers to ``record``."""
    return f"{record['id']}: found <{record['q']}>"


# -- a workflow calling sub-agents from an action ---------------------------------------------
async def delegate(event: InputEvent, ctx: RunnerContext) -> None:
    """Calls the sub-agents the input names (``{"call": [name, ...], "value": ...}``) in
    turn, each on the previous one's output; outputs the last result."""
    value = event.input["value"]
    for name in event.input["call"]:
        value = await ctx.call_agent(name, value)
    ctx.short_term_memory.set("delegated", (ctx.short_term_memory.get("delegated") or 0) + 1)
    ctx.send_event(OutputEvent(output=value))


def count(event: InputEvent, ctx: RunnerContext) -> None:
    """Counts its calls per key in its own short-term memory; outputs ``value#count``."""
    memory = ctx.short_term_memory
    n = (memory.get("calls") or 0) + 1
    memory.set("calls", n)
    memory.set("stats.last", event.input)
    ctx.send_event(OutputEvent(output=f"{event.input}#{n}"))


def twice(event: InputEvent, ctx: RunnerContext) -> None:
    """Outputs its input twice."""
    ctx.send_event(OutputEvent(output=event.input))
    ctx.send_event(OutputEvent(output=event.input))


def fail(event: InputEvent, ctx: RunnerContext) -> None:
    raise ValueError(f"cannot handle {event.input!r}")


def single(name: str, func: Any) -> Agent:
    """An agent with one action on its input."""
    agent = Agent()
    agent.name = name
    agent.add_action(name, InputEvent, func)
    return agent


def workflow() -> Agent:
    """:func:`delegate` with the sub-agents ``counter``, ``twice`` and ``failing``."""
    agent = Agent()
    agent.add_action("delegate", InputEvent, delegate)
    agent.add_resource("counter", ResourceType.AGENT, single("counter", count))
    agent.add_resource("twice", ResourceType.AGENT, single("twice", twice))
    agent.add_resource("failing", ResourceType.AGENT, single("failing", fail))
    return agent


async def deeper(event: InputEvent, ctx: RunnerContext) -> None:
    """Calls the sub-agent ``deeper`` (itself, found in the plan around it) until the input
    counts down to 0; outputs the depth reached."""
    n = int(event.input)
    if n <= 0:
        ctx.send_event(OutputEvent(output=0))
        return
    ctx.send_event(OutputEvent(output=1 + int(await ctx.call_agent("deeper", n - 1))))


def recursive() -> Agent:
    """An agent whose sub-agent ``deeper`` calls itself (the depth limit bounds it)."""
    agent = Agent()
    agent.add_action("start", InputEvent, deeper)
    agent.add_resource("deeper", ResourceType.AGENT, single("deeper", deeper))
    return agent


def chain(depth: int) -> Agent:
    """Agents nested ``depth`` deep, each calling its one sub-agent ``inner``."""
    agent = single("leaf", count)
    for _ in range(depth):
        outer = Agent()
        outer.add_action("call_inner", InputEvent, call_inner)
        outer.add_resource("inner", ResourceType.AGENT, agent)
        agent = outer
    return agent


async def call_inner(event: InputEvent, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=await ctx.call_agent("inner", event.input)))


# -- interceptors --------------------------------------------------------------------------------
async def env_tool_interceptor(request: Any, call_next: Any) -> Any:
    INTERCEPTED.append(("env", request.tool_name))
    return await call_next(request)


async def coordinator_tool_interceptor(request: Any, call_next: Any) -> Any:
    INTERCEPTED.append(("coordinator", request.tool_name))
    return await call_next(request)


# -- secrets --------------------------------------------------------------------------------------
class KeyedService(Resource):
    """A resource with a secret argument (never in the plan's JSON)."""

    api_key: str
    region: str = "eu"

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.VECTOR_STORE


def with_secret(agent: Agent, name: str, key: str) -> Agent:
    """``agent`` with a :class:`KeyedService` ``name`` holding ``key``."""
    agent.add_resource(name, ResourceDescriptor(clazz=KeyedService, api_key=key))
    return agent


# -- workflow actions around the built-in chat action (YAML agents use them) -------------------
def ask(event: InputEvent, ctx: RunnerContext) -> None:
    """Sends the input (JSON) to the chat model setup ``model`` (its tools are offered)."""
    ctx.send_event(
        ChatRequestEvent(
            model="model",
            messages=[ChatMessage(role=MessageRole.USER, content=json.dumps(event.input))],
        )
    )


def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    """Outputs the model's answer."""
    ctx.send_event(OutputEvent(output=event.response.content))
