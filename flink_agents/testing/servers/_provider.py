"""The base of the provider stand-ins: routes chat and embedding requests, checks the key,
turns plain scripted replies (text, :class:`ChatMessage`, ``tool_call(...)``) into the
provider's wire format. A new provider is a subclass that names its paths and builds its
bodies (see ``openai_server.py`` for the smallest one)."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.integrations.embedding_models.hashing_embedding_model import hashing_embedding
from flink_agents.testing.servers._scripted import Latency, Reply, Request, ScriptedServer

__all__ = ["ChatReply", "ProviderServer", "as_message", "tool_calls_of", "usage_of"]

#: What a provider stand-in's script may hold: an assistant text, a message (a
#: :class:`ChatMessage` or a dict in its form, as ``tool_call(...)`` builds), or a raw
#: :class:`Reply` (errors, throttling, malformed bodies).
ChatReply = str | ChatMessage | dict[str, Any] | Reply

#: the vector size of the default embeddings when the request names none
DEFAULT_EMBEDDING_DIMENSIONS = 64


def as_message(reply: str | ChatMessage | dict[str, Any]) -> ChatMessage:
    """A scripted reply as an assistant :class:`ChatMessage`."""
    if isinstance(reply, ChatMessage):
        return reply
    if isinstance(reply, str):
        return ChatMessage(role=MessageRole.ASSISTANT, content=reply)
    if isinstance(reply, dict):
        return ChatMessage.model_validate({"role": "assistant", **reply})
    raise TypeError(
        f"a scripted reply must be a str, ChatMessage, dict or Reply, got {type(reply).__name__}"
    )


class ProviderServer(ScriptedServer):
    """A stand-in for one provider's HTTP API, scripted with plain replies.

    Chat requests are answered from ``replies`` in order (the last one repeats when the
    script runs out) or by ``respond``; each reply is an assistant text, a message
    (``ChatMessage`` or ``tool_call(...)``) or a raw :class:`Reply`, such as
    ``server.throttled(retry_after=0.5)``. Embedding requests (where the provider has them)
    get deterministic vectors from ``embed`` (default: the hashing embedding, so nearest
    neighbours follow shared words). Any other path is a 404 in the provider's error
    format. With ``api_key`` set, a request that does not present it is a 401.

    Args:
        replies: chat replies in order.
        respond: alternatively, ``request -> reply`` for each chat request.
        embed: ``(texts, dimensions) -> vectors`` for embedding requests.
        api_key: the key requests must present (None: any or none).
        latency: seconds every reply waits, or ``(low, high)``.
        port: the port (default: any free one).

    Attributes:
        chat_requests: the chat requests received, in order.
        embedding_requests: the embedding requests received, in order.
    """

    #: the provider's name, as our connections report it in errors
    provider: ClassVar[str] = ""
    #: the path chat requests go to
    chat_path: ClassVar[str] = ""
    #: the path embedding requests go to (None: the provider has none)
    embeddings_path: ClassVar[str | None] = None
    #: the status of an overloaded server
    overloaded_status: ClassVar[int] = 503

    def __init__(
        self,
        replies: Sequence[ChatReply] | None = None,
        respond: Callable[[Request], ChatReply] | None = None,
        *,
        embed: Callable[[list[str], int], list[list[float]]] | None = None,
        api_key: str | None = None,
        latency: Latency = 0.0,
        port: int = 0,
    ) -> None:
        super().__init__(latency=latency, port=port)
        self.chat_replies = list(replies or [])
        self.chat_respond = respond
        self.embed = embed or _hashing_vectors
        self.api_key = api_key
        self.chat_requests: list[Request] = []
        self.embedding_requests: list[Request] = []
        self._ids = itertools.count(1)
        self._route_lock = threading.Lock()

    # --- what a provider defines ---------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The URL a connection of this provider is configured with."""
        return self.url

    @classmethod
    def error_body(cls, message: str, status: int) -> Any:
        """The provider's error body for ``status``."""
        return {"error": message}

    def chat_body(self, message: ChatMessage, request: Request) -> Any:
        """The provider's chat reply body for an assistant ``message``."""
        raise NotImplementedError

    def embeddings_body(self, vectors: list[list[float]], request: Request) -> Any:
        """The provider's embeddings reply body."""
        raise NotImplementedError

    def embedding_inputs(self, request: Request) -> tuple[list[str], int]:
        """The texts and the dimensions an embedding request asks for."""
        body = request.body if isinstance(request.body, dict) else {}
        texts = body.get("input", [])
        if isinstance(texts, str):
            texts = [texts]
        return [str(t) for t in texts], int(body.get("dimensions") or DEFAULT_EMBEDDING_DIMENSIONS)

    def presented_key(self, request: Request) -> str | None:
        """The key a request presents (``Authorization: Bearer ...`` by default)."""
        auth = request.headers.get("authorization", "")
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    # --- scripted answers (class methods: usable in a script before the server exists) --

    @classmethod
    def error(cls, message: str = "server error", *, status: int = 500) -> Reply:
        """An error answer in the provider's format."""
        return Reply(cls.error_body(message, status), status=status)

    @classmethod
    def throttled(cls, *, retry_after: float | None = 1.0, message: str = "rate limited") -> Reply:
        """A 429 in the provider's format, with ``retry-after`` / ``retry-after-ms``."""
        return Reply.throttled(cls.error_body(message, 429), retry_after=retry_after)

    @classmethod
    def overloaded(cls, message: str = "overloaded") -> Reply:
        """The provider's "overloaded" answer (503; Anthropic's 529)."""
        return cls.error(message, status=cls.overloaded_status)

    @classmethod
    def malformed(cls) -> Reply:
        """A 200 whose body is not JSON."""
        return Reply('{"choices": [ {oops')

    # --- routing -------------------------------------------------------------------------

    def next_id(self, prefix: str) -> str:
        """A fresh id for a tool call or a message (``prefix_1``, ``prefix_2``, ...)."""
        return f"{prefix}_{next(self._ids)}"

    def is_chat(self, request: Request) -> bool:
        """Whether ``request`` is a chat request."""
        return request.route == self.chat_path

    def is_embeddings(self, request: Request) -> bool:
        """Whether ``request`` is an embedding request."""
        return self.embeddings_path is not None and request.route == self.embeddings_path

    def reply_for(self, request: Request, index: int) -> Reply:
        if self.api_key is not None and self.presented_key(request) != self.api_key:
            return self.error("invalid api key", status=401)
        if self.is_chat(request):
            with self._route_lock:
                self.chat_requests.append(request)
                chat_index = len(self.chat_requests) - 1
            return self._chat_reply(request, chat_index)
        if self.is_embeddings(request):
            with self._route_lock:
                self.embedding_requests.append(request)
            texts, dimensions = self.embedding_inputs(request)
            return Reply(self.embeddings_body(self.embed(texts, dimensions), request))
        return self.error(f"no route {request.method} {request.route}", status=404)

    def _chat_reply(self, request: Request, index: int) -> Reply:
        if self.chat_respond is not None:
            scripted = self.chat_respond(request)
        elif self.chat_replies:
            scripted = self.chat_replies[min(index, len(self.chat_replies) - 1)]
        else:
            return self.error("the stand-in has no scripted reply", status=500)
        if isinstance(scripted, Reply):
            return scripted
        return Reply(self.chat_body(as_message(scripted), request))


def tool_calls_of(message: ChatMessage) -> list[tuple[str | None, str, dict[str, Any]]]:
    """The tool calls of an assistant message as ``(id or None, name, arguments)``."""
    calls = []
    for call in message.tool_calls:
        function = call.get("function") or {}
        arguments = function.get("arguments") or {}
        if isinstance(arguments, str):
            arguments = json.loads(arguments) if arguments.strip() else {}
        calls.append((call.get("id"), str(function.get("name", "")), dict(arguments)))
    return calls


def usage_of(message: ChatMessage, default: tuple[int, int]) -> tuple[int, int]:
    """``(prompt, completion)`` tokens a reply reports: ``extra_args["usage"]`` (with
    ``prompt_tokens`` / ``completion_tokens``) when the script gives it, else ``default``."""
    usage = message.extra_args.get("usage") or {}
    return (
        int(usage.get("prompt_tokens", default[0])),
        int(usage.get("completion_tokens", default[1])),
    )


def _hashing_vectors(texts: list[str], dimensions: int) -> list[list[float]]:
    return [hashing_embedding(text, dimensions) for text in texts]
