"""Chat model extension points.

A *connection* is the client of a model service (endpoint, credentials, retries). A *setup*
is how one agent uses it: model name, sampling options, prompt and tools. Actions refer to
setups by name (``ChatRequestEvent(model="my_setup", ...)``); setups refer to connections and
tools by name.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.tools.tool import Tool


class BaseChatModelConnection(Resource, ABC):
    """The client of a chat model service. Implement :meth:`chat` (and :meth:`achat` for
    a natively asynchronous client)."""

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL_CONNECTION

    @abstractmethod
    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """Send ``messages`` (and the tools the model may call); return the reply.

        A reply that asks for tools has ``tool_calls`` set. Implementations put token usage
        and latency into the reply's ``extra_args``.
        """

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """Asynchronous :meth:`chat`; by default runs :meth:`chat` in a worker thread."""
        return await asyncio.to_thread(self.chat, messages, tools, **kwargs)


class BaseChatModelSetup(Resource, ABC):
    """How an agent uses a chat model connection.

    Attributes:
        connection: name of the chat model connection resource.
        model: the model name (provider specific).
        prompt: a :class:`Prompt` or the name of a prompt resource; its placeholders are
            filled from the request messages' ``extra_args``.
        tools: names of tool resources (or MCP servers' tools) the model may call.
    """

    connection: str
    model: str | None = None
    prompt: Prompt | str | None = None
    tools: list[str] | None = None

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL

    @property
    @abstractmethod
    def model_kwargs(self) -> dict[str, Any]:
        """Options passed to the connection's ``chat`` on every call (model, temperature...)."""

    def get_connection(self) -> BaseChatModelConnection:
        """The connection resource this setup uses."""
        conn = self._lookup(self.connection, ResourceType.CHAT_MODEL_CONNECTION)
        return conn  # type: ignore[no-any-return]

    def get_tools(self) -> list[Tool]:
        """The tool resources this setup offers the model."""
        return [self._lookup(name, ResourceType.TOOL) for name in self.tools or []]

    def get_prompt(self) -> Prompt | None:
        """The prompt, resolving a prompt resource name."""
        if isinstance(self.prompt, str):
            prompt: Prompt = self._lookup(self.prompt, ResourceType.PROMPT)
            return prompt
        return self.prompt

    def prepare_messages(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        """Apply the prompt: its messages, filled from the request's ``extra_args``, come
        first; request messages with content follow."""
        prompt = self.get_prompt()
        if prompt is None:
            return list(messages)
        variables: dict[str, Any] = {}
        for m in messages:
            variables.update(m.extra_args)
        rest = [m for m in messages if m.content or m.tool_calls]
        return prompt.format_messages(**variables) + rest

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        """Ask the model (prompt applied, tools offered)."""
        return self.get_connection().chat(
            self.prepare_messages(messages),
            self.get_tools() or None,
            **{**self.model_kwargs, **kwargs},
        )

    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        """Asynchronous :meth:`chat`."""
        # Looking tools up may create resources (an MCP server connects and lists its
        # tools): do it off the event loop so other keys are not held up.
        tools = await asyncio.to_thread(self.get_tools) if self.tools else None
        return await self.get_connection().achat(
            self.prepare_messages(messages),
            tools or None,
            **{**self.model_kwargs, **kwargs},
        )
