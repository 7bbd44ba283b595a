"""Functions and an event class the YAML loader tests name in their files."""

from __future__ import annotations

from typing import ClassVar

from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext


class Inputs(Event):
    """An event type of our own whose name is close to the alias ``input``."""

    EVENT_TYPE: ClassVar[str] = "inputs"


def echo(event: Event, ctx: RunnerContext) -> None:
    """Emit the input with the action's config."""
    ctx.send_event(
        OutputEvent(output={"input": InputEvent.from_event(event).input, **ctx.action_config})
    )


def relay(event: Event, ctx: RunnerContext) -> None:
    """Pass the input on as an event of type ``relayed``."""
    ctx.send_event(Event(type="relayed", attributes={"value": InputEvent.from_event(event).input}))


def finish(event: Event, ctx: RunnerContext) -> None:
    """Emit a ``relayed`` event's value."""
    ctx.send_event(OutputEvent(output={"relayed": event.get_attr("value")}))


def one_argument(event: Event) -> None:
    """Not an action: it takes no context."""


def shout(text: str) -> str:
    """Upper-case a text.

    Args:
        text: the text.
    """
    return text.upper()


NOT_A_FUNCTION = 42
