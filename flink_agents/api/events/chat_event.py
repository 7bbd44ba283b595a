"""The built-in chat protocol: ask a chat model setup, get its final answer."""

from __future__ import annotations

from typing import Any, ClassVar
from uuid import UUID

from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.events.event import Event


class ChatRequestEvent(Event):
    """Ask the chat model setup named ``model`` to answer ``messages``.

    The built-in chat model action answers with a :class:`ChatResponseEvent` once the model
    has finished (running any tool calls it asks for in between).

    Attributes:
        model: name of a chat model setup resource.
        messages: the conversation so far.
        output_schema: optional pydantic model class or JSON schema the reply must follow.
    """

    EVENT_TYPE: ClassVar[str] = "_chat_request_event"
    model: str
    messages: list[ChatMessage]
    output_schema: Any = None


class ChatResponseEvent(Event):
    """The model's final answer to the request with id ``request_id``."""

    EVENT_TYPE: ClassVar[str] = "_chat_response_event"
    request_id: UUID
    response: ChatMessage
