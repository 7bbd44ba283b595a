"""The built-in tool-call protocol between the chat model action and the tool action."""

from __future__ import annotations

from typing import Any, ClassVar
from uuid import UUID

from pydantic import Field

from flink_agents.api.events.event import Event


class ToolRequestEvent(Event):
    """Run the tool calls a model asked for.

    Attributes:
        model: the chat model setup that asked (tools are resolved against it).
        tool_calls: ``{"id", "type", "function": {"name", "arguments"}}`` dicts.
    """

    EVENT_TYPE: ClassVar[str] = "_tool_request_event"
    model: str
    tool_calls: list[dict[str, Any]]


class ToolResponseEvent(Event):
    """Results of the tool calls of request ``request_id``.

    Attributes:
        responses: result per tool call id (an error text for a failed call).
        errors: error message per tool call id, for calls that failed.
    """

    EVENT_TYPE: ClassVar[str] = "_tool_response_event"
    request_id: UUID
    responses: dict[str, Any]
    errors: dict[str, str] = Field(default_factory=dict)

    @property
    def success(self) -> dict[str, bool]:
        """Whether each tool call succeeded, by tool call id (as upstream's ``success``)."""
        return {call_id: call_id not in self.errors for call_id in self.responses}

    @property
    def error(self) -> dict[str, str]:
        """Error messages of failed calls by tool call id (upstream's name for ``errors``)."""
        return self.errors
