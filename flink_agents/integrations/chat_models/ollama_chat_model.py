"""Ollama's native chat API (``POST /api/chat``) over ``httpx``.

Example::

    agent.add_resource("ollama", ResourceDescriptor(
        clazz=OllamaChatModelConnection, base_url="http://localhost:11434"))
    agent.add_resource("model", ResourceDescriptor(
        clazz=OllamaChatModelSetup, connection="ollama", model="qwen3:8b", tools=["add"]))

Ollama's tool calls carry no ids: the connection makes one up for each call, and sends tool
results back with the tool's name (``tool_name``), which is how Ollama matches them. A
requested output schema goes out as Ollama's ``format`` (structured outputs). Reasoning
(``think``) comes back in ``extra_args["reasoning"]``, both from Ollama's ``thinking`` field
and, with ``extract_reasoning``, from ``<think>...</think>`` blocks in the content.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import ModelCallError
from flink_agents.integrations._common import HttpJsonClient, snippet, usage
from flink_agents.integrations._throttling import ollama_is_throttling
from flink_agents.integrations.chat_models._calls import ChatCall, RetriedChat
from flink_agents.integrations.chat_models._messages import (
    assistant_reply,
    call_arguments,
    call_name,
    make_call,
    split_reasoning,
)

#: Options that go into Ollama's ``options`` object rather than the request's top level.
_OPTIONS = frozenset(
    {
        "temperature",
        "num_ctx",
        "num_predict",
        "top_p",
        "top_k",
        "min_p",
        "seed",
        "stop",
        "repeat_penalty",
        "repeat_last_n",
        "presence_penalty",
        "frequency_penalty",
        "num_gpu",
        "num_thread",
    }
)


def to_ollama_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Our messages in Ollama's format."""
    out: list[dict[str, Any]] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role.value, "content": m.content}
        if m.role is MessageRole.ASSISTANT and m.tool_calls:
            item["tool_calls"] = [
                {"function": {"name": call_name(c), "arguments": call_arguments(c)}}
                for c in m.tool_calls
            ]
        elif m.role is MessageRole.TOOL:
            name = m.extra_args.get("name")
            if name:
                item["tool_name"] = name
        images = m.extra_args.get("images")
        if images:
            item["images"] = list(images)
        out.append(item)
    return out


def ollama_usage(data: Any) -> tuple[Any, Any] | None:
    """``(prompt tokens, completion tokens)`` of an Ollama reply."""
    if not isinstance(data, dict):
        return None
    return data.get("prompt_eval_count"), data.get("eval_count")


class OllamaChatModelConnection(RetriedChat, BaseChatModelConnection, HttpJsonClient):
    """Client of an Ollama server.

    Attributes:
        base_url: the server, default ``http://localhost:11434``.
        request_timeout: seconds one attempt may take (alias of ``timeout``).
        timeout: seconds one attempt may take.
        max_retries: further attempts after 429, 5xx, timeouts or connection errors.
        retry_initial_backoff: seconds before the first retry (doubling, with jitter).
        retry_max_backoff: upper bound of one wait.
        max_concurrency: calls this connection runs at once per task slot.
    """

    PROVIDER = "ollama"

    base_url: str = "http://localhost:11434"
    request_timeout: float | None = Field(default=None, gt=0)

    def model_post_init(self, context: Any, /) -> None:
        """Apply ``request_timeout`` (the upstream name) to ``timeout``."""
        if self.request_timeout is not None:
            self.timeout = self.request_timeout

    def _is_throttling(self, status: int, body: Any) -> bool:
        return ollama_is_throttling(status, str(self._error_text(body) or ""))

    def _base_url(self) -> str:
        return self.base_url

    def _request(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], str, bool]:
        kwargs = dict(kwargs)
        model = kwargs.pop("model", None)
        if not model:
            raise ModelCallError(
                "no model name: set model= on the chat model setup", provider=self.PROVIDER
            )
        extract = bool(kwargs.pop("extract_reasoning", True))
        schema = kwargs.pop("output_schema", None)
        request: dict[str, Any] = {
            "model": model,
            "messages": to_ollama_messages(messages),
            "stream": False,
        }
        if tools:
            request["tools"] = [t.metadata.to_openai_tool() for t in tools]
        if schema is not None and "format" not in kwargs:
            request["format"] = schema
        options = dict(kwargs.pop("options", None) or {})
        for key, value in kwargs.items():
            if value is None:
                continue
            if key in _OPTIONS:
                options[key] = value
            else:
                request[key] = value  # keep_alive, think, format...
        if options:
            request["options"] = options
        return request, model, extract

    def _parse(self, data: Any, model: str, extract: bool) -> ChatMessage:
        message = data.get("message") if isinstance(data, dict) else None
        if not isinstance(message, dict):
            raise ModelCallError(
                f"the reply has no message: {snippet(str(data))}",
                provider=self.PROVIDER,
                model=model,
            )
        calls = []
        for raw in message.get("tool_calls") or []:
            fn = raw.get("function") or {}
            calls.append(make_call(raw.get("id"), fn.get("name", ""), fn.get("arguments", {})))
        content = message.get("content") or ""
        reasoning = message.get("thinking") or None
        if extract:
            content, tagged = split_reasoning(content)
            reasoning = reasoning or tagged
        return assistant_reply(
            content,
            calls,
            {
                "model": data.get("model") or model,
                "finish_reason": data.get("done_reason"),
                "usage": usage(data.get("prompt_eval_count"), data.get("eval_count")),
                "reasoning": reasoning,
            },
        )

    def _chat_call(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        """A ``POST /api/chat`` call; see :class:`OllamaChatModelSetup` for the options."""
        request, model, extract = self._request(messages, tools, kwargs)
        return ChatCall(
            model=model,
            attempt=lambda: self._post("/api/chat", request),
            aattempt=lambda: self._apost("/api/chat", request),
            usage_of=ollama_usage,
            parse=lambda data: self._parse(data, model, extract),
        )

    def close(self) -> None:
        """Close the HTTP clients."""
        self._close_clients()


class OllamaChatModelSetup(BaseChatModelSetup):
    """How an agent uses an Ollama model.

    Attributes:
        connection: name of the :class:`OllamaChatModelConnection` resource.
        model: the model name (``qwen3:8b``...).
        temperature: sampling temperature.
        num_ctx: context window size in tokens.
        keep_alive: how long Ollama keeps the model loaded (``"5m"``, seconds...).
        think: ask a reasoning model to think (``True``/``False``; ``None`` leaves the
            server's default).
        extract_reasoning: move ``<think>...</think>`` blocks out of the content into
            ``extra_args["reasoning"]``.
        additional_kwargs: further options (``top_k``, ``seed``, ...).
    """

    temperature: float | None = 0.75
    num_ctx: int | None = None
    keep_alive: str | float | None = None
    think: bool | None = None
    extract_reasoning: bool = True
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {
            "model": self.model,
            "temperature": self.temperature,
            "num_ctx": self.num_ctx,
            "keep_alive": self.keep_alive,
            "think": self.think,
            "extract_reasoning": self.extract_reasoning,
            **self.additional_kwargs,
        }
