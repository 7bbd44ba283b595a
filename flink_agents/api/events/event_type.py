"""Type strings of the built-in events, as one namespace (as in Apache Flink Agents).

Usage: ``@action(EventType.InputEvent)`` is the same as ``@action(InputEvent)`` and
``@action("_input_event")``.
"""

from __future__ import annotations

from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import ErrorEvent, InputEvent, OutputEvent
from flink_agents.api.events.memory_event import (
    LongTermGetEvent,
    LongTermSearchEvent,
    LongTermUpdateEvent,
    SensoryReadEvent,
    SensoryWriteEvent,
    ShortTermReadEvent,
    ShortTermWriteEvent,
)
from flink_agents.api.events.run_event import AgentRunBeginEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent


class EventType:
    """Built-in event type strings (each class's ``EVENT_TYPE``)."""

    InputEvent: str = InputEvent.EVENT_TYPE
    OutputEvent: str = OutputEvent.EVENT_TYPE
    ChatRequestEvent: str = ChatRequestEvent.EVENT_TYPE
    ChatResponseEvent: str = ChatResponseEvent.EVENT_TYPE
    ToolRequestEvent: str = ToolRequestEvent.EVENT_TYPE
    ToolResponseEvent: str = ToolResponseEvent.EVENT_TYPE
    ContextRetrievalRequestEvent: str = ContextRetrievalRequestEvent.EVENT_TYPE
    ContextRetrievalResponseEvent: str = ContextRetrievalResponseEvent.EVENT_TYPE
    ErrorEvent: str = ErrorEvent.EVENT_TYPE
    ShortTermWriteEvent: str = ShortTermWriteEvent.EVENT_TYPE
    ShortTermReadEvent: str = ShortTermReadEvent.EVENT_TYPE
    SensoryWriteEvent: str = SensoryWriteEvent.EVENT_TYPE
    SensoryReadEvent: str = SensoryReadEvent.EVENT_TYPE
    LongTermUpdateEvent: str = LongTermUpdateEvent.EVENT_TYPE
    LongTermGetEvent: str = LongTermGetEvent.EVENT_TYPE
    LongTermSearchEvent: str = LongTermSearchEvent.EVENT_TYPE
    AgentRunBeginEvent: str = AgentRunBeginEvent.EVENT_TYPE


def event_type_constants() -> dict[str, str]:
    """``EventType``'s constants, name -> type string (what ``EventType.X`` is in a
    trigger-condition expression)."""
    return {
        name: value
        for name, value in vars(EventType).items()
        if not name.startswith("_") and isinstance(value, str)
    }
