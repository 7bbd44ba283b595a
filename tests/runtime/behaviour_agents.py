"""Interceptors, hooks and agents of the behaviour tests (importable: plans reference them by
module path, as a job on Flink workers needs)."""

from __future__ import annotations

import re
import threading
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_history import ChatHistory
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action, hook, model_interceptor, tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.hooks import HookContext
from flink_agents.api.interceptors import (
    CallNext,
    ModelCallRequest,
    ModelInterceptor,
    ToolCallRequest,
)
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

#: What the interceptors and tools saw, by name (process-wide, reset by the tests).
SEEN: dict[str, list[Any]] = {}
_LOCK = threading.Lock()
EMAIL = re.compile(r"[\w.]+@[\w.]+")


def note(name: str, value: Any) -> None:
    with _LOCK:
        SEEN.setdefault(name, []).append(value)


def reset() -> None:
    with _LOCK:
        SEEN.clear()
        CACHE.clear()
    ScriptedChatModelConnection.reset_counts()


# -- model behaviour of the scripted model -------------------------------------------------
def echo_last(messages: list[ChatMessage], tools: list[Any]) -> str:
    """Answers with what the model was sent last (and the tools it was offered)."""
    names = ",".join(t.name for t in tools)
    return f"echo:{messages[-1].content}" + (f" tools={names}" if names else "")


def scripted_model(respond: Any = echo_last, name: str = "m", tools: list[str] | None = None):
    return {
        "conn": ResourceDescriptor(clazz=ScriptedChatModelConnection, respond=respond, name=name),
        "model": ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="conn", tools=list(tools or [])
        ),
    }


# -- interceptors ------------------------------------------------------------------------------
async def redact_emails(request: ModelCallRequest, call_next: CallNext) -> ChatMessage:
    """Redacts e-mail addresses in what goes to the model and in what comes back."""
    request.messages = [
        m.model_copy(update={"content": EMAIL.sub("<email>", m.content)}) for m in request.messages
    ]
    note("redact", request.messages[-1].content)
    reply: ChatMessage = await call_next(request)
    return reply.model_copy(update={"content": EMAIL.sub("<email>", reply.content)})


CACHE: dict[str, ChatMessage] = {}


async def cache_replies(request: ModelCallRequest, call_next: CallNext) -> ChatMessage:
    """Answers a request seen before from the cache, without calling the model."""
    key = "|".join(m.content for m in request.messages)
    if key in CACHE:
        note("cache", "hit")
        return CACHE[key]
    note("cache", "miss")
    reply: ChatMessage = await call_next(request)
    CACHE[key] = reply
    return reply


def outer(request: ModelCallRequest, call_next: CallNext) -> Any:
    """A plain function that only looks: returns call_next's awaitable."""
    note("order", "outer")
    return call_next(request)


class Inner(ModelInterceptor):
    """A class-style interceptor."""

    async def intercept(self, request: ModelCallRequest, call_next: CallNext) -> ChatMessage:
        note("order", "inner")
        return await call_next(request)


async def broken(request: ModelCallRequest, call_next: CallNext) -> ChatMessage:
    raise ValueError("broken on purpose")


async def block_dangerous_tools(request: ToolCallRequest, call_next: CallNext) -> Any:
    """Refuses tools whose name starts with 'delete'; the model sees the refusal."""
    note("tool_interceptor", (request.tool_name, dict(request.arguments)))
    if request.tool_name.startswith("delete"):
        return f"refused: {request.tool_name} is not allowed"
    request.arguments = {**request.arguments, "b": request.arguments["b"] + 1}
    return await call_next(request)


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    note("tool:add", (a, b))
    return a + b


def delete_all(table: str) -> str:
    """Delete every row of a table.

    Args:
        table: the table.
    """
    note("tool:delete_all", table)
    return "deleted"


def tool_script(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """Calls the tool the input names, then reports the tool results."""
    if messages[-1].role == MessageRole.TOOL:
        return "results: " + ";".join(m.content for m in messages if m.role == MessageRole.TOOL)
    name = messages[-1].content
    args = {"a": 1, "b": 2} if name == "add" else {"table": "users"}
    return {
        "role": "assistant",
        "content": f"I will call {name}",
        "tool_calls": [{"id": "c1", "function": {"name": name, "arguments": args}}],
    }


# -- hooks -------------------------------------------------------------------------------------
def _trail(hc: HookContext, label: str) -> None:
    trail = list(hc.memory.get("trail") or [])
    trail.append(label)
    hc.memory.set("trail", trail)


def before_agent(hc: HookContext) -> None:
    _trail(hc, "before_agent")
    if hc.input == "short-circuit":
        hc.stop("answered by before_agent")
    elif isinstance(hc.input, str):
        hc.input = hc.input.strip()


def after_agent(hc: HookContext) -> None:
    _trail(hc, "after_agent")
    hc.outputs[:] = [{"out": o, "trail": hc.memory.get("trail")} for o in hc.outputs]


def before_model(hc: HookContext) -> None:
    _trail(hc, f"before_model{hc.iteration}")
    if hc.messages[-1].content == "stop-early":
        hc.stop("answered by before_model")
    hc.messages = [
        *hc.messages[:-1],
        hc.messages[-1].model_copy(update={"content": hc.messages[-1].content + "!"}),
    ]


def after_model(hc: HookContext) -> None:
    _trail(hc, f"after_model{hc.iteration}")
    assert hc.response is not None
    if hc.response.content.startswith("echo:halt"):
        hc.stop("halted by after_model")


def failing_hook(hc: HookContext) -> None:
    raise RuntimeError("hook exploded")


# -- agents ------------------------------------------------------------------------------------
def ask(event: InputEvent, ctx: RunnerContext) -> None:
    ctx.send_event(
        ChatRequestEvent(
            model="model", messages=[ChatMessage(role=MessageRole.USER, content=str(event.input))]
        )
    )


def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=event.response.content))


