"""The built-in chat protocol: ask a chat model setup, get its final answer."""

from __future__ import annotations

from typing import Any, ClassVar
from uuid import UUID

from pydantic import BaseModel, Field, field_serializer

from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.events.event import Event


class ChatRequestEvent(Event):
    """Ask the chat model setup named ``model`` to answer ``messages``.

    The built-in chat model action answers with a :class:`ChatResponseEvent` once the model
    has finished (running any tool calls it asks for in between).

    Attributes:
        model: name of a chat model setup resource.
        messages: the conversation so far.
        prompt_args: values for the placeholders of the setup's prompt (``{input}`` ...);
            empty by default. Message ``extra_args`` are not used to fill the prompt (as in
            Apache Flink Agents 0.3).
        output_schema: optional pydantic model class or JSON schema the reply must follow.
    """

    EVENT_TYPE: ClassVar[str] = "_chat_request_event"
    # A pydantic class is kept as given (the chat action needs it) and written to JSON as
    # its JSON schema. Not called for None, the usual value (the event log writes every
    # request: a Python call from the serializer per event is measurable there).
    _json_exempt: ClassVar[frozenset[str]] = frozenset({"output_schema"})

    model: str
    messages: list[ChatMessage]
    prompt_args: dict[str, Any] = Field(default_factory=dict)
    output_schema: Any = None

    @field_serializer("output_schema", when_used="unless-none")
    def _schema_json(self, value: Any) -> Any:
        if isinstance(value, type) and issubclass(value, BaseModel):
            return value.model_json_schema()
        if hasattr(value, "get_field_names"):  # a pyflink RowTypeInfo
            return str(value)
        return value


class ChatResponseEvent(Event):
    """The model's final answer to the request with id ``request_id``."""

    EVENT_TYPE: ClassVar[str] = "_chat_response_event"
    request_id: UUID
    response: ChatMessage
