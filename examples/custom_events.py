"""Custom events: an agent that branches on its own event types and keeps per-key memory.

What it shows:

- **custom event classes** (:class:`PurchaseEvent`, :class:`RefundEvent`, pydantic models
  with typed fields) and an action listening by **class** (``@action(PurchaseEvent)``),
- a custom event class with an explicit **type string** (:class:`LargeRefundEvent`,
  ``EVENT_TYPE = "large_refund"``) and actions listening by string
  (``@action("large_refund")``, ``@action(EventType.InputEvent)`` for the built-in input
  event),
- a **unified event** with no class at all, as in Apache Flink Agents:
  ``Event(type="review_flagged", attributes={...})``, read with ``event.get_attr(...)`` by
  ``@action("review_flagged")``,
- **branching**: the router sends a different event per kind of input, and the refund
  handler branches again on the amount,
- an **async action** (the router awaits an async risk lookup, through
  ``ctx.durable_execute_async`` so that the recorded result is reused after a restore),
- **short-term memory** per customer (``ctx.short_term_memory``): running totals, refund
  count, nested paths (``totals.spent``) persist across the customer's inputs.

Model: **none**: the logic is plain Python, so the example is deterministic and offline.

Run: ``python -m examples.custom_events``, or
``flink-agents run examples.custom_events:CustomerActivityAgent --input in.jsonl
--output out.jsonl --key-field customer``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.api.runner_context import RunnerContext

#: Refunds above this amount need a manual check.
LARGE_REFUND = 100.0


class Activity(BaseModel):
    """An input record: something a customer did."""

    customer: str
    kind: str  # "purchase", "refund" or "review"
    amount: float = 0.0
    text: str = ""


class PurchaseEvent(Event):
    """A purchase (its type string is its import path, set automatically)."""

    amount: float


class RefundEvent(Event):
    """A refund request, with the risk score the router looked up."""

    amount: float
    risk: float


class LargeRefundEvent(Event):
    """A refund above :data:`LARGE_REFUND`; listened to by its type string."""

    EVENT_TYPE = "large_refund"

    amount: float
    risk: float


async def risk_score(customer: str, amount: float) -> float:
    """A stand-in for an async call to a risk service: higher for larger amounts."""
    await asyncio.sleep(0.01)
    return round(min(1.0, amount / 200.0), 2)


class CustomerActivityAgent(Agent):
    """Routes each activity to a handler by its kind; keeps per-customer totals."""

    @action(EventType.InputEvent)  # the same as @action(InputEvent), @action("_input_event")
    @staticmethod
    async def route(event: Event, ctx: RunnerContext) -> None:
        """Branch on the kind of activity (async: awaits the risk lookup for refunds)."""
        activity = InputEvent.from_event(event).input
        if isinstance(activity, dict):
            activity = Activity.model_validate(activity)
        ctx.short_term_memory.set("customer", activity.customer)
        if activity.kind == "purchase":
            ctx.send_event(PurchaseEvent(amount=activity.amount))
        elif activity.kind == "refund":
            risk = await ctx.durable_execute_async(risk_score, activity.customer, activity.amount)
            ctx.send_event(RefundEvent(amount=activity.amount, risk=risk))
        elif activity.kind == "review":
            text = activity.text.lower()
            if any(word in text for word in ("scam", "fraud", "fake")):
                # A unified event: a type string and attributes, no class needed.
                ctx.send_event(
                    Event(
                        type="review_flagged",
                        attributes={"text": activity.text, "reason": "accusation"},
                    )
                )
            else:
                ctx.send_event(OutputEvent(output=_summary(ctx, "review accepted")))
        else:
            ctx.send_event(OutputEvent(output=_summary(ctx, f"unknown kind {activity.kind!r}")))

    @action(PurchaseEvent)
    @staticmethod
    def on_purchase(event: PurchaseEvent, ctx: RunnerContext) -> None:
        """Add to the customer's spend."""
        stm = ctx.short_term_memory
        stm.set("totals.spent", round((stm.get("totals.spent") or 0.0) + event.amount, 2))
        stm.set("totals.purchases", (stm.get("totals.purchases") or 0) + 1)
        ctx.send_event(OutputEvent(output=_summary(ctx, f"purchase of {event.amount:.2f}")))

    @action(RefundEvent)
    @staticmethod
    def on_refund(event: RefundEvent, ctx: RunnerContext) -> None:
        """Small refunds go through; large ones branch to a manual check."""
        stm = ctx.short_term_memory
        stm.set("totals.refunds", (stm.get("totals.refunds") or 0) + 1)
        if event.amount > LARGE_REFUND:
            ctx.send_event(LargeRefundEvent(amount=event.amount, risk=event.risk))
            return
        stm.set("totals.spent", round((stm.get("totals.spent") or 0.0) - event.amount, 2))
        ctx.send_event(OutputEvent(output=_summary(ctx, f"refund of {event.amount:.2f}")))

    @action("large_refund")
    @staticmethod
    def on_large_refund(event: LargeRefundEvent, ctx: RunnerContext) -> None:
        """Hold the refund for a manual check."""
        stm = ctx.short_term_memory
        stm.set("held_refunds", (stm.get("held_refunds") or 0) + 1)
        decision = f"refund of {event.amount:.2f} held for review (risk {event.risk})"
        ctx.send_event(OutputEvent(output=_summary(ctx, decision)))

    @action("review_flagged")
    @staticmethod
    def on_flagged_review(event: Event, ctx: RunnerContext) -> None:
        """Flagged reviews go to moderation."""
        reason = event.get_attr("reason")
        ctx.send_event(OutputEvent(output=_summary(ctx, f"review flagged ({reason})")))


def _summary(ctx: RunnerContext, decision: str) -> dict[str, Any]:
    stm = ctx.short_term_memory
    return {
        "customer": stm.get("customer"),
        "decision": decision,
        "spent": stm.get("totals.spent") or 0.0,
        "purchases": stm.get("totals.purchases") or 0,
        "refunds": stm.get("totals.refunds") or 0,
        "held_refunds": stm.get("held_refunds") or 0,
    }


SAMPLE_ACTIVITIES = [
    Activity(customer="ann", kind="purchase", amount=40.0),
    Activity(customer="bob", kind="review", text="Fake product, a scam!"),
    Activity(customer="ann", kind="purchase", amount=25.5),
    Activity(customer="ann", kind="refund", amount=10.0),
    Activity(customer="bob", kind="refund", amount=150.0),
    Activity(customer="cid", kind="review", text="Nice and sturdy."),
]


def main() -> list[dict[str, Any]]:
    """Run the sample activities in the local environment; prints and returns the outputs."""
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    env = AgentsExecutionEnvironment.get_execution_environment()
    out = (
        env.from_list([{"key": a.customer, "value": a} for a in SAMPLE_ACTIVITIES])
        .apply(CustomerActivityAgent())
        .to_list()
    )
    env.execute()
    for record in out:
        print(record)
    return out


if __name__ == "__main__":
    main()
