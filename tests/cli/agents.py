"""Agents and resources the CLI tests name on the command line (importable by path)."""

from __future__ import annotations

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext


class CountingAgent(Agent):
    """Outputs how many inputs its key has seen (short-term memory) and the config."""

    @action(InputEvent)
    @staticmethod
    def count(event: InputEvent, ctx: RunnerContext) -> None:
        seen = (ctx.short_term_memory.get("seen") or 0) + 1
        ctx.short_term_memory.set("seen", seen)
        ctx.send_event(
            OutputEvent(output={"seen": seen, "input": event.input, "tag": ctx.config.get("tag")})
        )


class FailingAgent(Agent):
    """Fails on inputs holding ``"boom"``."""

    @action(InputEvent)
    @staticmethod
    def explode(event: InputEvent, ctx: RunnerContext) -> None:
        if "boom" in str(event.input):
            raise RuntimeError("boom input")
        ctx.send_event(OutputEvent(output=event.input))


class NeedsArguments(Agent):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size


def needs_arguments(size: int) -> Agent:
    return CountingAgent()


def build_counting_agent() -> Agent:
    return CountingAgent()


def not_an_agent_factory() -> str:
    return "hello"


COUNTING_AGENT = CountingAgent()
NOT_AN_AGENT = 42


def secret_resources(model: str = "gpt-test") -> dict[str, ResourceDescriptor]:
    """A connection with an API key that must not reach the plan JSON."""
    return {
        "conn": ResourceDescriptor(
            clazz="flink_agents.testing.ScriptedChatModelConnection",
            api_key="sk-very-secret-value",
            name=model,
        )
    }


def bad_resources() -> list[str]:
    return ["not", "a", "dict"]
