"""Prompt templates with ``{name}`` placeholders."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceType, SerializableResource

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _fill(text: str, values: dict[str, Any]) -> str:
    # Only known names are replaced, so JSON braces and unknown placeholders stay as they
    # are (str.format would raise on them).
    return _PLACEHOLDER.sub(
        lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text
    )


class Prompt(SerializableResource):
    """A text or a list of messages, with ``{name}`` placeholders filled at use.

    Attributes:
        template: the text, or the messages.
    """

    template: str | list[ChatMessage]

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.PROMPT

    @staticmethod
    def from_text(text: str) -> Prompt:
        """A prompt made of one text."""
        return Prompt(template=text)

    @staticmethod
    def from_messages(messages: Sequence[ChatMessage]) -> Prompt:
        """A prompt made of messages (each one's content may hold placeholders)."""
        return Prompt(template=list(messages))

    @property
    def variables(self) -> set[str]:
        """Names of the placeholders in the template."""
        texts = (
            [self.template]
            if isinstance(self.template, str)
            else [m.content for m in self.template]
        )
        return {name for t in texts for name in _PLACEHOLDER.findall(t)}

    def format_string(self, **kwargs: Any) -> str:
        """The template as one text with placeholders filled (messages become lines)."""
        if isinstance(self.template, str):
            return _fill(self.template, kwargs)
        return "\n".join(f"{m.role.value}: {_fill(m.content, kwargs)}" for m in self.template)

    def format_messages(
        self, role: MessageRole = MessageRole.SYSTEM, **kwargs: Any
    ) -> list[ChatMessage]:
        """The template as messages with placeholders filled.

        Args:
            role: role of the single message a text template becomes.
            **kwargs: placeholder values.
        """
        if isinstance(self.template, str):
            return [ChatMessage(role=role, content=_fill(self.template, kwargs))]
        return [m.model_copy(update={"content": _fill(m.content, kwargs)}) for m in self.template]
