"""Agents and helpers used by the core tests (importable: plans reference by module path)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from pydantic import BaseModel

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action, tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import ErrorEvent, Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext

CALLS: dict[str, int] = {}
_LOCK = threading.Lock()


def count(name: str) -> int:
    with _LOCK:
        CALLS[name] = CALLS.get(name, 0) + 1
        return CALLS[name]


class CountEvent(Event):
    """A custom event with a class of its own."""

    n: int


class TypedEvent(Event):
    EVENT_TYPE = "my_typed_event"
    text: str


class EchoAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def echo(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.input))


class CounterAgent(Agent):
    """Counts inputs per key in short-term memory; checks sensory memory is fresh."""

    @action(InputEvent)
    @staticmethod
    def count_input(event: InputEvent, ctx: RunnerContext) -> None:
        assert not ctx.sensory_memory.is_exist("seen"), "sensory memory leaked between runs"
        ctx.sensory_memory.set("seen", True)
        total = (ctx.short_term_memory.get("stats.count") or 0) + 1
        ctx.short_term_memory.set("stats.count", total)
        items = list(ctx.short_term_memory.get("stats.items") or [])
        items.append(event.input)
        ctx.short_term_memory.set("stats.items", items)
        ctx.send_event(CountEvent(n=total))

    @action("tests.runtime.agents.CountEvent")
    @staticmethod
    def emit(event: CountEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            OutputEvent(
                output={
                    "key": ctx.key,
                    "count": event.n,
                    "items": ctx.short_term_memory.get("stats.items"),
                }
            )
        )


class BranchAgent(Agent):
    """Custom events by type string, async actions and branching."""

    @action("_input_event")
    @staticmethod
    async def route(event: InputEvent, ctx: RunnerContext) -> None:
        await asyncio.sleep(0)
        if isinstance(event.input, int):
            ctx.send_event(CountEvent(n=event.input))
        else:
            ctx.send_event(TypedEvent(text=str(event.input)))

    @action(CountEvent)
    @staticmethod
    def on_number(event: CountEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.n * 2))

    @action("my_typed_event")
    @staticmethod
    def on_text(event: TypedEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.text.upper()))


#: slow_double calls in progress now, and the most at once (a concurrency measure that does
#: not depend on the machine's speed).
IN_PROGRESS = {"now": 0, "most": 0}


async def slow_double(x: int) -> int:
    IN_PROGRESS["now"] += 1  # one event loop: no lock needed
    IN_PROGRESS["most"] = max(IN_PROGRESS["most"], IN_PROGRESS["now"])
    try:
        await asyncio.sleep(0.1)
    finally:
        IN_PROGRESS["now"] -= 1
    count("slow_double")
    return x * 2


def blocking_triple(x: int) -> int:
    import time

    time.sleep(0.1)
    count("blocking_triple")
    return x * 3


class DurableAgent(Agent):
    @action(InputEvent)
    @staticmethod
    async def compute(event: InputEvent, ctx: RunnerContext) -> None:
        doubled = await ctx.durable_execute_async(slow_double, event.input)
        tripled = ctx.durable_execute(lambda_free_square, doubled)
        ctx.send_event(OutputEvent(output=tripled))


def lambda_free_square(x: int) -> int:
    count("square")
    return x * x


class AsyncCallAgent(Agent):
    """One 100 ms durable_execute_async call per input."""

    @action(InputEvent)
    @staticmethod
    async def call(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=await ctx.durable_execute_async(slow_double, 1)))


class FailingAgent(Agent):
    """Raises on inputs equal to 'bad'; fails `fail_times` times on 'flaky' inputs."""

    @action(InputEvent)
    @staticmethod
    def check(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.short_term_memory.set("touched", True)
        if event.input == "bad":
            raise ValueError("bad input")
        if event.input == "flaky" and count("flaky") <= 2:
            raise ConnectionError("flaky failure")
        ctx.send_event(OutputEvent(output=event.input))

    @action(ErrorEvent)
    @staticmethod
    def on_error(event: ErrorEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output={"error": event.error, "action": event.action}))


class BadMemoryAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def store(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.short_term_memory.set("obj", object())


class SelfAgent(Agent):
    @action(InputEvent)
    def with_self(self, event: Event, ctx: RunnerContext) -> None:  # wrong: has self
        pass


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


class Answer(BaseModel):
    """The ReAct output schema used by tests."""

    total: int
    explanation: str


class ToolAgent(Agent):
    """A workflow agent whose model calls a tool."""

    @tool
    @staticmethod
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers.

        Args:
            a: first factor.
            b: second factor.
        """
        return a * b

    @tool
    @staticmethod
    def explode(reason: str) -> str:
        """Always fails.

        Args:
            reason: why.
        """
        raise RuntimeError(f"exploded: {reason}")

    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(
                model="model",
                messages=[ChatMessage(role=MessageRole.USER, content=json.dumps(event.input))],
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.response.content))


def echo_tool_results(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """Scripted model: call the tool named in the user message, then report tool results."""
    from flink_agents.testing import tool_call

    last = messages[-1]
    if last.role is MessageRole.TOOL:
        results = [
            f"{m.extra_args.get('name')}[{m.extra_args.get('tool_call_id')}]={m.content}"
            for m in messages
            if m.role is MessageRole.TOOL
        ]
        return "; ".join(results)
    request = json.loads(last.content)
    return tool_call(request["tool"], call_id="c1", **request.get("args", {}))


class UnheardAgent(Agent):
    """Sends an event no action listens to."""

    @action(InputEvent)
    @staticmethod
    def send(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(CountEvent(n=1))
        ctx.send_event(OutputEvent(output=event.input))
