"""Agent-run lifecycle events (as in Apache Flink Agents).

:class:`AgentRunBeginEvent` (``_agent_run_begin_event``) is sent when an input starts a run,
before any action of the run, if ``agent-run.begin-event``
(:attr:`~flink_agents.api.core_options.AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT`) is on
(off by default). It carries the key's short-term memory values at that moment as a flat
``{"a.b": value}`` map (nested objects are not listed, only the values in them). In the
event log its parent is the input event and its sender the virtual action
``agent_run_begin_action``; actions may listen to it like to any event.
"""

from __future__ import annotations

from typing import Any, ClassVar

from flink_agents.api.events.event import Event
from flink_agents.api.events.memory_event import observation_attributes

#: The sender the event log names for an :class:`AgentRunBeginEvent` (no real action).
AGENT_RUN_BEGIN_ACTION = "agent_run_begin_action"


class AgentRunBeginEvent(Event):
    """The begin of a run: the key's short-term memory values when it started.

    Attributes:
        key: the key of the run, as text.
        value: the short-term memory values, ``{"a.b": value}``.
    """

    EVENT_TYPE: ClassVar[str] = "_agent_run_begin_event"
    _json_exempt: ClassVar[frozenset[str]] = frozenset({"value"})

    key: str
    value: dict[str, Any]

    def __init__(self, /, **data: Any) -> None:
        if "attributes" in data:
            data = type(self)._arguments(data)
        data.update(observation_attributes(data.get("key"), data.get("value")))
        super().__init__(**data)

    @classmethod
    def from_event(cls, event: Event) -> Any:
        """``event`` (of this type) as an :class:`AgentRunBeginEvent` with the same id.

        Raises:
            TypeError: its ``key`` or ``value`` is missing or of the wrong kind.
        """
        if isinstance(event, cls):
            return event
        attributes = event.attributes
        made = cls(key=attributes.get("key"), value=attributes.get("value"))
        return made.reconstruct_from(event)
