"""A stand-in for OpenAI's Chat Completions and Embeddings APIs (and any server compatible
with them: vLLM, llama.cpp's server, LiteLLM, ...)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from flink_agents.api.chat_message import ChatMessage
from flink_agents.testing.servers._provider import ProviderServer, tool_calls_of, usage_of
from flink_agents.testing.servers._scripted import Request

__all__ = ["OpenAIServer", "openai_embeddings_reply", "openai_reply"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
}


def openai_reply(
    content: str | None = "",
    tool_calls: list[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    model: str = "test-model",
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
    **message_extra: Any,
) -> dict[str, Any]:
    """A Chat Completions reply body.

    Args:
        content: the assistant's text (None: a tool-call-only reply).
        tool_calls: ``(id, name, arguments)`` of each tool call asked for.
        model: the model named in the reply.
        prompt_tokens: reported input tokens.
        completion_tokens: reported output tokens.
        **message_extra: further fields of the message (``reasoning_content``, ...).
    """
    message: dict[str, Any] = {"role": "assistant", "content": content, **message_extra}
    if tool_calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in tool_calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def openai_embeddings_reply(vectors: list[list[float]], *, model: str = "test-embedding") -> Any:
    """An Embeddings reply body for ``vectors`` (in input order)."""
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
        ],
        "model": model,
        "usage": {"prompt_tokens": 0, "total_tokens": 0},
    }


class OpenAIServer(ProviderServer):
    """OpenAI's ``POST /v1/chat/completions`` and ``POST /v1/embeddings``.

    Point ``OpenAIChatModelConnection(api_base_url=server.base_url, ...)`` (or an
    embedding connection) at it. A scripted message's ``extra_args["usage"]``
    (``prompt_tokens`` / ``completion_tokens``) sets the reported usage.
    """

    provider: ClassVar[str] = "openai"
    chat_path: ClassVar[str] = "/v1/chat/completions"
    embeddings_path: ClassVar[str | None] = "/v1/embeddings"

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``, as OpenAI clients are configured."""
        return self.url + "/v1"

    @classmethod
    def error_body(cls, message: str, status: int) -> Any:
        kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    def chat_body(self, message: ChatMessage, request: Request) -> Any:
        calls = [(i or self.next_id("call"), n, a) for i, n, a in tool_calls_of(message)]
        prompt, completion = usage_of(message, (11, 7))
        return openai_reply(
            message.content if message.content or not calls else None,
            calls,
            model=_model(request, "test-model"),
            prompt_tokens=prompt,
            completion_tokens=completion,
        )

    def embeddings_body(self, vectors: list[list[float]], request: Request) -> Any:
        return openai_embeddings_reply(vectors, model=_model(request, "test-embedding"))


def _model(request: Request, default: str) -> str:
    body = request.body if isinstance(request.body, dict) else {}
    return str(body.get("model") or default)
