"""Python parts of ``examples/sql_agent.sql``: the UDF the agent's tool calls, and the
scripted model that stands in for an LLM (offline and deterministic).

The SQL script registers :data:`order_status` with ``CREATE FUNCTION ... LANGUAGE PYTHON``,
makes it a tool, and points its model at :func:`support_model` (``'provider' = 'scripted'``).
Swap the model for a real one without touching the rest of the script, e.g.
``CREATE MODEL support_llm WITH ('provider' = 'openai', 'endpoint' = 'http://127.0.0.1:8000/v1',
'model' = 'qwen2.5', 'api-key-env' = 'OPENAI_API_KEY')`` or ``'provider' = 'local'`` (the
offline model of ``make model``).

Run: ``flink-agents sql -f examples/sql_agent.sql`` from the repository root.
"""

from __future__ import annotations

import re
from typing import Any

from pyflink.table import DataTypes
from pyflink.table.udf import udf

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.testing import tool_call

#: What the order system knows (the tool's "database").
ORDERS = {"A100": "shipped on Monday", "B200": "waiting for stock", "C300": "delivered"}


@udf(result_type=DataTypes.STRING())
def order_status(order_id: str) -> str:
    """The delivery status of an order.

    Args:
        order_id: the order number, e.g. A100.
    """
    return ORDERS.get(order_id.strip().upper(), "unknown order")


_ORDER = re.compile(r"\b([A-C]\d{3})\b")


def support_model(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """Scripted stand-in for an LLM: looks up orders with the tool, then answers.

    A question naming an order gets a tool call; the tool's result gets an answer; a
    question without an order number refers to the customer's previous exchange (the
    agent's memory per customer), as a real model would.
    """
    last = messages[-1]
    if last.role is MessageRole.TOOL:
        question = next(m.content for m in reversed(messages) if m.role is MessageRole.USER)
        order = _ORDER.search(question)
        return f"Order {order.group(1) if order else '?'} is {last.content}."
    question = last.content
    order = _ORDER.search(question)
    if order and tools:
        return tool_call("order_status", order_id=order.group(1))
    earlier = [m for m in messages[:-1] if m.role is MessageRole.ASSISTANT]
    if earlier:
        return f"As I said: {earlier[-1].content}"
    return "Please tell me your order number."