def chat_agent(*, model_interceptors=(), tool_interceptors=(), hooks=()) -> Agent:
    """A workflow agent: the input goes to the model, the answer is the output."""
    agent = Agent()
    agent.add_action("ask", [InputEvent], ask)
    agent.add_action("answer", [ChatResponseEvent], answer)
    for ic in model_interceptors:
        agent.add_model_interceptor(ic)
    for ic in tool_interceptors:
        agent.add_tool_interceptor(ic)
    for name, point, func in hooks:
        agent.add_hook(name, point, func)
    return agent


class DecoratedAgent(Agent):
    """Interceptor and hook declared by decorators."""

    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        ask(event, ctx)

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        answer(event, ctx)

    @model_interceptor
    @staticmethod
    async def shout(request: ModelCallRequest, call_next: CallNext) -> ChatMessage:
        reply: ChatMessage = await call_next(request)
        return reply.model_copy(update={"content": reply.content.upper()})

    @hook("before_agent")
    @staticmethod
    def mark(hc: HookContext) -> None:
        _trail(hc, "decorated")

    @tool
    @staticmethod
    def unused(x: int) -> int:
        """Unused.

        Args:
            x: x.
        """
        return x


# -- one agent with every behaviour (the MiniCluster job) ---------------------------------
def text_react_script(messages: list[ChatMessage], tools: list[Any]) -> str:
    """A text ReAct model: the question names what to do; one malformed reply for 'add'.
    Echoed answers count the earlier questions the chat history put before this one."""
    questions = [
        m.content
        for m in messages
        if m.role == MessageRole.USER and not m.content.startswith("Observation:")
    ]
    question = questions[-1]
    last = messages[-1].content
    if last.startswith("Observation: invalid reply"):
        return "```\nThought: use add\nAction: add\nAction Input: {'a': 2, 'b': 3}\n```"
    if last.startswith("Observation:"):
        return f"Thought: done\nAnswer: {last.splitlines()[0][len('Observation: ') :]}"
    if question.startswith("add"):
        return "I would rather not follow the format"
    if question.startswith("delete_all"):
        return 'Action: delete_all\nAction Input: {"table": "users"}'
    return f"Answer: echo:{question} #{len(questions) - 1}"


def after_agent_keyed(hc: HookContext) -> None:
    _trail(hc, "after_agent")
    hc.outputs[:] = [{"key": hc.key, "out": o, "trail": hc.memory.get("trail")} for o in hc.outputs]


def every_behaviour_agent(count_file: str | None = None) -> Agent:
    """Text ReAct with a redacting and a caching model interceptor, a tool-blocking tool
    interceptor and hooks at every point."""
    from flink_agents.api.agents.react_agent import ReActAgent
    from flink_agents.api.prompts.prompt import Prompt

    setup = ResourceDescriptor(
        clazz=ScriptedChatModelSetup, connection="conn", tools=["add", "delete_all"]
    )
    agent = ReActAgent(
        chat_model=setup,
        prompt=Prompt.from_text("{q}"),
        tool_calling="text",
        max_iterations=4,
        chat_history=ChatHistory(max_messages=4),
        model_interceptors=[redact_emails, cache_replies],
        tool_interceptors=[block_dangerous_tools],
        name="every-behaviour",
    )
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond=text_react_script,
            name="every",
            count_file=count_file,
        ),
    )
    agent.add_resource("add", add)
    agent.add_resource("delete_all", delete_all)
    agent.add_hook("trail_in", "before_agent", before_agent)
    agent.add_hook("trail_model_in", "before_model", _trail_before_model)
    agent.add_hook("trail_model_out", "after_model", _trail_after_model)
    agent.add_hook("trail_out", "after_agent", after_agent_keyed)
    return agent


def _trail_before_model(hc: HookContext) -> None:
    _trail(hc, f"before_model{hc.iteration}")


def _trail_after_model(hc: HookContext) -> None:
    _trail(hc, f"after_model{hc.iteration}")


def flaky_hook(hc: HookContext) -> None:
    """Fails on its first call in this process, then marks the memory."""
    note("flaky", hc.point.value)
    if len(SEEN["flaky"]) == 1:
        hc.memory.set("half-done", True)  # rolled back with the failure
        raise ConnectionError("first call fails")
    hc.input = f"{hc.input} (retried, half-done={hc.memory.get('half-done')})"
