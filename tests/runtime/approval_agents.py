"""Agents of the approval tests (importable: plans reference them by module path)."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action, tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.hooks import HookContext
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

#: Tool calls made in this process.
CALLS: list[dict[str, Any]] = []
#: Tool calls of orders whose id starts with "f-" are also appended to a file named after
#: the order here (Flink workers may run in other processes).
CALLS_DIR = os.path.join(tempfile.gettempdir(), "flink-agents-approval-calls")


def _count(entry: dict[str, Any]) -> None:
    CALLS.append(entry)
    order = str(entry.get("order_id", ""))
    if order.startswith("f-"):
        os.makedirs(CALLS_DIR, exist_ok=True)
        with open(os.path.join(CALLS_DIR, order), "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")


def file_calls(order_id: str) -> list[dict[str, Any]]:
    """The calls :func:`_count` appended for ``order_id``."""
    path = os.path.join(CALLS_DIR, order_id)
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


class RefundAgent(Agent):
    """The scripted model (``tests.runtime.agents:echo_tool_results``) calls the tool the
    input names; ``refund`` needs a human's approval, ``lookup`` does not. Inputs are
    counted in short-term memory (committed once per input, also across a pause)."""

    @tool(requires_approval=True)
    @staticmethod
    def refund(order_id: str, amount: float) -> str:
        """Refund an order.

        Args:
            order_id: the order.
            amount: how much.
        """
        _count({"tool": "refund", "order_id": order_id, "amount": amount})
        return f"refunded {amount:g} on {order_id}"

    @tool
    @staticmethod
    def lookup(order_id: str) -> str:
        """Look an order up.

        Args:
            order_id: the order.
        """
        _count({"tool": "lookup", "order_id": order_id})
        return f"{order_id}: shipped"

    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        seen = (ctx.short_term_memory.get("seen") or 0) + 1
        ctx.short_term_memory.set("seen", seen)
        ctx.send_event(
            ChatRequestEvent(
                model="model",
                messages=[ChatMessage(role=MessageRole.USER, content=json.dumps(event.input))],
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        seen = ctx.short_term_memory.get("seen")
        ctx.send_event(OutputEvent(output=f"#{seen} {event.response.content}"))


def refund_agent(model_name: str = "approval", count_file: str | None = None) -> RefundAgent:
    """A RefundAgent with its scripted model (calls counted under ``model_name``)."""
    agent = RefundAgent()
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond="tests.runtime.agents:echo_tool_results",
            name=model_name,
            count_file=count_file,
        ),
    )
    agent.add_resource(
        "model",
        ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="conn", tools=["refund", "lookup"]
        ),
    )
    return agent


def guard_tools(hc: HookContext) -> None:
    """A ``before_tool`` hook: lookups of ``vip*`` orders need a human's approval, the
    ``cached`` order is answered without calling the tool, refunds are capped at 50 and
    the ``boom`` order makes the hook fail."""
    order = str(hc.arguments.get("order_id", ""))
    if order == "boom":
        raise RuntimeError("guard cannot judge this order")
    if order.startswith("vip"):
        hc.require_approval()
    elif order == "cached":
        hc.stop("cached: shipped")
    if "amount" in hc.arguments:
        hc.arguments["amount"] = min(hc.arguments["amount"], 50)


def guarded_refund_agent() -> RefundAgent:
    """A :func:`refund_agent` with :func:`guard_tools` as its ``before_tool`` hook."""
    agent = refund_agent()
    agent.add_hook("guard", "before_tool", guard_tools)
    return agent
