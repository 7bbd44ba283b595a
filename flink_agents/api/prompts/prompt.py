"""Prompt templates with ``{name}`` placeholders.

Filling follows Apache Flink Agents: every ``{...}`` whose text is a given argument name is
replaced by ``str(value)``; anything else (JSON braces, unknown names) stays as it is, so a
template may show JSON examples without escaping.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceType, SerializableResource

# Upstream's rule: any brace-free text between braces is a candidate name.
_SLOT = re.compile(r"\{([^{}]+)\}")
# Names that read as variables (for `variables`: JSON examples are not listed).
_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _fill(text: str, values: dict[str, Any]) -> str:
    if not values:
        return text
    return _SLOT.sub(
        lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text
    )


class Prompt(SerializableResource):
    """A text or a list of messages, with ``{name}`` placeholders filled at use.

    ``Prompt.from_text`` / ``Prompt.from_messages`` give a :class:`LocalPrompt`.

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
        return LocalPrompt(template=text)

    @staticmethod
    def from_messages(messages: Sequence[ChatMessage]) -> Prompt:
        """A prompt made of messages (each one's content may hold placeholders)."""
        return LocalPrompt(template=list(messages))

    @property
    def variables(self) -> set[str]:
        """Names of the placeholders in the template."""
        texts = (
            [self.template]
            if isinstance(self.template, str)
            else [m.content for m in self.template]
        )
        return {name for t in texts for name in _NAME.findall(t)}

    def format_string(self, **kwargs: Any) -> str:
        """The template as one text with placeholders filled (messages become
        ``role: content`` lines)."""
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


class LocalPrompt(Prompt):
    """A prompt whose template is held here (not fetched from a server), as in Apache Flink
    Agents: ``LocalPrompt(template="...")`` or ``LocalPrompt(template=[ChatMessage(...)])``."""
