"""The provider stand-ins of flink_agents.testing.servers against our real connections."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.errors import ModelCallError
from flink_agents.integrations.chat_models.anthropic.anthropic_chat_model import (
    AnthropicChatModelConnection,
)
from flink_agents.integrations.chat_models.ollama_chat_model import OllamaChatModelConnection
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
)
from flink_agents.integrations.embedding_models.hashing_embedding_model import hashing_embedding
from flink_agents.integrations.embedding_models.ollama_embedding_model import (
    OllamaEmbeddingModelConnection,
)
from flink_agents.integrations.embedding_models.openai_embedding_model import (
    OpenAIEmbeddingModelConnection,
)
from flink_agents.testing import tool_call
from flink_agents.testing.ports import free_port, held_port
from flink_agents.testing.servers import (
    AnthropicServer,
    OllamaServer,
    OpenAIServer,
    ProviderServer,
    Reply,
    ScriptedServer,
)

USER = [ChatMessage(role=MessageRole.USER, content="hello")]
FAST = {"retry_initial_backoff": 0.01, "retry_max_backoff": 0.05, "timeout": 5.0}
KEY = "sk-stand-in-0123456789"


def _connect(server: ProviderServer, **kw):
    if isinstance(server, OpenAIServer):
        return OpenAIChatModelConnection(
            api_base_url=server.base_url, api_key=kw.pop("api_key", KEY), **{**FAST, **kw}
        )
    if isinstance(server, AnthropicServer):
        return AnthropicChatModelConnection(
            base_url=server.base_url, api_key=kw.pop("api_key", KEY), **{**FAST, **kw}
        )
    kw.pop("api_key", None)
    return OllamaChatModelConnection(base_url=server.base_url, **{**FAST, **kw})


SERVERS = [OpenAIServer, OllamaServer, AnthropicServer]
by_name = pytest.mark.parametrize("kind", SERVERS, ids=lambda k: k.provider)


@by_name
async def test_text_tool_call_and_usage_from_a_plain_script(kind):
    script = [
        tool_call("add", a=1, b=2),
        ChatMessage(
            role=MessageRole.ASSISTANT,
            content="The sum is 3.",
            extra_args={"usage": {"prompt_tokens": 40, "completion_tokens": 4}},
        ),
    ]
    with kind(script) as server:
        conn = _connect(server)
        first = await conn.achat(USER, model="m-1")
        second = conn.chat(USER, model="m-1")
        conn.close()
    (call,) = first.tool_calls
    assert call["function"]["name"] == "add"
    assert call["function"]["arguments"] == {"a": 1, "b": 2}
    if kind is not OllamaServer:  # Ollama's calls carry no ids
        assert call["id"]
    assert second.content == "The sum is 3."
    usage = second.extra_args["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (40, 4)
    assert [r.route for r in server.chat_requests] == [kind.chat_path] * 2
    assert server.chat_requests[0].body["model"] == "m-1"


@by_name
async def test_throttled_then_overloaded_then_ok_is_retried(kind):
    script = [kind.throttled(retry_after=0.02), kind.overloaded(), "finally"]
    with kind(script) as server:
        reply = await _connect(server).achat(USER, model="m")
    assert reply.content == "finally"
    assert reply.extra_args["attempts"] == 3
    first = server.requests[0]
    assert first.route == kind.chat_path
    answer = kind.throttled(retry_after=0.02)
    assert answer.status == 429
    assert answer.headers == {"retry-after": "0.02", "retry-after-ms": "20"}


@by_name
def test_errors_in_the_providers_format_become_model_call_errors(kind):
    with kind([kind.error("unknown model 'nope'", status=404)]) as server:
        with pytest.raises(ModelCallError) as info:
            _connect(server, max_retries=3).chat(USER, model="nope")
    assert (info.value.provider, info.value.status) == (kind.provider, 404)
    assert "unknown model 'nope'" in str(info.value)
    assert len(server.requests) == 1  # a client error is not retried


@pytest.mark.parametrize("kind", [OpenAIServer, AnthropicServer], ids=lambda k: k.provider)
def test_a_wrong_key_is_a_401(kind):
    with kind(["never"], api_key=KEY) as server:
        with pytest.raises(ModelCallError) as info:
            _connect(server, api_key="sk-wrong-key-000000").chat(USER, model="m")
    assert info.value.status == 401
    assert "sk-wrong" not in str(info.value)


@by_name
def test_malformed_body_and_dropped_connection(kind):
    with kind([kind.malformed()]) as server:
        with pytest.raises(ModelCallError, match="malformed"):
            _connect(server).chat(USER, model="m")
    with kind([Reply.dropped(), "after the drop"]) as server:
        reply = _connect(server, max_retries=2).chat(USER, model="m")
    assert reply.content == "after the drop"
    assert len(server.requests) == 2


@by_name
def test_unknown_route_is_a_404_in_the_providers_format(kind):
    with kind(["x"]) as server:
        answer = httpx.post(server.url + "/v9/nothing", json={})
    assert answer.status_code == 404
    assert "no route POST /v9/nothing" in answer.text
    assert server.chat_requests == []


def test_latency_applies_to_every_reply_and_requests_run_concurrently():
    with OpenAIServer(["ok"], latency=0.3) as server:
        conn = _connect(server)
        threads = [threading.Thread(target=conn.chat, args=(USER,), kwargs={"model": "m"})]
        threads += [threading.Thread(target=conn.chat, args=(USER,), kwargs={"model": "m"})]
        for t in threads:
            t.start()
        server.wait_for_requests(2)
        for t in threads:
            t.join(10)
    # both were in the server at once: the latency did not serialize them
    assert server.max_active == 2


def test_respond_function_sees_the_request():
    def respond(request):
        last = request.body["messages"][-1]["content"]
        return f"echo: {last}"

    with OpenAIServer(respond=respond) as server:
        reply = _connect(server).chat(USER, model="m")
    assert reply.content == "echo: hello"


async def test_embeddings_are_deterministic_and_counted():
    with OpenAIServer() as openai, OllamaServer() as ollama:
        o = OpenAIEmbeddingModelConnection(api_base_url=openai.base_url, api_key=KEY, **FAST)
        vectors = await o.aembed(["alpha beta", "gamma"], model="e", dimensions=16)
        ol = OllamaEmbeddingModelConnection(base_url=ollama.base_url, **FAST)
        same = ol.embed(["alpha beta"], model="e")
    assert vectors == [hashing_embedding("alpha beta", 16), hashing_embedding("gamma", 16)]
    assert same == [hashing_embedding("alpha beta", 64)]
    assert len(openai.embedding_requests) == 1 and openai.chat_requests == []
    assert len(ollama.embedding_requests) == 1


def test_anthropic_has_no_embeddings_route():
    with AnthropicServer() as server:
        answer = httpx.post(server.url + "/v1/embeddings", json={"input": ["x"]})
    assert answer.status_code == 404
    assert answer.json()["error"]["type"] == "not_found_error"


def test_scripted_server_last_reply_repeats_and_a_broken_script_is_a_500():
    with ScriptedServer([Reply({"n": 1}), Reply({"n": 2})]) as server:
        got = [httpx.get(server.url + "/any").json()["n"] for _ in range(3)]
    assert got == [1, 2, 2]

    def broken(request):
        raise KeyError("oops")

    with ScriptedServer(respond=broken) as server:
        answer = httpx.post(server.url + "/x?a=1", content=b"not json")
    assert answer.status_code == 500 and "KeyError" in answer.text
    (request,) = server.requests
    assert request.body == "not json" and request.query == {"a": ["1"]}


def test_wait_for_requests_times_out_clearly():
    with ScriptedServer() as server, pytest.raises(TimeoutError, match="0 of 1 requests"):
        server.wait_for_requests(1, timeout=0.1)


def test_fixed_port_held_for_a_stand_in():
    port = free_port()
    with held_port(port), OllamaServer(["hi"], port=port) as server:
        reply = OllamaChatModelConnection(base_url=f"http://127.0.0.1:{port}", **FAST).chat(
            USER, model="m"
        )
    assert reply.content == "hi" and server.port == port
    assert json.loads(json.dumps(server.chat_requests[0].body))["model"] == "m"
