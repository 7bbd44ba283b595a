"""A YAML agent: support-ticket triage declared in ``examples/yaml_agent.yaml``.

The YAML file wires the agent together (three actions, a prompt, a tool); this module holds
the functions it names. The model comes from a second YAML file, one per provider
(``examples/yaml_models/scripted.yaml``, ``ollama.yaml``, ``openai.yaml``): the same agent
file runs against any of them.

- ``ask_model`` (``input``) keeps the ticket id in short-term memory and asks the model;
  the model may call the ``order_status`` tool first.
- ``read_answer`` (``chat_response``) parses the model's JSON answer and sends a unified
  event ``Event(type="triaged", ...)``.
- ``route`` (``triaged``) escalates tickets whose priority reaches the action's
  ``escalate_at`` config value (set in the YAML file), and emits the result.

Run: ``python -m examples.yaml_agent [--provider scripted|ollama|openai]`` (local
environment; scripted, the default, needs no model).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.runner_context import RunnerContext

HERE = Path(__file__).parent
AGENT_FILE = HERE / "yaml_agent.yaml"

ORDERS = {"A-1001": "shipped, arriving tomorrow", "A-1002": "delayed at customs"}

TICKETS = [
    {"id": "t1", "customer": "ann", "text": "Where is my order A-1001?"},
    {"id": "t2", "customer": "bob", "text": "Order A-1002 is two weeks late. URGENT!"},
    {"id": "t3", "customer": "cid", "text": "I was charged twice this month."},
]


def order_status(order_id: str) -> str:
    """The delivery status of an order.

    Args:
        order_id: the order id, like A-1001.
    """
    return ORDERS.get(order_id.strip().upper(), "unknown order")


def ask_model(event: Event, ctx: RunnerContext) -> None:
    """Ask the triage model about the ticket."""
    ticket = InputEvent.from_event(event).input
    ctx.short_term_memory.set("ticket_id", ticket["id"])
    ctx.send_event(
        ChatRequestEvent(
            model="triage_model",
            messages=[ChatMessage(role=MessageRole.USER)],
            prompt_args={"customer": ticket["customer"], "text": ticket["text"]},
        )
    )


def read_answer(event: Event, ctx: RunnerContext) -> None:
    """Parse the model's JSON answer into a ``triaged`` event."""
    answer = json.loads(ChatResponseEvent.from_event(event).response.content)
    ctx.send_event(
        Event(
            type="triaged",
            attributes={
                "category": answer["category"],
                "priority": int(answer["priority"]),
                "reply": answer["reply"],
            },
        )
    )


def route(event: Event, ctx: RunnerContext) -> None:
    """Escalate urgent tickets (``escalate_at`` comes from the action's YAML config)."""
    priority = event.get_attr("priority")
    ctx.send_event(
        OutputEvent(
            output={
                "ticket": ctx.short_term_memory.get("ticket_id"),
                "category": event.get_attr("category"),
                "priority": priority,
                "escalated": priority >= ctx.get_action_config_value("escalate_at", 5),
                "reply": event.get_attr("reply"),
            }
        )
    )


def scripted_model(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """An offline stand-in for the model (``yaml_models/scripted.yaml``): asks for the
    order's status once, then answers with the JSON the prompt asks for."""
    from flink_agents.testing import tool_call

    ticket = next(m.content for m in messages if m.role is MessageRole.USER)
    order = re.search(r"A-\d+", ticket)
    status = [m.content for m in messages if m.role is MessageRole.TOOL]
    if order and not status and tools:
        return tool_call("order_status", order_id=order.group())
    urgent = "urgent" in ticket.lower() or "late" in ticket.lower()
    answer = {
        "category": "delivery" if order else "billing" if "charged" in ticket else "other",
        "priority": 5 if urgent else 2,
        "reply": f"Your order is {status[-1]}." if status else "We are looking into it.",
    }
    return json.dumps(answer)


def main(provider: str = "scripted") -> list[dict[str, Any]]:
    """Triage :data:`TICKETS` in the local environment; returns ``[{ticket id: result}]``."""
    agents_env = AgentsExecutionEnvironment.get_execution_environment()
    agents_env.load_yaml([AGENT_FILE, HERE / "yaml_models" / f"{provider}.yaml"])
    outputs = (
        agents_env.from_list([{"key": t["id"], "value": t} for t in TICKETS])
        .apply("ticket_triage_agent")
        .to_list()
    )
    agents_env.execute()
    return outputs


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="scripted", choices=["scripted", "ollama", "openai"])
    for output in main(parser.parse_args().provider):
        print(json.dumps(output))
