"""Chat messages exchanged with chat models."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field


class MessageRole(str, Enum):
    """Who wrote a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ChatMessage(BaseModel):
    """One chat message.

    Attributes:
        role: who wrote it.
        content: its text.
        tool_calls: tool calls requested by an assistant message, each
            ``{"id": str, "type": "function", "function": {"name": str, "arguments": dict}}``.
        extra_args: anything else: prompt variables, ``tool_call_id`` on a tool message,
            token usage and latency on a model reply.
    """

    role: MessageRole = MessageRole.USER
    content: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    extra_args: dict[str, Any] = Field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.role.value}: {self.content}"
