"""Anthropic's Messages API (``POST /v1/messages``) over ``httpx``.

Example::

    agent.add_resource("claude", ResourceDescriptor(clazz=AnthropicChatModelConnection))
    agent.add_resource("model", ResourceDescriptor(
        clazz=AnthropicChatModelSetup, connection="claude", model="claude-sonnet-4-5",
        tools=["add"]))

The API key comes from ``api_key`` or the ``ANTHROPIC_API_KEY`` environment variable and is
kept out of the plan JSON, ``repr``, logs and error messages.

Mapping: system messages become the top-level ``system`` text; an assistant message's tool
calls become ``tool_use`` blocks (their ids are Anthropic's ``toolu_...`` ids, kept across
the loop); tool results become ``tool_result`` blocks of one user turn, matched by
``tool_use_id``.

Structured output (``structured_output`` on the setup): ``"tool"`` (default) is tool-forced
JSON: a tool whose input schema is the output schema is offered and required
(``tool_choice``; with the agent's tools, ``any`` tool), and its input becomes the reply's
JSON content; ``"native"`` uses the API's own structured outputs (``output_format`` with a
JSON schema, beta header ``structured-outputs-2025-11-13``; models that support it);
``"prompt"`` only adds the schema to the system text.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, SecretStr

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import ModelCallError
from flink_agents.integrations._common import (
    HttpJsonClient,
    secret_value,
    snippet,
    usage,
)
from flink_agents.integrations._throttling import anthropic_is_throttling
from flink_agents.integrations.chat_models._calls import ChatCall, RetriedChat
from flink_agents.integrations.chat_models._messages import (
    OUTPUT_TOOL,
    OUTPUT_TOOL_DESCRIPTION,
    answer_from_output_tool,
    assistant_reply,
    call_arguments,
    call_name,
    make_call,
    schema_instruction,
    tool_call_id,
)

ANTHROPIC_VERSION = "2023-06-01"
#: The beta of the API's own structured outputs (``output_format``).
STRUCTURED_OUTPUTS_BETA = "structured-outputs-2025-11-13"

StructuredOutput = Literal["tool", "native", "prompt", "off"]


def to_anthropic_messages(
    messages: Sequence[ChatMessage],
) -> tuple[str | None, list[dict[str, Any]]]:
    """Our messages as ``(system text, Messages API messages)``.

    Consecutive messages of the same API role are merged into one turn (several tool
    results answer one assistant turn together).
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for m in messages:
        if m.role is MessageRole.SYSTEM:
            system.append(m.content)
        elif m.role is MessageRole.TOOL:
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": tool_call_id(m),
                "content": m.content,
            }
            if m.extra_args.get("is_error"):
                block["is_error"] = True
            add("user", [block])
        elif m.role is MessageRole.ASSISTANT:
            blocks: list[dict[str, Any]] = []
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for c in m.tool_calls:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": str(c.get("id")),
                        "name": call_name(c),
                        "input": call_arguments(c),
                    }
                )
            if blocks:
                add("assistant", blocks)
        else:
            add("user", [{"type": "text", "text": m.content}])
    return ("\n\n".join(system) if system else None), turns


def to_anthropic_tool(tool: Tool) -> dict[str, Any]:
    """A tool in the Messages API format."""
    return {
        "name": tool.metadata.name,
        "description": tool.metadata.description,
        "input_schema": tool.metadata.args_schema,
    }


def anthropic_usage(data: Any) -> tuple[Any, Any] | None:
    """``(input tokens, output tokens)`` of a Messages reply."""
    u = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(u, dict):
        return None
    return u.get("input_tokens"), u.get("output_tokens")


