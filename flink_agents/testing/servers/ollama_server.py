"""A stand-in for Ollama's native API (``/api/chat``, ``/api/embed``)."""

from __future__ import annotations

from typing import Any, ClassVar

from flink_agents.api.chat_message import ChatMessage
from flink_agents.testing.servers._provider import ProviderServer, tool_calls_of, usage_of
from flink_agents.testing.servers._scripted import Request

__all__ = ["OllamaServer", "ollama_embeddings_reply", "ollama_reply"]


def ollama_reply(
    content: str = "",
    tool_calls: list[tuple[str, dict[str, Any]]] | None = None,
    *,
    thinking: str | None = None,
    model: str = "qwen3",
    prompt_tokens: int = 20,
    completion_tokens: int = 5,
) -> dict[str, Any]:
    """An ``/api/chat`` reply body.

    Args:
        content: the assistant's text.
        tool_calls: ``(name, arguments)`` of each tool call (Ollama's calls have no ids).
        thinking: the model's reasoning, in Ollama's ``thinking`` field.
        model: the model named in the reply.
        prompt_tokens: reported input tokens (``prompt_eval_count``).
        completion_tokens: reported output tokens (``eval_count``).
    """
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    if tool_calls:
        message["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a in tool_calls]
    return {
        "model": model,
        "created_at": "2025-01-01T00:00:00Z",
        "message": message,
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "prompt_eval_count": prompt_tokens,
        "eval_count": completion_tokens,
    }


def ollama_embeddings_reply(vectors: list[list[float]], *, model: str = "test-embedding") -> Any:
    """An ``/api/embed`` reply body."""
    return {"model": model, "embeddings": vectors}


class OllamaServer(ProviderServer):
    """Ollama's ``POST /api/chat`` and ``POST /api/embed``.

    Point ``OllamaChatModelConnection(base_url=server.base_url)`` at it. Ollama has no
    keys: ``api_key`` checks an ``Authorization: Bearer`` header (a proxy in front of it).
    To stand in at Ollama's default address, pass ``port=11434`` inside
    :func:`flink_agents.testing.ports.held_port`.
    """

    provider: ClassVar[str] = "ollama"
    chat_path: ClassVar[str] = "/api/chat"
    embeddings_path: ClassVar[str | None] = "/api/embed"

    def chat_body(self, message: ChatMessage, request: Request) -> Any:
        body = request.body if isinstance(request.body, dict) else {}
        prompt, completion = usage_of(message, (20, 5))
        return ollama_reply(
            message.content,
            [(n, a) for _, n, a in tool_calls_of(message)],
            model=str(body.get("model") or "qwen3"),
            prompt_tokens=prompt,
            completion_tokens=completion,
        )

    def embeddings_body(self, vectors: list[list[float]], request: Request) -> Any:
        body = request.body if isinstance(request.body, dict) else {}
        return ollama_embeddings_reply(vectors, model=str(body.get("model") or "test-embedding"))
