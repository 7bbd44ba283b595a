"""Google Gemini through the ``google-genai`` SDK, on the Gemini API or Vertex AI
(``pip install 'flink-agents-py[gemini]'``; class names as Apache Flink Agents' Java
integration).

Example::

    agent.add_resource("gemini", ResourceDescriptor(clazz=GeminiChatModelConnection))
    agent.add_resource("model", ResourceDescriptor(
        clazz=GeminiChatModelSetup, connection="gemini", model="gemini-2.5-flash",
        tools=["add"]))
    # Vertex AI:
    ResourceDescriptor(clazz=GeminiChatModelConnection, vertex_ai=True,
                       project="my-project", location="europe-west4")

Mapping: system messages become ``system_instruction``; assistant turns are ``model``
contents with ``function_call`` parts; tool results are ``function_response`` parts of one
user turn, matched by the call's id when Gemini gave one, else by name. Tools are function
declarations with their JSON schema. An output schema is Gemini's response schema
(``response_mime_type="application/json"`` + ``response_json_schema``) when the call offers
no tools; with tools (a ReAct loop) it is added as an instruction, because Gemini 2.x rejects
function calling together with a JSON response type (``structured_output="json_schema"``
sends both, for models that accept it). Usage: ``prompt_token_count`` and
``candidates_token_count`` + ``thoughts_token_count``. ``RESOURCE_EXHAUSTED`` is retried.
Asynchronous calls run the SDK's synchronous client on a worker thread: its ``aio`` clients
belong to one event loop each and cannot be closed once their loop is gone.
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
from flink_agents.integrations._gemini import GeminiClient, genai_sdk
from flink_agents.integrations.chat_models._calls import ChatCall, RetriedChat
from flink_agents.integrations.chat_models._messages import (
    assistant_reply,
    call_arguments,
    call_name,
    make_call,
    merge_turns,
    schema_instruction,
)

StructuredOutput = Literal["auto", "json_schema", "prompt", "off"]

#: Setup options that are ``GenerateContentConfig`` fields (ours -> the SDK's).
_CONFIG = {
    "temperature": "temperature",
    "max_tokens": "max_output_tokens",
    "max_output_tokens": "max_output_tokens",
    "top_p": "top_p",
    "top_k": "top_k",
    "stop_sequences": "stop_sequences",
    "seed": "seed",
    "thinking_config": "thinking_config",
    "safety_settings": "safety_settings",
    "candidate_count": "candidate_count",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}


def to_gemini_contents(
    messages: Sequence[ChatMessage],
) -> tuple[str | None, list[dict[str, Any]]]:
    """Our messages as ``(system instruction, contents)`` in the SDK's dict form."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role is MessageRole.SYSTEM:
            system.append(m.content)
        elif m.role is MessageRole.TOOL:
            response: dict[str, Any] = {
                "name": str(m.extra_args.get("name") or ""),
                "response": {"error" if m.extra_args.get("is_error") else "result": m.content},
            }
            # Gemini API calls come without ids; ours are then made up ("call_..." from
            # make_call) and not sent back: Gemini matches the response by name.
            original = m.extra_args.get("tool_call_id")
            if original and not str(original).startswith("call_"):
                response["id"] = str(original)
            merge_turns(turns, "user", [{"function_response": response}])
        elif m.role is MessageRole.ASSISTANT:
            parts: list[dict[str, Any]] = []
            if m.content:
                parts.append({"text": m.content})
            for c in m.tool_calls:
                call: dict[str, Any] = {"name": call_name(c), "args": call_arguments(c)}
                if c.get("id") and not str(c["id"]).startswith("call_"):
                    call["id"] = str(c["id"])
                parts.append({"function_call": call})
            if parts:
                merge_turns(turns, "model", parts)
        else:
            merge_turns(turns, "user", [{"text": m.content}])
    return ("\n\n".join(system) if system else None), [
        {"role": t["role"], "parts": t["content"]} for t in turns
    ]


