"""ReAct agent: a built-in ReActAgent that calls a tool and answers in a pydantic schema.

What it shows: :class:`~flink_agents.api.agents.react_agent.ReActAgent` with

- a prompt whose ``{placeholders}`` are filled from the input record's fields,
- a function tool (``lookup_order``) the model calls natively (tool calls, not text),
- an ``output_schema`` (:class:`SupportAnswer`, a pydantic model): the final reply is
  parsed and validated into it; a reply that does not match follows the error handling
  strategy (here RETRY: the model is asked again, told what was wrong),
- the local environment (``from_list`` / ``to_list``), no Flink needed.

Model: the **scripted model** from :mod:`flink_agents.testing` (offline, deterministic):
:func:`scripted_support_model` plays the part of an LLM: first it asks for the
``lookup_order`` tool with the order id found in the ticket, then it answers with JSON built
from the tool's result.

Run: ``python -m examples.react_agent``, or over a JSONL file with the CLI::

    flink-agents run examples.react_agent:build_agent --input tickets.jsonl \\
        --output answers.jsonl --key-field customer
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from flink_agents.api.agents.react_agent import ErrorHandlingStrategy, ReActAgent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup, tool_call


class SupportTicket(BaseModel):
    """An input record: a customer's question about an order."""

    customer: str
    message: str


class SupportAnswer(BaseModel):
    """The agent's structured answer (its ``output_schema``)."""

    order_id: str
    status: str
    reply: str


#: The "order database" the tool reads.
ORDERS: dict[str, dict[str, str]] = {
    "A-1001": {"status": "shipped", "eta": "2 days"},
    "A-1002": {"status": "processing", "eta": "5 days"},
    "A-1003": {"status": "delivered", "eta": "already delivered"},
}


def lookup_order(order_id: str) -> dict[str, str]:
    """Look up the status and delivery estimate of an order.

    Args:
        order_id: the order id, like ``A-1001``.
    """
    order = ORDERS.get(order_id.strip().upper())
    if order is None:
        return {"order_id": order_id, "status": "unknown", "eta": "unknown"}
    return {"order_id": order_id.strip().upper(), **order}


SUPPORT_PROMPT = Prompt.from_messages(
    [
        ChatMessage(
            role=MessageRole.SYSTEM,
            content="You are a support agent. Use the lookup_order tool to find the order the "
            "customer asks about, then answer politely.",
        ),
        ChatMessage(role=MessageRole.USER, content="Customer {customer} writes: {message}"),
    ]
)

_ORDER_ID = re.compile(r"\b[A-Za-z]-\d{4}\b")


def scripted_support_model(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """A scripted stand-in for an LLM: tool call first, then a JSON answer.

    Args:
        messages: the conversation so far (system, user, then assistant/tool turns).
        tools: the tools offered (``lookup_order``).
    """
    last = messages[-1]
    if last.role is MessageRole.TOOL:
        order = json.loads(last.content) if last.content.startswith("{") else {}
        status = order.get("status", "unknown")
        answer = {
            "order_id": order.get("order_id", "unknown"),
            "status": status,
            "reply": f"Your order is {status}; expected delivery: {order.get('eta', 'unknown')}.",
        }
        return json.dumps(answer)
    user = next(m.content for m in reversed(messages) if m.role is MessageRole.USER)
    found = _ORDER_ID.search(user)
    if found is None:
        return json.dumps(
            {"order_id": "none", "status": "unknown", "reply": "Which order do you mean?"}
        )
    return tool_call("lookup_order", order_id=found.group(0))


def build_agent(connection: ResourceDescriptor | None = None) -> ReActAgent:
    """The support agent (a factory the CLI can call without arguments).

    Args:
        connection: the chat model connection; the scripted model when not given (pass
            e.g. an ``OpenAIChatModelConnection`` descriptor to use a real model).
    """
    agent = ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=ScriptedChatModelSetup,
            connection="support_model_connection",
            tools=["lookup_order"],
        ),
        prompt=SUPPORT_PROMPT,
        output_schema=SupportAnswer,
        error_handling_strategy=ErrorHandlingStrategy.RETRY,
        max_retries=2,
        retry_wait=0.05,
    )
    agent.add_resource("lookup_order", lookup_order)
    if connection is None:
        connection = ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond=scripted_support_model, name="support"
        )
    agent.add_resource("support_model_connection", connection)
    return agent


SAMPLE_TICKETS = [
    SupportTicket(customer="ann", message="Where is my order A-1001?"),
    SupportTicket(customer="bob", message="Has a-1003 arrived yet?"),
    SupportTicket(customer="cid", message="Any news on order A-9999?"),
]


def main() -> list[dict[str, Any]]:
    """Answer the sample tickets in the local environment; prints and returns the outputs."""
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    env = AgentsExecutionEnvironment.get_execution_environment()
    out = (
        env.from_list([{"key": t.customer, "value": t} for t in SAMPLE_TICKETS])
        .apply(build_agent())
        .to_list()
    )
    env.execute()
    for record in out:
        print(record)
    return out


if __name__ == "__main__":
    main()
