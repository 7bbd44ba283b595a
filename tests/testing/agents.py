"""Agents for the testing kit's tests (module-level: Flink workers import them by name)."""

from __future__ import annotations

import json
import logging
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup, tool_call

log = logging.getLogger("flink_agents.tests.kit")


def lookup(city: str) -> str:
    """The weather of a city.

    Args:
        city: the city.
    """
    return f"sunny in {city}"


def weather_reply(messages: list[ChatMessage], tools: Any) -> Any:
    """Asks for ``lookup`` first, then answers with the tool's result and the question."""
    last = messages[-1]
    if last.role is MessageRole.TOOL:
        question = next(m.content for m in messages if m.role is MessageRole.USER)
        return f"{question} -> {last.content}"
    doc = json.loads(last.content)
    return tool_call("lookup", call_id=f"c-{doc['i']}", city=doc["city"])


def ask(event: InputEvent, ctx: RunnerContext) -> None:
    """Counts inputs per key in memory, asks the model about the input's city."""
    record = event.input
    memory = ctx.short_term_memory
    count = (memory.get("count") or 0) + 1
    memory.set("count", count)
    memory.set("seen", [*(memory.get("seen") or []), record["i"]])
    ctx.send_event(
        ChatRequestEvent(
            model="model",
            messages=[ChatMessage(role=MessageRole.USER, content=json.dumps(record))],
        )
    )


def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output={"answer": event.response.content}))


def weather_agent(**connection: Any) -> Agent:
    """Counts inputs per key (memory ``count``, ``seen``); asks a scripted model that calls
    the ``lookup`` tool once per input; outputs ``{"answer": ...}``."""
    agent = Agent()
    agent.add_action("ask", InputEvent, ask)
    agent.add_action("answer", ChatResponseEvent, answer)
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond="tests.testing.agents:weather_reply",
            **connection,
        ),
    )
    agent.add_resource(
        "model",
        ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn", tools=["lookup"]),
    )
    agent.add_resource("lookup", ResourceType.TOOL, lookup)
    return agent


def inputs(n: int, keys: int = 3) -> list[dict[str, Any]]:
    """``n`` inputs over ``keys`` keys: ``{"id": "k<i % keys>", "i": i, "city": ...}``."""
    cities = ["Oslo", "Lima", "Pune", "Nice"]
    return [{"id": f"k{i % keys}", "i": i, "city": cities[i % len(cities)]} for i in range(n)]


def expected_outputs(records: list[dict[str, Any]]) -> dict[str, list[dict[str, str]]]:
    """What :func:`weather_agent` outputs per key."""
    out: dict[str, list[dict[str, str]]] = {}
    for r in records:
        out.setdefault(r["id"], []).append({"answer": f"{json.dumps(r)} -> sunny in {r['city']}"})
    return out


# -- calls through any resource: a chat connection given by the test, an embedding model ------
LOOKUPS: list[str] = []


def counted_lookup(city: str) -> str:
    """The weather of a city (counted in ``LOOKUPS``).

    Args:
        city: the city.
    """
    LOOKUPS.append(city)
    return f"sunny in {city}"


def ask_or_report(event: InputEvent, ctx: RunnerContext) -> None:
    """Embeds the question with ``embedder`` (a direct resource call of the action), then
    asks ``model``."""
    question = event.input["q"]
    log.info("asking about %s", question)
    vector = ctx.get_resource("embedder", ResourceType.EMBEDDING_MODEL).embed(question)
    ctx.short_term_memory.set("norm", round(sum(v * v for v in vector), 6))
    ctx.send_event(
        ChatRequestEvent(
            model="model", messages=[ChatMessage(role=MessageRole.USER, content=question)]
        )
    )


def answer_or_error(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output={"answer": event.response.content}))


def report_error(event: Any, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output={"error": event.error_type, "message": event.error}))


def provider_agent(
    connection: ResourceDescriptor, embedding: ResourceDescriptor, model: str = "m"
) -> Agent:
    """Embeds each question (``{"q": ...}``), asks the chat model (which may call
    ``counted_lookup``); outputs the answer, or the error of a failed call."""
    from flink_agents.api.events.event import ErrorEvent

    agent = Agent()
    agent.add_action("ask", InputEvent, ask_or_report, **{"error-handling-strategy": "ignore"})
    agent.add_action("answer", ChatResponseEvent, answer_or_error)
    agent.add_action("report", ErrorEvent, report_error)
    agent.add_resource("conn", connection)
    agent.add_resource("embed_conn", embedding)
    agent.add_resource(
        "embedder",
        ResourceDescriptor(
            clazz="flink_agents.integrations.embedding_models.openai_embedding_model."
            "OpenAIEmbeddingModelSetup",
            connection="embed_conn",
            model="emb-1",
            dimensions=8,
        ),
    )
    agent.add_resource(
        "model",
        ResourceDescriptor(
            clazz="flink_agents.integrations.chat_models.openai.openai_chat_model."
            "OpenAIChatModelSetup",
            connection="conn",
            model=model,
            tools=["counted_lookup"],
        ),
    )
    agent.add_resource("counted_lookup", ResourceType.TOOL, counted_lookup)
    return agent
