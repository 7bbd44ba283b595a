"""Event listeners: code told of every event a run processes (as Apache Flink Agents'
``EventListener``).

A listener is named in the ``event-listeners`` option (``AgentConfigOptions.EVENT_LISTENERS``:
a list of ``"module.ClassName"`` paths, each class with a no-argument constructor); the
runtime makes one instance per task slot and calls :meth:`EventListener.on_event_processed`
for each event before the actions it triggers run. Listeners run on the run loop: keep them
quick (a counter, a log line, a queue put). An exception a listener raises is logged and
does not affect the run.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from flink_agents.api.events.event import Event


@dataclass(frozen=True)
class EventContext:
    """Where an event was processed.

    Attributes:
        event_type: the event's type string (``event.type``).
        timestamp: when the runtime took it up, ISO-8601 in UTC (as upstream).
        key: the key of the run (ours; upstream's context has no key).
    """

    event_type: str
    timestamp: str
    key: Any = None

    def get_event_type(self) -> str:
        """Upstream's getter for :attr:`event_type`."""
        return self.event_type

    def get_timestamp(self) -> str:
        """Upstream's getter for :attr:`timestamp`."""
        return self.timestamp


class EventListener(ABC):
    """Told of every event a run processes, before its actions run."""

    @abstractmethod
    def on_event_processed(self, context: EventContext, event: Event) -> None:
        """Called once per processed event (input, internal and output events alike).

        Do not change ``event``: actions see the same object.
        """
