"""Every chat model connection, through its real SDK or HTTP client, against a real local
server speaking its wire format: replies, usage and latency, credentials (Azure's key
header, Bedrock's SigV4 signature, Vertex AI's bearer token), tool-call loops, retries,
throttling, errors, timeouts, concurrency."""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
import time

import pytest
from pydantic import BaseModel

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.errors import CallTimeoutError, ModelCallError, ModelCallTimeoutError
from flink_agents.testing.ports import free_port
from flink_agents.testing.servers import Reply, ScriptedServer
from tests.integrations import agents
from tests.integrations.agents import ALL_PROVIDERS, ChatAgent, Provider

USER = [ChatMessage(role=MessageRole.USER, content="hello")]


def _needs(module: str | None) -> list:
    if module is None:
        return []
    try:
        importlib.import_module(module)
    except ImportError:
        return [pytest.mark.skip(reason=f"{module} is not installed (see pyproject extras)")]
    return []


pytestmark = pytest.mark.parametrize(
    "p",
    [pytest.param(p, id=name, marks=_needs(p.requires)) for name, p in ALL_PROVIDERS.items()],
)


def _model(p: Provider) -> str:
    return p.setup_args["model"]


async def test_reply_usage_latency_and_auth(p: Provider):
    with ScriptedServer([Reply(p.text_reply("Hi there"))]) as server:
        conn = p.make_connection(server.url)
        reply = await conn.achat(USER, model=_model(p))
        sync_reply = conn.chat(USER, model=_model(p))
        conn.close()
    for r in (reply, sync_reply):
        assert r.role is MessageRole.ASSISTANT
        assert r.content == "Hi there"
        usage = r.extra_args["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
        assert r.extra_args["latency_ms"] > 0
        assert r.extra_args["attempts"] == 1
    assert [q.path for q in server.requests] == [p.path, p.path]
    assert p.model_of(server.requests[0]) == _model(p)
    if p.key_header:
        assert all(p.base("")["api_key"] in q.headers[p.key_header] for q in server.requests)
    if p.check_auth:
        for q in server.requests:
            p.check_auth(q)


SCHEMA = {"title": "Verdict", "type": "object", "properties": {"ok": {"type": "boolean"}}}


async def test_structured_output_reply(p: Provider):
    with ScriptedServer([Reply(p.json_reply({"ok": True}))]) as server:
        conn = p.make_connection(server.url)
        reply = await conn.achat(USER, model=_model(p), output_schema=SCHEMA)
    assert json.loads(reply.content) == {"ok": True} and not reply.tool_calls
    sent = p.schema_sent(server.requests[0].body)
    assert sent and '"ok"' in (sent if isinstance(sent, str) else json.dumps(sent))


async def test_throttling_answer_is_recognised_and_retried(p: Provider):
    replies = [p.throttle(), p.throttle(), Reply(p.text_reply("after the wait"))]
    with ScriptedServer(replies) as server:
        conn = p.make_connection(server.url, max_retries=3)
        reply = await conn.achat(USER, model=_model(p))
    assert reply.content == "after the wait" and reply.extra_args["attempts"] == 3
    # Counted by the connection's governor, and reported with the reply.
    assert reply.extra_args["throttled"] == 2 and conn.governor.throttles == 2

    # Throttled retries are counted apart from max_retries (max_throttled_retries).
    with ScriptedServer([p.throttle()]) as server:
        conn = p.make_connection(server.url, max_retries=0, max_throttled_retries=1)
        with pytest.raises(ModelCallError) as info:
            conn.chat(USER, model=_model(p))
    assert info.value.throttled and info.value.status == p.throttle().status
    assert len(server.requests) == 2


def test_server_error_is_not_throttling(p: Provider):
    with ScriptedServer([Reply(p.error_body("bad request body"), status=400)]) as server:
        conn = p.make_connection(server.url, max_retries=2)
        with pytest.raises(ModelCallError) as info:
            conn.chat(USER, model=_model(p))
    assert not info.value.throttled and info.value.status == 400
    assert "bad request body" in str(info.value) and len(server.requests) == 1


async def test_429_then_success_is_retried(p: Provider):
    replies = [
        Reply(p.error_body("rate limited"), status=429, headers={"retry-after-ms": "20"}),
        Reply(p.error_body("overloaded"), status=503),
        Reply(p.text_reply("finally")),
    ]
    with ScriptedServer(replies) as server:
        conn = p.make_connection(server.url)
        reply = await conn.achat(USER, model=_model(p))
    assert reply.content == "finally"
    assert reply.extra_args["attempts"] == 3
    assert len(server.requests) == 3


def test_500_exhausts_retries_with_a_clear_error(p: Provider):
    with ScriptedServer([Reply(p.error_body("the GPU melted"), status=500)]) as server:
        conn = p.make_connection(server.url, max_retries=2)
        with pytest.raises(ModelCallError) as info:
            conn.chat(USER, model=_model(p))
    err = info.value
    assert (err.provider, err.model, err.status) == (p.name, _model(p), 500)
    assert "the GPU melted" in str(err) and "after 3 attempt(s)" in str(err)
    assert f"provider={p.name}" in str(err) and "status=500" in str(err)
    assert len(server.requests) == 3


async def test_client_error_is_not_retried(p: Provider):
    with ScriptedServer([Reply(p.error_body("unknown model 'nope'"), status=404)]) as server:
        conn = p.make_connection(server.url, max_retries=3)
        with pytest.raises(ModelCallError) as info:
            await conn.achat(USER, model="nope")
    assert info.value.status == 404 and "unknown model 'nope'" in str(info.value)
    assert len(server.requests) == 1


async def test_malformed_json_reply(p: Provider):
    with ScriptedServer([Reply('{"choices": [ {oops')]) as server:
        conn = p.make_connection(server.url)
        with pytest.raises(ModelCallError, match="malformed") as info:
            await conn.achat(USER, model=_model(p))
    assert info.value.provider == p.name
    assert len(server.requests) == 1


async def test_reply_without_the_expected_fields(p: Provider):
    with ScriptedServer([Reply({"unexpected": True})]) as server:
        conn = p.make_connection(server.url)
        with pytest.raises(ModelCallError) as info:
            await conn.achat(USER, model=_model(p))
    assert info.value.provider == p.name
    assert "unexpected" in str(info.value) if p.echoes_body else "malformed" in str(info.value)


async def test_slow_reply_times_out_and_is_retried(p: Provider):
    # The reply would take 60 s; two attempts cut at 3 s end well before it, even on a
    # loaded machine (the bound only shows that the timeout cut the wait). A timeout bounds
    # the whole attempt (a cold SDK client and connect included), so a first call warms the
    # client up: cold, a loaded machine took more than 3 s to send the first request.
    replies = [Reply(p.text_reply("warm")), Reply(p.text_reply("too late"), delay=60.0)]
    with ScriptedServer(replies) as server:
        conn = p.make_connection(server.url, timeout=3.0, max_retries=1)
        assert (await conn.achat(USER, model=_model(p))).content == "warm"
        start = time.perf_counter()
        with pytest.raises(ModelCallTimeoutError, match=r"within 3s after 2 attempt") as info:
            await conn.achat(USER, model=_model(p))
        assert time.perf_counter() - start < 30
    assert info.value.status is None and info.value.timeout == 3.0
    assert isinstance(info.value, ModelCallError) and isinstance(info.value, CallTimeoutError)
    assert len(server.requests) == 1 + 2


def test_unreachable_server(p: Provider):
    conn = p.make_connection(f"http://127.0.0.1:{free_port()}", max_retries=1)
    with pytest.raises(ModelCallError, match="after 2 attempt") as info:
        conn.chat(USER, model=_model(p))
    assert info.value.provider == p.name


def test_concurrency_limit_holds_across_threads_and_loops(p: Provider):
    with ScriptedServer([Reply(p.text_reply("ok"), delay=0.1)]) as server:
        conn = p.make_connection(server.url, max_concurrency=2)

        async def many() -> None:
            replies = await asyncio.gather(*(conn.achat(USER, model=_model(p)) for _ in range(4)))
            assert [r.content for r in replies] == ["ok"] * 4

        threads = [threading.Thread(target=asyncio.run, args=(many(),)) for _ in range(2)]
        threads.append(threading.Thread(target=conn.chat, args=(USER,), kwargs=_kw(p)))
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        conn.close()
    assert len(server.requests) == 9
    assert server.max_active == 2


def _kw(p: Provider) -> dict:
    return {"model": _model(p)}


def test_tool_call_loop_end_to_end(p: Provider):
    call_id = p.call_id

    def respond(request):
        results = p.tool_results(request.body)
        if not results:
            return Reply(p.tool_reply(call_id, "add", {"a": 2, "b": 3}))
        return Reply(p.text_reply(f"The sum is {results[0][1]}."))

    agent = ChatAgent()
    with ScriptedServer(respond=respond) as server:
        agent.add_resource("conn", p.connection_descriptor(server.url))
        agent.add_resource(
            "model",
            ResourceDescriptor(clazz=p.setup, connection="conn", tools=["add"], **p.setup_args),
        )
        agent.add_resource("add", agents.add)
        out = agents.run_agent(agent, [{"key": "k1", "value": "What is 2 + 3?"}])
    assert [o["k1"]["content"] for o in out] == ["The sum is 5."]
    assert len(server.requests) == 2
    first, second = (q.body for q in server.requests)
    # the tool was offered with its schema
    assert "add" in agents.request_text(first) and '"a"' in agents.request_text(first)
    # the result went back with the id (Ollama, Gemini: name) of the call it answers
    assert p.tool_results(second) == [(call_id, "5")]
    if p.replays_call_id:  # the assistant's tool call is replayed with the same id
        assert call_id in agents.request_text(p.messages_of(second))
    if p.check_auth:
        p.check_auth(server.requests[1])


def test_model_failure_in_an_agent_follows_the_strategy(p: Provider):
    def respond(request):
        if "boom" in agents.request_text(p.messages_of(request.body)):
            return Reply(p.error_body("internal failure"), status=500)
        return Reply(p.text_reply("fine"))

    def build(server):
        agent = ChatAgent()
        agent.add_resource("conn", p.connection_descriptor(server.url, max_retries=1))
        agent.add_resource(
            "model", ResourceDescriptor(clazz=p.setup, connection="conn", **p.setup_args)
        )
        return agent

    inputs = [{"key": "bad", "value": "boom"}, {"key": "good", "value": "hello"}]
    with ScriptedServer(respond=respond) as server:
        out = agents.run_agent(build(server), inputs, **{"error-handling-strategy": "ignore"})
        by_key = {k: v for o in out for k, v in o.items()}
        assert by_key["good"]["content"] == "fine"
        assert by_key["bad"]["type"] == "ModelCallError"
        assert (
            "status=500" in by_key["bad"]["error"] and "internal failure" in by_key["bad"]["error"]
        )

        with pytest.raises(Exception) as info:
            agents.run_agent(build(server), inputs[:1], **{"error-handling-strategy": "fail"})
        chain, exc = [], info.value
        while exc is not None:
            chain.append(exc)
            exc = exc.__cause__
        assert any(isinstance(e, ModelCallError) and e.status == 500 for e in chain)


def test_agent_retry_strategy_recovers_from_a_failed_call(p: Provider):
    replies = [Reply(p.error_body("flaky"), status=502), Reply(p.text_reply("recovered"))]
    agent = ChatAgent()
    with ScriptedServer(replies) as server:
        agent.add_resource("conn", p.connection_descriptor(server.url, max_retries=0))
        agent.add_resource(
            "model", ResourceDescriptor(clazz=p.setup, connection="conn", **p.setup_args)
        )
        out = agents.run_agent(
            agent,
            [{"key": "k", "value": "hi"}],
            **{"error-handling-strategy": "retry", "retry-wait-interval": 0.01},
        )
    assert out == [{"k": {"content": "recovered", "extra": out[0]["k"]["extra"]}}]
    assert out[0]["k"]["extra"]["usage"]["total_tokens"] > 0
    assert len(server.requests) == 2


class SumAnswer(BaseModel):
    """What the ReAct agent answers."""

    total: int
    ok: bool


def test_react_agent_tool_loop_and_structured_answer(p: Provider):
    """ReActAgent on each provider: the model calls the tool, then answers in the output
    schema (the provider's structured output: response format, tool-forced JSON...)."""
    from flink_agents.api.agents.react_agent import ReActAgent

    def respond(request):
        if not p.tool_results(request.body):
            return Reply(p.tool_reply(p.call_id, "add", {"a": 2, "b": 3}))
        return Reply(p.json_reply({"total": 5, "ok": True}))

    with ScriptedServer(respond=respond) as server:
        agent = ReActAgent(
            chat_model=ResourceDescriptor(
                clazz=p.setup, connection="conn", tools=["add"], **p.setup_args
            ),
            output_schema=SumAnswer,
        )
        agent.add_resource("conn", p.connection_descriptor(server.url))
        agent.add_resource("add", agents.add)
        out = agents.run_agent(agent, [{"key": "k", "value": "What is 2 + 3?"}])
    assert out == [{"k": SumAnswer(total=5, ok=True)}]
    assert len(server.requests) == 2
    assert p.schema_sent is not None and "total" in json.dumps(server.requests[1].body)
