"""A stand-in for Anthropic's Messages API (``POST /v1/messages``)."""

from __future__ import annotations

from typing import Any, ClassVar

from flink_agents.api.chat_message import ChatMessage
from flink_agents.testing.servers._provider import ProviderServer, tool_calls_of, usage_of
from flink_agents.testing.servers._scripted import Request

__all__ = ["AnthropicServer", "anthropic_reply"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def anthropic_reply(
    text: str | None = None,
    tool_uses: list[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    model: str = "claude-test",
    thinking: str | None = None,
    input_tokens: int = 30,
    output_tokens: int = 9,
) -> dict[str, Any]:
    """A Messages API reply body.

    Args:
        text: the text block (None: none).
        tool_uses: ``(id, name, input)`` of each ``tool_use`` block.
        model: the model named in the reply.
        thinking: a ``thinking`` block before the text.
        input_tokens: reported input tokens.
        output_tokens: reported output tokens.
    """
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": "sig"})
    if text is not None:
        content.append({"type": "text", "text": text})
    for i, n, a in tool_uses or []:
        content.append({"type": "tool_use", "id": i, "name": n, "input": a})
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if tool_uses else "end_turn",
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


class AnthropicServer(ProviderServer):
    """Anthropic's ``POST /v1/messages`` (no embeddings: Anthropic has none).

    Point ``AnthropicChatModelConnection(base_url=server.base_url, ...)`` at it; the key
    travels in ``x-api-key``. "Overloaded" is Anthropic's 529.
    """

    provider: ClassVar[str] = "anthropic"
    chat_path: ClassVar[str] = "/v1/messages"
    overloaded_status: ClassVar[int] = 529

    @classmethod
    def error_body(cls, message: str, status: int) -> Any:
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def presented_key(self, request: Request) -> str | None:
        return request.headers.get("x-api-key")

    def chat_body(self, message: ChatMessage, request: Request) -> Any:
        body = request.body if isinstance(request.body, dict) else {}
        calls = [(i or self.next_id("toolu"), n, a) for i, n, a in tool_calls_of(message)]
        prompt, completion = usage_of(message, (30, 9))
        return anthropic_reply(
            message.content if message.content or not calls else None,
            calls,
            model=str(body.get("model") or "claude-test"),
            input_tokens=prompt,
            output_tokens=completion,
        )
