"""OpenAI and every OpenAI-compatible server (vLLM, llama.cpp, LM Studio, Azure-compatible
endpoints, Ollama's ``/v1``), through the official ``openai`` SDK.

Example::

    agent.add_resource("openai", ResourceDescriptor(
        clazz=OpenAIChatModelConnection, api_base_url="http://127.0.0.1:8000/v1"))
    agent.add_resource("model", ResourceDescriptor(
        clazz=OpenAIChatModelSetup, connection="openai", model="gpt-4o-mini", tools=["add"]))

The API key comes from ``api_key`` or the ``OPENAI_API_KEY`` environment variable. It is
kept out of the plan JSON, of ``repr``, logs and error messages. A server that needs no key
(a local vLLM) gets a placeholder when neither is set and ``api_base_url`` is given.

Retries (429, 5xx, timeouts, connection errors) are ours, with exponential backoff
(see :class:`~flink_agents.integrations._common.ModelClientSettings`), so the SDK's own
retries are off.

``api="responses"`` on the connection uses the Responses API (``POST /v1/responses``)
instead of Chat Completions, with the same tools, structured output and usage (see
:mod:`flink_agents.integrations.chat_models.openai._responses`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import openai
from pydantic import Field

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import FlinkAgentsError, ModelCallError
from flink_agents.integrations._common import snippet, usage
from flink_agents.integrations._openai import OpenAIClient
from flink_agents.integrations.chat_models._calls import ChatCall, RetriedChat
from flink_agents.integrations.chat_models._messages import (
    assistant_reply,
    make_call,
    split_reasoning,
    tool_call_id,
)
from flink_agents.integrations.chat_models.openai import _responses

#: Request parameters the SDK's ``chat.completions.create`` takes by name; any other
#: option goes to the server in ``extra_body`` (vLLM's ``top_k``, for example).
_SDK_PARAMS = frozenset(
    {
        "temperature",
        "max_tokens",
        "max_completion_tokens",
        "top_p",
        "seed",
        "stop",
        "n",
        "logprobs",
        "top_logprobs",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "reasoning_effort",
        "tool_choice",
        "parallel_tool_calls",
        "user",
        "response_format",
        "metadata",
        "store",
        "service_tier",
    }
)

StructuredOutput = Literal["json_schema", "json_object", "off"]
#: Which OpenAI API the connection calls.
Api = Literal["chat_completions", "responses"]


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Our messages in the Chat Completions format (tool calls with JSON-text arguments,
    tool results with their ``tool_call_id``)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role is MessageRole.TOOL:
            out.append({"role": "tool", "tool_call_id": tool_call_id(m), "content": m.content})
        elif m.role is MessageRole.ASSISTANT and m.tool_calls:
            calls = []
            for c in m.tool_calls:
                fn = c.get("function") or {}
                args = fn.get("arguments", {})
                calls.append(
                    {
                        "id": str(c.get("id")),
                        "type": "function",
                        "function": {
                            "name": fn.get("name", ""),
                            "arguments": args if isinstance(args, str) else json.dumps(args),
                        },
                    }
                )
            out.append({"role": "assistant", "content": m.content or None, "tool_calls": calls})
        else:
            out.append({"role": m.role.value, "content": m.content})
    return out


def response_format(schema: dict[str, Any] | None, mode: StructuredOutput) -> dict[str, Any] | None:
    """The ``response_format`` asking for JSON that follows ``schema``."""
    if schema is None or mode == "off":
        return None
    if mode == "json_object":
        return {"type": "json_object"}
    name = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in str(schema.get("title", "")))
    return {
        "type": "json_schema",
        "json_schema": {"name": name or "output", "schema": schema, "strict": False},
    }


def openai_usage(reply: Any) -> tuple[Any, Any] | None:
    """``(prompt tokens, completion tokens)`` of an SDK reply (chat or embeddings)."""
    u = getattr(reply, "usage", None)
    if u is None:
        return None
    prompt = getattr(u, "prompt_tokens", None)
    if prompt is None:  # the Responses API
        return getattr(u, "input_tokens", None), getattr(u, "output_tokens", None)
    return prompt, getattr(u, "completion_tokens", None)


class OpenAIChatModelConnection(RetriedChat, BaseChatModelConnection, OpenAIClient):
    """Client of the OpenAI Chat Completions API or a server compatible with it.

    Attributes:
        api_key: the API key; default: the ``OPENAI_API_KEY`` environment variable.
        api_base_url: the server's base URL (``http://host:port/v1``); default: OpenAI's.
        default_headers: extra HTTP headers sent with every request.
        timeout: seconds one attempt may take.
        max_retries: further attempts after 429, 5xx, timeouts or connection errors.
        retry_initial_backoff: seconds before the first retry (doubling, with jitter).
        retry_max_backoff: upper bound of one wait.
        max_concurrency: calls this connection runs at once per task slot.
        api: ``"chat_completions"`` (``POST /chat/completions``, every OpenAI-compatible
            server) or ``"responses"`` (OpenAI's Responses API, ``POST /responses``).
    """

    api: Api = "chat_completions"

    def _model_of(self, kwargs: dict[str, Any]) -> str:
        model = kwargs.pop("model", None)
        if not model:
            raise ModelCallError(
                "no model name: set model= on the chat model setup", provider=self.PROVIDER
            )
        return str(model)

    def _request(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], str]:
        if self.api == "responses":
            return self._responses_request(messages, tools, kwargs)
        kwargs = dict(kwargs)
        model = self._model_of(kwargs)
        schema = kwargs.pop("output_schema", None)
        mode: StructuredOutput = kwargs.pop("structured_output", "json_schema")
        extra_body = dict(kwargs.pop("extra_body", None) or {})
        try:
            request: dict[str, Any] = {"model": model, "messages": to_openai_messages(messages)}
        except ValueError as exc:
            raise ModelCallError(str(exc), provider=self.PROVIDER, model=model) from None
        if tools:
            request["tools"] = [t.metadata.to_openai_tool() for t in tools]
        fmt = response_format(schema, mode)
        if fmt is not None and "response_format" not in kwargs:
            request["response_format"] = fmt
        for key, value in kwargs.items():
            if value is None:
                continue
            if key in _SDK_PARAMS:
                request[key] = value
            else:
                extra_body[key] = value
        if extra_body:
            request["extra_body"] = extra_body
        return request, model

    def _responses_request(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], str]:
        kwargs = dict(kwargs)
        model = self._model_of(kwargs)
        schema = kwargs.pop("output_schema", None)
        mode: StructuredOutput = kwargs.pop("structured_output", "json_schema")
        extra_body = dict(kwargs.pop("extra_body", None) or {})
        try:
            instructions, items = _responses.to_responses_input(messages)
        except ValueError as exc:
            raise ModelCallError(str(exc), provider=self.PROVIDER, model=model) from None
        request: dict[str, Any] = {"model": model, "input": items}
        if instructions:
            request["instructions"] = instructions
        if tools:
            request["tools"] = [_responses.to_responses_tool(t) for t in tools]
        fmt = _responses.text_format(schema, mode)
        if fmt is not None and "text" not in kwargs:
            request["text"] = fmt
        for key, value in kwargs.items():
            if value is None:
                continue
            key = _responses.RENAMED.get(key, key)
            if key in _responses.RESPONSES_PARAMS:
                request[key] = value
            else:
                extra_body[key] = value
        if extra_body:
            request["extra_body"] = extra_body
        return request, model

    def _endpoint(self) -> Any:
        return self.client.responses if self.api == "responses" else self.client.chat.completions

    def _aendpoint(self) -> Any:
        if self.api == "responses":
            return self.aclient.responses
        return self.aclient.chat.completions

    def _attempt(self, request: dict[str, Any]) -> Any:
        try:
            return self._endpoint().create(**request)
        except FlinkAgentsError:
            raise  # ours (a missing extra, no credentials): not a failed call
        except (openai.OpenAIError, ValueError) as exc:
            raise self._failure(exc) from None

    async def _aattempt(self, request: dict[str, Any]) -> Any:
        try:
            return await self._aendpoint().create(**request)
        except FlinkAgentsError:
            raise
        except (openai.OpenAIError, ValueError) as exc:
            raise self._failure(exc) from None

    def _reported_model(self, reply: Any, model: str) -> str:
        """The model name put into the reply's ``extra_args``."""
        return str(getattr(reply, "model", None) or model)

    def _parse_responses(self, response: Any, model: str) -> ChatMessage:
        try:
            text, found, reasoning = _responses.read_output(response)
        except ValueError:
            raise ModelCallError(
                f"malformed reply: no output items in {snippet(str(response))}",
                provider=self.PROVIDER,
                model=model,
            ) from None
        calls = [make_call(i, n, a) for i, n, a in found]
        u = getattr(response, "usage", None)
        incomplete = getattr(response, "incomplete_details", None)
        return assistant_reply(
            text,
            calls,
            {
                "model": self._reported_model(response, model),
                "finish_reason": getattr(incomplete, "reason", None)
                or ("tool_calls" if calls else getattr(response, "status", None)),
                "usage": usage(u.input_tokens, u.output_tokens) if u else None,
                "reasoning": reasoning,
                "response_id": getattr(response, "id", None),
            },
        )

    def _parse(self, completion: Any, model: str) -> ChatMessage:
        if self.api == "responses":
            return self._parse_responses(completion, model)
        choices = getattr(completion, "choices", None)
        if not choices:
            raise ModelCallError(
                f"the reply has no choices: {snippet(str(completion))}",
                provider=self.PROVIDER,
                model=model,
            )
        choice = choices[0]
        msg = choice.message
        calls = [
            make_call(c.id, c.function.name, c.function.arguments)
            for c in (msg.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        content, reasoning = split_reasoning(msg.content or "")
        extra = msg.model_extra or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning") or reasoning
        u = completion.usage
        return assistant_reply(
            content,
            calls,
            {
                "model": self._reported_model(completion, model),
                "finish_reason": choice.finish_reason,
                "usage": usage(u.prompt_tokens, u.completion_tokens) if u else None,
                "reasoning": reasoning,
                # A provider refusal is kept, also an empty one (as upstream's converter).
                "refusal": getattr(msg, "refusal", None),
            },
        )

    def _chat_call(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        """A Chat Completions or Responses call (``openai.OpenAI`` / ``openai.AsyncOpenAI``);
        see :class:`OpenAIChatModelSetup` for the options.
        """
        request, model = self._request(messages, tools, kwargs)
        return ChatCall(
            model=model,
            attempt=lambda: self._attempt(request),
            aattempt=lambda: self._aattempt(request),
            usage_of=openai_usage,
            parse=lambda reply: self._parse(reply, model),
        )

    def close(self) -> None:
        """Close the HTTP clients (``Resource.close`` would otherwise shadow the client's)."""
        OpenAIClient.close(self)


class OpenAIChatModelSetup(BaseChatModelSetup):
    """How an agent uses an OpenAI-compatible model.

    Attributes:
        connection: name of the :class:`OpenAIChatModelConnection` resource.
        model: the model name (default ``gpt-4o-mini``).
        temperature: sampling temperature.
        max_tokens: most tokens to generate.
        structured_output: how a requested output schema is sent: ``"json_schema"``
            (structured outputs), ``"json_object"`` (JSON mode, for servers without
            structured outputs) or ``"off"``.
        additional_kwargs: further request options (``top_p``, ``seed``, ``reasoning_effort``,
            server-specific ones...).
    """

    model: str = "gpt-4o-mini"
    temperature: float | None = None
    max_tokens: int | None = None
    structured_output: StructuredOutput = "json_schema"
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
