"""An agent whose tool has injected parameters (tests of tool parameter injection)."""

from __future__ import annotations

from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action, tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools import InjectedArg
from flink_agents.api.tools.tool import Tool
from flink_agents.testing.scripted_chat_model import (
    ScriptedChatModelConnection,
    ScriptedChatModelSetup,
    tool_call,
)

#: The argument schemas the model was offered, and the tool's calls (one process).
OFFERED: list[dict[str, Any]] = []
CALLS: list[dict[str, Any]] = []


def respond(messages: list[ChatMessage], tools: list[Tool]) -> Any:
    """Asks for ``query_order`` with the user's text, also sending a spoofed tenant id;
    answers with the tool's result once it has it."""
    last = messages[-1]
    if last.role == MessageRole.TOOL:
        return last.content
    OFFERED.extend(t.metadata.args_schema for t in tools)
    return tool_call("query_order", call_id="c1", order_id=last.content, tenant_id="spoofed")


def query_order(order_id: str, tenant_id: str, session: str, request: str, who: str) -> str:
    """Look an order up for a tenant.

    Args:
        order_id: the order.
        tenant_id: the tenant (from the configuration).
        session: the session (short-term memory).
        request: the request (sensory memory).
        who: the key of the run.
    """
    CALLS.append({"order_id": order_id, "tenant_id": tenant_id})
    return f"{tenant_id}|{session}|{request}|{who}|{order_id}"


INJECTED = {
    "tenant_id": InjectedArg.from_config("tenant_id"),
    "session": InjectedArg.from_short_term_memory("session.id"),
    "request": {"key": "request.id"},  # a dict spec: sensory memory by default
    "who": InjectedArg.from_key(),
}


class InjectionAgent(Agent):
    """Input ``{"order": ..., "session": ...}`` -> the tool's result as output."""

    @tool(injected_args=INJECTED)
    @staticmethod
    def query_order(order_id: str, tenant_id: str, session: str, request: str, who: str) -> str:
        """Look an order up for a tenant.

        Args:
            order_id: the order.
            tenant_id: the tenant (from the configuration).
            session: the session (short-term memory).
            request: the request (sensory memory).
            who: the key of the run.
        """
        return query_order(order_id, tenant_id, session, request, who)

    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        if event.input.get("session") is not None:
            ctx.short_term_memory.set("session.id", event.input["session"])
        ctx.sensory_memory.set("request.id", f"r-{event.input['order']}")
        ctx.send_event(
            ChatRequestEvent(
                model="model",
                messages=[ChatMessage(role=MessageRole.USER, content=event.input["order"])],
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.response.content))


def injection_agent() -> InjectionAgent:
    agent = InjectionAgent()
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond="tests.runtime.injection_agents:respond"
        ),
    )
    agent.add_resource(
        "model",
        ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn", tools=["query_order"]),
    )
    return agent
