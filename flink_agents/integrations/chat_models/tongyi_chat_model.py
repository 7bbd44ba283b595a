"""Tongyi Qianwen (Qwen) models on Alibaba Cloud's DashScope, through the ``dashscope``
SDK (``pip install 'flink-agents-py[tongyi]'``; class names as in Apache Flink Agents).

Example::

    agent.add_resource("tongyi", ResourceDescriptor(clazz=TongyiChatModelConnection))
    agent.add_resource("model", ResourceDescriptor(
        clazz=TongyiChatModelSetup, connection="tongyi", model="qwen-plus", tools=["add"]))

The key comes from ``api_key`` or ``DASHSCOPE_API_KEY`` and stays out of the plan, ``repr``,
logs and errors. Why the SDK rather than DashScope's OpenAI-compatible mode: see
:mod:`flink_agents.integrations._dashscope`.

Requests use DashScope's ``message`` result format: OpenAI-style messages, tools and tool
calls. An output schema is sent as JSON mode (``response_format={"type": "json_object"}``,
which every Qwen chat model has) with the schema as a system instruction;
``structured_output="json_schema"`` sends it as a ``json_schema`` response format (models
that support it), ``"off"`` only as the instruction. Usage comes from ``input_tokens`` /
``output_tokens``; a throttling answer (``Throttling.*``) is retried. Asynchronous calls run
the SDK's synchronous ``Generation.call`` on a worker thread (its ``AioGeneration`` leaves an
aiohttp session per call behind).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import ModelCallError
from flink_agents.integrations._common import snippet, usage
from flink_agents.integrations._dashscope import DashScopeClient, dashscope_sdk
from flink_agents.integrations.chat_models._calls import ChatCall, RetriedChat
from flink_agents.integrations.chat_models._messages import (
    assistant_reply,
    make_call,
    schema_instruction,
)
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    response_format,
    to_openai_messages,
)

DEFAULT_MODEL = "qwen-plus"
DEFAULT_REQUEST_TIMEOUT = 60.0

StructuredOutput = Literal["json_object", "json_schema", "off"]


def to_dashscope_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Our messages in DashScope's ``message`` format (OpenAI's, content never null)."""
    out = to_openai_messages(messages)
    for m in out:
        if m.get("content") is None:
            m["content"] = ""
    return out


class TongyiChatModelConnection(RetriedChat, BaseChatModelConnection, DashScopeClient):
    """Client of DashScope's text generation service.

    Attributes:
        api_key: the DashScope API key (default: ``DASHSCOPE_API_KEY``).
        base_url: the API's base URL (default: ``DASHSCOPE_HTTP_BASE_URL``, else DashScope's
            mainland endpoint; the international one is
            ``https://dashscope-intl.aliyuncs.com/api/v1``).
        workspace: the Model Studio workspace id, if any.
        request_timeout: seconds one attempt may take (default 60).
        max_retries: further attempts after throttling, 5xx, timeouts or connection errors.
        max_concurrency: calls this connection runs at once per task slot.
    """

    def _request(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], str]:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        model = str(kwargs.pop("model", None) or DEFAULT_MODEL)
        kwargs.pop("extract_reasoning", None)  # reasoning is always kept when sent
        schema = kwargs.pop("output_schema", None)
        mode: StructuredOutput = kwargs.pop("structured_output", "json_object")
        messages = list(messages)
        if schema is not None:
            messages.insert(
                0, ChatMessage(role=MessageRole.SYSTEM, content=schema_instruction(schema))
            )
            if mode != "off" and "response_format" not in kwargs:
                kwargs["response_format"] = response_format(schema, mode)
        try:
            wire = to_dashscope_messages(messages)
        except ValueError as exc:
            raise ModelCallError(str(exc), provider=self.PROVIDER, model=model) from None
        request: dict[str, Any] = {
            "model": model,
            "messages": wire,
            "result_format": "message",
            **kwargs,
        }
        if tools:
            request["tools"] = [t.metadata.to_openai_tool() for t in tools]
        return request, model

    def _attempt(self, request: dict[str, Any]) -> Any:
        sdk = dashscope_sdk(type(self).__name__)
        try:
            response = sdk.Generation.call(**request, **self._call_kwargs())
        except ModelCallError:
            raise
        except Exception as exc:  # noqa: BLE001 - requests' errors, classified
            raise self._transport_failure(exc) from None
        return self._answer(response)

    def _parse(self, response: Any, model: str) -> ChatMessage:
        output: Any = getattr(response, "output", None)
        try:
            choice = output["choices"][0]
            message = dict(choice["message"])
        except (KeyError, IndexError, TypeError):
            raise ModelCallError(
                f"malformed reply: no choices in {snippet(str(response))}",
                provider=self.PROVIDER,
                model=model,
            ) from None
        calls = []
        for c in message.get("tool_calls") or []:
            fn = c.get("function") or {}
            calls.append(make_call(c.get("id"), fn.get("name", ""), fn.get("arguments", {})))
        u = getattr(response, "usage", None) or {}
        content = message.get("content") or ""
        if isinstance(content, list):  # multimodal models answer with parts
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return assistant_reply(
            content,
            calls,
            {
                "model": model,
                "finish_reason": choice.get("finish_reason"),
                "usage": usage(u.get("input_tokens"), u.get("output_tokens")) if u else None,
                "reasoning": message.get("reasoning_content") or None,
                "request_id": getattr(response, "request_id", None),
            },
        )

    def _chat_call(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        """A DashScope generation call; see :class:`TongyiChatModelSetup` for the options."""
        request, model = self._request(messages, tools, kwargs)
        return ChatCall(
            model=model,
            attempt=lambda: self._attempt(request),
            usage_of=_dashscope_usage,
            parse=lambda reply: self._parse(reply, model),
        )


def _dashscope_usage(response: Any) -> tuple[Any, Any] | None:
    u = getattr(response, "usage", None) or {}
    return (u.get("input_tokens"), u.get("output_tokens")) if u else None


class TongyiChatModelSetup(BaseChatModelSetup):
    """How an agent uses a Qwen model.

    Attributes:
        connection: name of the :class:`TongyiChatModelConnection` resource.
        model: the model name (default ``qwen-plus``).
        temperature: sampling temperature (0-2; default 0.7, as upstream).
        max_tokens: most tokens to generate.
        extract_reasoning: accepted as in Apache Flink Agents; reasoning
            (``reasoning_content``) is always put into ``extra_args["reasoning"]``.
        structured_output: ``"json_object"`` (default), ``"json_schema"`` or ``"off"``.
        additional_kwargs: further request parameters (``top_p``, ``enable_thinking``,
            ``seed``...).
    """

    model: str = DEFAULT_MODEL
    temperature: float | None = Field(default=0.7, ge=0.0, le=2.0)
    max_tokens: int | None = None
    extract_reasoning: bool = False
    structured_output: StructuredOutput = "json_object"
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "structured_output": self.structured_output,
            **self.additional_kwargs,
        }
