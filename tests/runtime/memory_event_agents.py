"""Agents and a listener for the memory-event and run-begin tests (module-level functions:
plans store actions by reference)."""

from __future__ import annotations

from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import ErrorHandlingStrategy
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.api.events.listener import EventContext, EventListener
from flink_agents.api.events.memory_event import MemoryEvent
from flink_agents.api.events.run_event import AgentRunBeginEvent
from flink_agents.api.runner_context import RunnerContext

#: What :class:`Recorder` heard: ``(event type, event)`` in order (one process).
HEARD: list[tuple[str, Event]] = []


class Recorder(EventListener):
    """Keeps every processed event in :data:`HEARD`."""

    def on_event_processed(self, context: EventContext, event: Event) -> None:
        HEARD.append((context.event_type, event))


RECORDER = f"{Recorder.__module__}.Recorder"


def remember(event: InputEvent, ctx: RunnerContext) -> None:
    """Writes, overwrites and reads short-term memory, writes sensory memory."""
    stm = ctx.short_term_memory
    visits = (stm.get("visits") or 0) + 1
    stm.set("profile.tier", "draft")
    stm.set("profile.tier", event.input["tier"])  # the last write of a path wins
    stm.set("visits", visits)
    stm.new_object("prefs")
    stm.get("no.such.path")  # a read of nothing is no read
    profile = stm.get("profile")  # an object: no read
    profile.get_fields()  # reads profile.tier
    ctx.sensory_memory.set("scratch", {"seen": [1, 2]})
    ctx.send_event(OutputEvent(output={"visits": visits}))


def audit(event: Event, ctx: RunnerContext) -> None:
    """Listens to short-term writes; its own memory writes make no further event."""
    write = MemoryEvent.from_event(event)
    ctx.short_term_memory.set("audited", True)
    ctx.send_event(OutputEvent(output={"audit": write.value, "key": write.key}))


def on_begin(event: Event, ctx: RunnerContext) -> None:
    """Listens to the run-begin event; its memory writes are observed as usual."""
    begin = AgentRunBeginEvent.from_event(event)
    ctx.short_term_memory.set("begins", (ctx.short_term_memory.get("begins") or 0) + 1)
    ctx.send_event(OutputEvent(output={"begin": begin.value}))


def memory_agent(*, with_audit: bool = True, with_begin: bool = False) -> Agent:
    agent = Agent()
    agent.add_action("remember", InputEvent, remember)
    if with_audit:
        agent.add_action("audit", EventType.ShortTermWriteEvent, audit)
    if with_begin:
        agent.add_action("on_begin", EventType.AgentRunBeginEvent, on_begin)
    return agent


_ATTEMPTS: dict[Any, int] = {}


def flaky(event: InputEvent, ctx: RunnerContext) -> None:
    """Writes memory, then fails on its first attempt per input."""
    attempt = _ATTEMPTS[event.input["n"]] = _ATTEMPTS.get(event.input["n"], 0) + 1
    ctx.short_term_memory.set("attempt", attempt)
    ctx.short_term_memory.set(f"only_attempt_{attempt}", True)
    if attempt == 1:
        raise RuntimeError("first attempt fails")
    ctx.send_event(OutputEvent(output={"attempt": attempt}))


def failing(event: InputEvent, ctx: RunnerContext) -> None:
    ctx.short_term_memory.set("lost", True)
    raise RuntimeError("always fails")


def flaky_agent(strategy: ErrorHandlingStrategy) -> Agent:
    agent = Agent()
    if strategy is ErrorHandlingStrategy.RETRY:
        agent.add_action("flaky", InputEvent, flaky, **{"error-handling-strategy": strategy.value})
    else:
        agent.add_action(
            "failing", InputEvent, failing, **{"error-handling-strategy": strategy.value}
        )
    agent.add_action("audit", EventType.ShortTermWriteEvent, audit)
    return agent