class AnthropicChatModelConnection(RetriedChat, BaseChatModelConnection, HttpJsonClient):
    """Client of the Anthropic Messages API (or a server compatible with it).

    Attributes:
        api_key: the API key; default: the ``ANTHROPIC_API_KEY`` environment variable.
        base_url: the API's base URL, default ``https://api.anthropic.com``.
        anthropic_version: the ``anthropic-version`` header.
        timeout: seconds one attempt may take.
        max_retries: further attempts after 429, 5xx (529 overloaded), timeouts or
            connection errors.
        retry_initial_backoff: seconds before the first retry (doubling, with jitter).
        retry_max_backoff: upper bound of one wait.
        max_concurrency: calls this connection runs at once per task slot.
    """

    PROVIDER = "anthropic"

    api_key: SecretStr | None = Field(default=None, repr=False)
    base_url: str = "https://api.anthropic.com"
    anthropic_version: str = ANTHROPIC_VERSION

    def _key(self) -> str:
        key = secret_value(self.api_key) or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ModelCallError(
                "no API key: pass api_key= or set the ANTHROPIC_API_KEY environment variable",
                provider=self.PROVIDER,
            )
        return key

    def _secrets(self) -> tuple[str | None, ...]:
        return (secret_value(self.api_key), os.environ.get("ANTHROPIC_API_KEY"))

    def _base_url(self) -> str:
        return self.base_url

    def _is_throttling(self, status: int, body: Any) -> bool:
        error = body.get("error") if isinstance(body, dict) else None
        kind = error.get("type") if isinstance(error, dict) else None
        return anthropic_is_throttling(status, kind)

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self._key(), "anthropic-version": self.anthropic_version}

    def _request(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], str]:
        kwargs = dict(kwargs)
        model = kwargs.pop("model", None)
        if not model:
            raise ModelCallError(
                "no model name: set model= on the chat model setup", provider=self.PROVIDER
            )
        self._key()  # fail before sending when there is no key
        schema = kwargs.pop("output_schema", None)
        mode: StructuredOutput = kwargs.pop("structured_output", None) or "tool"
        try:
            system, turns = to_anthropic_messages(messages)
        except ValueError as exc:
            raise ModelCallError(str(exc), provider=self.PROVIDER, model=model) from None
        if schema is not None and mode == "prompt":
            system = "\n\n".join(s for s in (system, schema_instruction(schema)) if s)
        request: dict[str, Any] = {
            "model": model,
            "messages": turns,
            "max_tokens": kwargs.pop("max_tokens", None) or 1024,
        }
        if system:
            request["system"] = system
        specs = [to_anthropic_tool(t) for t in tools or []]
        if schema is not None and mode == "tool":
            specs.append(
                {
                    "name": OUTPUT_TOOL,
                    "description": OUTPUT_TOOL_DESCRIPTION,
                    "input_schema": schema,
                }
            )
            request["tool_choice"] = (
                {"type": "any"} if tools else {"type": "tool", "name": OUTPUT_TOOL}
            )
        elif schema is not None and mode == "native":
            request["output_format"] = {"type": "json_schema", "schema": schema}
        if specs:
            request["tools"] = specs
        request.update({k: v for k, v in kwargs.items() if v is not None})
        return request, model

    @staticmethod
    def _extra_headers(request: dict[str, Any]) -> dict[str, str] | None:
        return {"anthropic-beta": STRUCTURED_OUTPUTS_BETA} if "output_format" in request else None

    @staticmethod
    def _forced(request: dict[str, Any]) -> bool:
        return any(t.get("name") == OUTPUT_TOOL for t in request.get("tools") or [])

    def _parse(self, data: Any, model: str, forced: bool = False) -> ChatMessage:
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(blocks, list):
            raise ModelCallError(
                f"the reply has no content blocks: {snippet(str(data))}",
                provider=self.PROVIDER,
                model=model,
            )
        texts, thoughts, calls = [], [], []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                texts.append(block.get("text", ""))
            elif kind == "thinking":
                thoughts.append(block.get("thinking", ""))
            elif kind == "tool_use":
                calls.append(make_call(block.get("id"), block.get("name", ""), block.get("input")))
        content = "".join(texts)
        if forced:
            content, calls = answer_from_output_tool(content, calls)
        u = data.get("usage") or {}
        return assistant_reply(
            content,
            calls,
            {
                "model": data.get("model") or model,
                "finish_reason": data.get("stop_reason"),
                "usage": usage(u.get("input_tokens"), u.get("output_tokens")) if u else None,
                "reasoning": "\n".join(thoughts) or None,
            },
        )

    def _chat_call(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        """A ``POST /v1/messages`` call; see :class:`AnthropicChatModelSetup` for the options."""
        request, model = self._request(messages, tools, kwargs)
        headers, forced = self._extra_headers(request), self._forced(request)
        return ChatCall(
            model=model,
            attempt=lambda: self._post("/v1/messages", request, headers),
            aattempt=lambda: self._apost("/v1/messages", request, headers),
            usage_of=anthropic_usage,
            parse=lambda data: self._parse(data, model, forced),
        )

    def close(self) -> None:
        """Close the HTTP clients."""
        self._close_clients()


class AnthropicChatModelSetup(BaseChatModelSetup):
    """How an agent uses a Claude model.

    Attributes:
        connection: name of the :class:`AnthropicChatModelConnection` resource.
        model: the model name.
        max_tokens: most tokens to generate (required by the API; default 1024).
        temperature: sampling temperature.
        structured_output: how an output schema is asked for: ``"tool"`` (tool-forced JSON,
            default), ``"native"`` (the API's ``output_format``), ``"prompt"`` or ``"off"``.
        additional_kwargs: further request fields (``top_k``, ``thinking``, ``tool_choice``...).
    """

    model: str = "claude-sonnet-4-5"
    max_tokens: int = 1024
    temperature: float | None = None
    structured_output: StructuredOutput = "tool"
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "structured_output": self.structured_output,
            **self.additional_kwargs,
        }
