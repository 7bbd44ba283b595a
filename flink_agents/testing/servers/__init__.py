"""Provider stand-ins: real HTTP servers on 127.0.0.1 that speak a provider's wire format.

Test your connection settings end to end (the real SDK or httpx client, retries, timeouts,
keys, error mapping) without the provider::

    from flink_agents.testing import tool_call
    from flink_agents.testing.servers import OpenAIServer

    with OpenAIServer(
        [OpenAIServer.throttled(retry_after=0.05), tool_call("add", a=1, b=2), "The sum is 3."],
        api_key="sk-test",
    ) as server:
        conn = OpenAIChatModelConnection(api_base_url=server.base_url, api_key="sk-test")
        ...  # run your agent against it
    assert server.chat_requests[1].body["messages"][-1]["role"] == "tool"

:class:`OpenAIServer` (also any OpenAI-compatible server), :class:`OllamaServer` and
:class:`AnthropicServer` take a script of chat replies: an assistant text, a message
(``tool_call(...)``, a :class:`~flink_agents.api.chat_message.ChatMessage`), or a raw
:class:`Reply` for anything else: ``Server.error(message, status=)``,
``Server.throttled(retry_after=)`` (429 with ``retry-after`` and ``retry-after-ms``),
``Server.overloaded()``, ``Server.malformed()``, ``Reply.dropped()`` (the connection closes
unanswered). ``latency=`` (seconds, or ``(low, high)``) slows every reply, ``Reply(delay=)``
one. Embedding requests get deterministic vectors. Every request is recorded
(``requests``, ``chat_requests``, ``embedding_requests``; ``max_active`` counts concurrent
ones).

:class:`ScriptedServer` is the protocol-free base: a list of :class:`Reply` or a function
``request -> Reply``; the ``*_reply`` functions build provider bodies for it. A new provider
is a :class:`ProviderServer` subclass naming its paths and building its bodies.

:mod:`flink_agents.testing.servers.cloud_formats` has the wire formats of the cloud
providers for a :class:`ScriptedServer`: OpenAI's Responses API, Azure OpenAI, DashScope,
Amazon Bedrock's Converse (with :func:`~flink_agents.testing.servers.cloud_formats.verify_sigv4`,
which recomputes a request's AWS signature) and Gemini / Vertex AI.
:class:`~flink_agents.testing.servers.search_server.SearchServer` is an in-memory
Elasticsearch / OpenSearch behind the part of their REST API the vector stores use.

:class:`QuotaServer` is an OpenAI stand-in that enforces a quota (requests and tokens per
minute, 429 with ``Retry-After`` beyond) and counts what it accepted and refused.
"""

from flink_agents.testing.ports import free_port, held_port
from flink_agents.testing.servers._provider import ChatReply, ProviderServer
from flink_agents.testing.servers._scripted import Reply, Request, ScriptedServer
from flink_agents.testing.servers.anthropic_server import AnthropicServer, anthropic_reply
from flink_agents.testing.servers.ollama_server import (
    OllamaServer,
    ollama_embeddings_reply,
    ollama_reply,
)
from flink_agents.testing.servers.openai_server import (
    OpenAIServer,
    openai_embeddings_reply,
    openai_reply,
)
from flink_agents.testing.servers.quota_server import QuotaServer, count_tokens

__all__ = [
    "AnthropicServer",
    "ChatReply",
    "OllamaServer",
    "OpenAIServer",
    "ProviderServer",
    "QuotaServer",
    "Reply",
    "Request",
    "ScriptedServer",
    "anthropic_reply",
    "count_tokens",
    "free_port",
    "held_port",
    "ollama_embeddings_reply",
    "ollama_reply",
    "openai_embeddings_reply",
    "openai_reply",
]