class GeminiChatModelConnection(RetriedChat, BaseChatModelConnection, GeminiClient):
    """Client of Gemini (Gemini API or Vertex AI).

    Attributes:
        api_key: a Gemini API key (default ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``).
        vertex_ai: use Vertex AI (with ``project``, ``location``).
        project: the Google Cloud project (Vertex AI).
        location: the Vertex AI region.
        access_token: an OAuth access token for Vertex AI.
        base_url: another endpoint.
        model: the default model (a setup's ``model`` wins).
        timeout: seconds one attempt may take.
        max_retries: further attempts after RESOURCE_EXHAUSTED, 5xx, timeouts, connection
            errors.
        max_concurrency: calls this connection runs at once per task slot.
    """

    model: str | None = None

    def _request(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], str]:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        model = kwargs.pop("model", None) or self.model
        if not model:
            raise ModelCallError(
                "no model name: set model= on the chat model setup", provider=self.PROVIDER
            )
        schema = kwargs.pop("output_schema", None)
        mode: StructuredOutput = kwargs.pop("structured_output", "auto")
        system, contents = to_gemini_contents(messages)
        config: dict[str, Any] = {
            "automatic_function_calling": {"disable": True},
        }
        for ours, field in _CONFIG.items():
            if ours in kwargs:
                config[field] = kwargs.pop(ours)
        config.update(kwargs)  # other GenerateContentConfig fields, by the SDK's names
        if tools:
            config["tools"] = [
                {
                    "function_declarations": [
                        {
                            "name": t.metadata.name,
                            "description": t.metadata.description,
                            "parameters_json_schema": t.metadata.args_schema,
                        }
                        for t in tools
                    ]
                }
            ]
        native = mode == "json_schema" or (mode == "auto" and not tools)
        if schema is not None and native:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = schema
        elif schema is not None and mode != "off":
            system = "\n\n".join(s for s in (system, schema_instruction(schema)) if s)
        if system:
            config["system_instruction"] = system
        return {"model": str(model), "contents": contents, "config": config}, str(model)

    def _attempt(self, request: dict[str, Any]) -> Any:
        try:
            return self.client.models.generate_content(**request)
        except ModelCallError:
            raise
        except Exception as exc:  # noqa: BLE001 - the SDK's and httpx's errors, classified
            raise self._failure(exc) from None

    def _parse(self, response: Any, model: str) -> ChatMessage:
        candidates = getattr(response, "candidates", None)
        if not candidates:
            feedback = getattr(response, "prompt_feedback", None)
            raise ModelCallError(
                "malformed reply: no candidates"
                + (f" (prompt feedback: {feedback})" if feedback else "")
                + f": {snippet(str(response))}",
                provider=self.PROVIDER,
                model=model,
            )
        candidate = candidates[0]
        parts = getattr(getattr(candidate, "content", None), "parts", None) or []
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[dict[str, Any]] = []
        for part in parts:
            if getattr(part, "function_call", None) is not None:
                fc = part.function_call
                calls.append(make_call(fc.id, fc.name or "", dict(fc.args or {})))
            elif getattr(part, "text", None):
                (thoughts if getattr(part, "thought", None) else texts).append(part.text)
        meta = getattr(response, "usage_metadata", None)
        tokens = None
        if meta is not None:
            completion = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
            tokens = usage(meta.prompt_token_count, completion)
        finish = getattr(candidate, "finish_reason", None)
        return assistant_reply(
            "".join(texts),
            calls,
            {
                "model": getattr(response, "model_version", None) or model,
                "finish_reason": getattr(finish, "value", finish),
                "usage": tokens,
                "reasoning": "\n".join(thoughts) or None,
            },
        )

    def _chat_call(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        """A ``generateContent`` call; see :class:`GeminiChatModelSetup` for the options."""
        genai_sdk(type(self).__name__)
        request, model = self._request(messages, tools, kwargs)
        return ChatCall(
            model=model,
            attempt=lambda: self._attempt(request),
            usage_of=_gemini_usage,
            parse=lambda reply: self._parse(reply, model),
        )

    def close(self) -> None:
        """Forget the SDK clients."""
        GeminiClient.close(self)


def _gemini_usage(response: Any) -> tuple[Any, Any] | None:
    meta = getattr(response, "usage_metadata", None)
    if meta is None:
        return None
    completion = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
    return meta.prompt_token_count, completion


class GeminiChatModelSetup(BaseChatModelSetup):
    """How an agent uses a Gemini model.

    Attributes:
        connection: name of the :class:`GeminiChatModelConnection` resource.
        model: the model name (``gemini-2.5-flash``...).
        temperature: sampling temperature.
        max_tokens: most tokens to generate (``max_output_tokens``).
        top_p: nucleus sampling.
        top_k: top-k sampling.
        structured_output: ``"auto"`` (response schema when no tools are offered, else an
            instruction), ``"json_schema"`` (always the response schema), ``"prompt"`` or
            ``"off"``.
        additional_kwargs: further ``GenerateContentConfig`` fields (``thinking_config``,
            ``safety_settings``, ``seed``...).
    """

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    top_k: float | None = None
    structured_output: StructuredOutput = "auto"
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "structured_output": self.structured_output,
            **self.additional_kwargs,
        }
