"""Chat history per key: a conversation kept across a key's inputs in short-term memory.

``ReActAgent(chat_history=ChatHistory(max_messages=20))`` and
``ChatRequestEvent(..., chat_history=ChatHistory(...))`` (the built-in chat action) put the
key's earlier turns (user messages and final answers; no tool turns) after the system
messages of each new request, and add the new turn when the answer is final. The history is
a list of messages in the key's short-term memory (``_chat_history.<name>``: Flink keyed
state on Flink, so it is checkpointed and restored with the key).

It is bounded by ``max_messages`` and/or ``max_tokens`` (estimated as one token per four
characters plus four per message, so no tokenizer is needed). Over the bound, the oldest
turns are dropped (``overflow="drop"``) or summarized by the same chat model into one system
message (``overflow="summarize"``; the summary call is a durable model call through the
interceptors like any other).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from flink_agents.api.chat_message import ChatMessage, MessageRole

__all__ = ["SUMMARY_PREFIX", "ChatHistory"]

#: How a summary of older turns starts (a system message).
SUMMARY_PREFIX = "Summary of the earlier conversation: "


class ChatHistory(BaseModel):
    """How a key's conversation is kept.

    Attributes:
        max_messages: at most this many messages are kept (None: no bound).
        max_tokens: at most this many (estimated) tokens are kept (None: no bound).
        overflow: ``"drop"`` the oldest turns, or ``"summarize"`` them with the model.
        name: the history's name (several agents of one job may keep separate histories).
    """

    max_messages: int | None = Field(default=20, ge=2)
    max_tokens: int | None = Field(default=None, ge=16)
    overflow: Literal["drop", "summarize"] = "drop"
    name: str = Field(default="default", min_length=1, pattern=r"^[A-Za-z0-9_-]+$")

    @model_validator(mode="after")
    def _bounded(self) -> ChatHistory:
        if self.max_messages is None and self.max_tokens is None:
            raise ValueError("ChatHistory needs max_messages or max_tokens (or both)")
        return self

    @property
    def memory_path(self) -> str:
        """Where in short-term memory the history is kept."""
        return f"_chat_history.{self.name}"

    def load(self, stored: Any) -> list[ChatMessage]:
        """The history from its short-term memory value."""
        return [ChatMessage.model_validate(m) for m in stored or []]

    @staticmethod
    def dump(messages: list[ChatMessage]) -> list[dict[str, Any]]:
        """The history as a short-term memory value (JSON)."""
        return [m.model_dump(mode="json", exclude_defaults=True) for m in messages]

    def over(self, messages: list[ChatMessage]) -> bool:
        """Whether ``messages`` exceed the bounds."""
        if self.max_messages is not None and len(messages) > self.max_messages:
            return True
        return self.max_tokens is not None and estimate_tokens(messages) > self.max_tokens

    def split(self, messages: list[ChatMessage]) -> tuple[list[ChatMessage], list[ChatMessage]]:
        """``(oldest turns to drop or summarize, turns to keep)`` so that what is kept, plus
        one summary message when summarizing, is within the bounds. A turn starts at a user
        message; the newest turn is always kept."""
        reserve = 1 if self.overflow == "summarize" else 0
        start = 0
        while start < len(messages):
            kept = messages[start:]
            if not self._over_with(kept, reserve):
                break
            nxt = next(
                (
                    i
                    for i in range(start + 1, len(messages))
                    if messages[i].role == MessageRole.USER
                ),
                None,
            )
            if nxt is None:
                break
            start = nxt
        return messages[:start], messages[start:]

    def _over_with(self, kept: list[ChatMessage], reserve: int) -> bool:
        if self.max_messages is not None and len(kept) + reserve > self.max_messages:
            return True
        budget = self.max_tokens
        return budget is not None and estimate_tokens(kept) + (64 if reserve else 0) > budget


def estimate_tokens(messages: list[ChatMessage]) -> int:
    """A tokenizer-free estimate: a token per four characters, four per message."""
    return sum(len(m.content or "") // 4 + 4 for m in messages)


def history_turn(request_messages: list[ChatMessage], answer: ChatMessage) -> list[ChatMessage]:
    """The messages a finished exchange adds: the request's user messages and the answer's
    text (no system prompt, tool calls or tool results)."""
    users = [
        ChatMessage(role=MessageRole.USER, content=m.content)
        for m in request_messages
        if m.role == MessageRole.USER
    ]
    return [*users, ChatMessage(role=MessageRole.ASSISTANT, content=answer.content or "")]


def with_history(messages: list[ChatMessage], history: list[ChatMessage]) -> list[ChatMessage]:
    """``messages`` with ``history`` after their leading system messages."""
    lead = 0
    while lead < len(messages) and messages[lead].role == MessageRole.SYSTEM:
        lead += 1
    return [*messages[:lead], *history, *messages[lead:]]


def summary_request(older: list[ChatMessage]) -> list[ChatMessage]:
    """The messages asking the model to summarize ``older`` turns."""
    transcript = "\n".join(f"{m.role.value}: {m.content}" for m in older)
    return [
        ChatMessage(
            role=MessageRole.SYSTEM,
            content="Summarize the conversation below in at most five sentences. Keep names, "
            "numbers, decisions and open questions; answer with the summary only.",
        ),
        ChatMessage(role=MessageRole.USER, content=transcript),
    ]


def summary_message(text: str) -> ChatMessage:
    """The system message that replaces summarized turns."""
    return ChatMessage(role=MessageRole.SYSTEM, content=SUMMARY_PREFIX + text.strip())
