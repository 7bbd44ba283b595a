"""Chat model extension points.

A *connection* is the client of a model service (endpoint, credentials, retries). A *setup*
is how one agent uses it: model name, sampling options, prompt and tools. Actions refer to
setups by name (``ChatRequestEvent(model="my_setup", ...)``); setups refer to connections and
tools by name.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field, PrivateAttr, field_validator

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.skills import BASH_TOOL, LOAD_SKILL_TOOL
from flink_agents.api.tools.tool import Tool

log = logging.getLogger(__name__)


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
        model: the model name (provider specific); required, as in Apache Flink Agents
            (setups whose connection fixes the model declare it optional).
        prompt: a :class:`Prompt` or the name of a prompt resource; its placeholders are
            filled from the request's ``prompt_args`` (``ChatRequestEvent(prompt_args=...)``);
            message ``extra_args`` are not used for filling.
        tools: names of tool resources (or MCP servers' tools) the model may call.
        timeout: seconds a call through the built-in chat action may take (overrides the
            ``model.timeout`` option); None: the option's value.
        skills: names of the agent's skills this model may use (see
            :mod:`flink_agents.api.skills`): their names and descriptions are sent as a
            system message and the ``load_skill`` tool is offered. None: no skills.
        allowed_commands: commands the ``bash`` tool may run for the skills (e.g.
            ``["echo", "bc"]``); empty (the default): no ``bash`` tool.
        allowed_script_dirs: directories (besides the skills' own) whose scripts ``bash``
            may run and where its commands may read and write.
        skill_discovery_prompt: the discovery message (filled on first use).
    """

    connection: str
    model: str
    prompt: Prompt | str | None = None
    tools: list[str] | None = None
    timeout: float | None = Field(default=None, gt=0)
    skills: list[str] | None = None
    allowed_commands: list[str] = Field(default_factory=list)
    allowed_script_dirs: list[str] = Field(default_factory=list)
    skill_discovery_prompt: str | None = None

    # Whether the extra_args hint was logged (once per setup instance).
    _hinted: bool = PrivateAttr(default=False)
    #: A connection object given by hand (upstream's name): used instead of looking
    #: ``connection`` up, e.g. for a setup made outside an agent runtime.
    _resolved_connection: BaseChatModelConnection | None = PrivateAttr(default=None)
    #: ``load_skill`` (and ``bash``) bound to this setup's skills, made on first use.
    _skill_tools: list[Tool] | None = PrivateAttr(default=None)

    @field_validator("model", check_fields=False)
    @classmethod
    def _model_named(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise ValueError(f"{cls.__name__} needs a model name: model='...' must not be empty")
        return value

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL

    @property
    @abstractmethod
    def model_kwargs(self) -> dict[str, Any]:
        """Options passed to the connection's ``chat`` on every call (model, temperature...)."""

    def get_connection(self) -> BaseChatModelConnection:
        """The connection resource this setup uses (the one set as
        ``_resolved_connection``, if any, as in Apache Flink Agents)."""
        if self._resolved_connection is not None:
            return self._resolved_connection
        conn = self._lookup(self.connection, ResourceType.CHAT_MODEL_CONNECTION)
        return conn

    def get_tools(self) -> list[Tool]:
        """The tool resources this setup offers the model (with ``skills``: also
        ``load_skill``, and ``bash`` when ``allowed_commands`` is given)."""
        if not self.skills:
            return [self._lookup(name, ResourceType.TOOL) for name in self.tools or []]
        own = [n for n in self.tools or [] if n not in (LOAD_SKILL_TOOL, BASH_TOOL)]
        return [self._lookup(name, ResourceType.TOOL) for name in own] + self._get_skill_tools()

    def _get_skill_tools(self) -> list[Tool]:
        tools = self._skill_tools
        if tools is None:
            names = [LOAD_SKILL_TOOL, *([BASH_TOOL] if self.allowed_commands else [])]
            tools = []
            for name in names:
                tool = self._lookup(name, ResourceType.TOOL)
                bind = getattr(tool, "bind_to", None)  # the built-in ones: per setup
                tools.append(bind(self) if bind is not None else tool)
            self._skill_tools = tools
        return tools

    def close(self) -> None:
        """Close the skill tools bound to this setup (the bash tool's workspace)."""
        tools, self._skill_tools = self._skill_tools, None
        for tool in tools or []:
            tool.close()

    def get_skill_discovery_prompt(self) -> str:
        """The system message that lists this setup's skills (empty without skills)."""
        if not self.skills:
            return ""
        if self.skill_discovery_prompt is None:
            self.skill_discovery_prompt = self.resource_context.generate_available_skills_prompt(
                *self.skills
            )
        return self.skill_discovery_prompt

    def get_prompt(self) -> Prompt | None:
        """The prompt, resolving a prompt resource name."""
        if isinstance(self.prompt, str):
            prompt: Prompt = self._lookup(self.prompt, ResourceType.PROMPT)
            return prompt
        return self.prompt

    def prepare_messages(
        self,
        messages: Sequence[ChatMessage],
        prompt_args: Mapping[str, Any] | None = None,
    ) -> list[ChatMessage]:
        """Apply the prompt: its messages, filled from ``prompt_args``, come first; request
        messages with content (or tool calls) follow."""
        prompt = self.get_prompt()
        if prompt is None:
            prepared = list(messages)
        else:
            args = dict(prompt_args or {})
            if not args:
                self._hint_extra_args(prompt, messages)
            rest = [m for m in messages if m.content or m.tool_calls]
            prepared = prompt.format_messages(**args) + rest
        discovery = self.get_skill_discovery_prompt()
        if discovery:
            # right after the first system message (first of all without one), as upstream
            at = next((i + 1 for i, m in enumerate(prepared) if m.role == MessageRole.SYSTEM), 0)
            prepared.insert(at, ChatMessage(role=MessageRole.SYSTEM, content=discovery))
        return prepared

    def _hint_extra_args(self, prompt: Prompt, messages: Sequence[ChatMessage]) -> None:
        """Warn once when a placeholder stays unfilled although a message's ``extra_args``
        has its name: that filled the prompt in Apache Flink Agents 0.2, not since 0.3."""
        if self._hinted:
            return
        named = {k for m in messages for k in m.extra_args} & prompt.variables
        if named:
            self._hinted = True
            log.warning(
                "prompt of chat model setup %s has placeholders %s that no prompt_args fill; "
                "message extra_args with these names are not used for filling (as in Apache "
                "Flink Agents 0.3): send ChatRequestEvent(..., prompt_args={...})",
                type(self).__name__,
                sorted(named),
            )

    def chat(
        self,
        messages: Sequence[ChatMessage],
        prompt_args: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """Ask the model (prompt applied and filled from ``prompt_args``, tools offered)."""
        return self.get_connection().chat(
            self.prepare_messages(messages, prompt_args),
            self.get_tools() or None,
            **{**self.model_kwargs, **kwargs},
        )

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        prompt_args: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """Asynchronous :meth:`chat`.

        A subclass that overrides only :meth:`chat` (as setups written for Apache Flink
        Agents do) has that ``chat`` run on a worker thread.
        """
        if type(self).chat is not BaseChatModelSetup.chat:
            if prompt_args is not None:
                kwargs["prompt_args"] = prompt_args
            return await asyncio.to_thread(self.chat, messages, **kwargs)
        # Looking tools up may create resources (an MCP server connects and lists its
        # tools): do it off the event loop so other keys are not held up.
        offers = self.tools or self.skills
        tools = await asyncio.to_thread(self.get_tools) if offers else None
        return await self.get_connection().achat(
            self.prepare_messages(messages, prompt_args),
            tools or None,
            **{**self.model_kwargs, **kwargs},
        )
