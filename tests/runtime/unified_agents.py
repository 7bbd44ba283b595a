"""Agents for the unified-event, prompt_args, config and reconciler tests (importable)."""

from __future__ import annotations

import json
import threading
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.api.runner_context import RunnerContext
from tests.runtime.agents import CountEvent

#: What the fake payment service saw: submissions and status checks (by order id).
PAYMENTS: dict[str, list[str]] = {"submitted": [], "checked": []}
_LOCK = threading.Lock()


class UnifiedAgent(Agent):
    """Only unified events: no class is declared for "step2" or "step3"."""

    @action(EventType.InputEvent)
    @staticmethod
    def start(event: Event, ctx: RunnerContext) -> None:
        value = InputEvent.from_event(event).input
        ctx.send_event(Event(type="step2", attributes={"value": value, "hops": 1}))

    @action("step2")
    @staticmethod
    def step2(event: Event, ctx: RunnerContext) -> None:
        event.set_attr("hops", event.get_attr("hops") + 1)
        ctx.send_event(Event(type="step3", attributes=dict(event.attributes)))

    @action("step3")
    @staticmethod
    def step3(event: Event, ctx: RunnerContext) -> None:
        # An OutputEvent sent as a unified event still leaves the agent.
        ctx.send_event(
            Event(
                type=EventType.OutputEvent,
                attributes={"output": {"value": event.get_attr("value"), "hops": 2}},
            )
        )
        # A generic event of a user class's type reaches the class's listeners as it was
        # sent; the action reads it as the class with from_event (as upstream).
        ctx.send_event(Event(type=CountEvent.EVENT_TYPE, attributes={"n": 7}))

    @action(CountEvent)
    @staticmethod
    def counted(event: Event, ctx: RunnerContext) -> None:
        assert type(event) is Event
        count = CountEvent.from_event(event)
        ctx.send_event(OutputEvent(output={"count": count.n, "config": ctx.config.get("my.flag")}))


def echo_prompt(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """Scripted model: one tool call first, then the messages it saw (as JSON)."""
    from flink_agents.testing import tool_call

    if not any(m.role is MessageRole.TOOL for m in messages) and tools:
        return tool_call("add", call_id="c1", a=1, b=2)
    return json.dumps([[m.role.value, m.content] for m in messages])


class PromptArgsAgent(Agent):
    """Sends its input as prompt_args; the setup's prompt holds {review} and {lang}."""

    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(
                model="model",
                messages=[ChatMessage(role=MessageRole.USER)],
                prompt_args=event.input,
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=json.loads(event.response.content)))


def submit_payment(order_id: str) -> str:
    with _LOCK:
        PAYMENTS["submitted"].append(order_id)
    return f"paid:{order_id}"


def payment_status(order_id: str) -> str:
    with _LOCK:
        PAYMENTS["checked"].append(order_id)
    if order_id.startswith("lost"):
        raise LookupError(f"payment {order_id} never arrived")
    return f"found:{order_id}"


class PaymentAgent(Agent):
    """Upstream's reconciler example: submit a payment once, ask the service after a
    restore when the submission's outcome was not recorded."""

    @action(InputEvent)
    @staticmethod
    def pay(event: Event, ctx: RunnerContext) -> None:
        order_id = InputEvent.from_event(event).input

        def payment_reconciler() -> str:
            return payment_status(order_id)

        result = ctx.durable_execute(submit_payment, order_id, reconciler=payment_reconciler)
        ctx.send_event(OutputEvent(output=result))


class AsyncPaymentAgent(Agent):
    """The same with durable_execute_async and an async reconciler."""

    @action(InputEvent)
    @staticmethod
    async def pay(event: Event, ctx: RunnerContext) -> None:
        order_id = InputEvent.from_event(event).input

        async def payment_reconciler() -> str:
            return payment_status(order_id)

        result = await ctx.durable_execute_async(
            submit_payment, order_id, reconciler=payment_reconciler
        )
        ctx.send_event(OutputEvent(output=result))


class NoReconcilerPaymentAgent(Agent):
    """Submits without a reconciler: a call interrupted before the restore runs again."""

    @action(InputEvent)
    @staticmethod
    def pay(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=ctx.durable_execute(submit_payment, event.input)))


def needs_an_argument(order_id: str) -> str:
    return order_id


class BadReconcilerAgent(Agent):
    """Passes a reconciler that cannot be called without arguments."""

    @action(InputEvent)
    @staticmethod
    def pay(event: Event, ctx: RunnerContext) -> None:
        ctx.durable_execute(submit_payment, event.input, reconciler=needs_an_argument)


class MemoAgent(Agent):
    """``"write:x"`` stores x in short-term memory; ``"read"`` outputs what is stored."""

    @action(InputEvent)
    @staticmethod
    def act(event: InputEvent, ctx: RunnerContext) -> None:
        command = str(event.input)
        if command.startswith("write:"):
            ctx.short_term_memory.set("v", command[len("write:") :])
            ctx.send_event(OutputEvent(output="written"))
        else:
            ctx.send_event(OutputEvent(output=ctx.short_term_memory.get("v")))
