"""Whole-call deadlines: every connection against a server that dribbles its reply one byte
every 0.25 s (so no per-read timeout ever trips), sync and async, per attempt and for the
whole call, a retry inside the SDK included; and the same through an agent.

The replies would take far longer than any bound below (``full_reply_seconds``, around a
minute and more); the bounds are loose on purpose (a loaded machine) and only show that the
deadline, not the end of the reply, ended the call.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.errors import CallTimeoutError, ModelCallError, ModelCallTimeoutError
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
)
from flink_agents.integrations.embedding_models.ollama_embedding_model import (
    OllamaEmbeddingModelConnection,
)
from flink_agents.testing.servers import Reply, ScriptedServer
from tests.integrations import agents
from tests.integrations.agents import ChatAgent, Provider
from tests.integrations.dribble import DribblingServer
from tests.integrations.every_provider import every_provider, needs

USER = [ChatMessage(role=MessageRole.USER, content="hello")]
#: Far below the time any dribbled reply takes, far above any deadline used here.
CUT = 20.0

by_provider = pytest.mark.parametrize("p", every_provider())
both_paths = pytest.mark.parametrize("mode", ["async", "sync"])


def _call(conn: Any, mode: str, p: Provider) -> Any:
    kwargs = {"model": p.setup_args["model"]}
    if mode == "sync":
        return conn.chat(USER, **kwargs)
    return asyncio.run(conn.achat(USER, **kwargs))


_warmed: set[tuple[str, str]] = set()


def _warm(p: Provider, mode: str) -> None:
    """One quick answered call per provider and path before a timed one: a cold SDK
    (imports, boto3's service models) can take seconds on a busy machine, and the timed
    tests need the request sent well inside their few seconds' deadline."""
    if (p.name, mode) in _warmed:
        return
    with ScriptedServer([Reply(p.text_reply("warm"))]) as server:
        _call(p.make_connection(server.url, max_retries=0), mode, p)
    _warmed.add((p.name, mode))


@by_provider
@both_paths
def test_a_dribbled_reply_is_cut_at_the_calls_deadline(p: Provider, mode: str):
    _warm(p, mode)
    with DribblingServer(p.text_reply("a long and slow answer")) as server:
        assert server.full_reply_seconds > 3 * CUT
        # 4 s: room for a cold SDK client (boto3 loads its service models) on a busy machine.
        conn = p.make_connection(server.url, timeout=60, total_timeout=4, max_retries=3)
        start = time.monotonic()
        with pytest.raises(ModelCallTimeoutError) as info:
            _call(conn, mode, p)
        elapsed = time.monotonic() - start
        sent = server.bytes_sent
    assert elapsed < CUT, elapsed
    assert 0 < sent < len(server.reply)  # it was answering, slowly, when the call was cut
    err = info.value
    assert isinstance(err, CallTimeoutError) and isinstance(err, ModelCallError)
    assert isinstance(err, TimeoutError)
    assert (err.kind, err.timeout, err.provider) == ("chat model", 4, p.name)
    assert "deadline of 4s (total_timeout)" in str(err)
    # The deadline left no time for another attempt: one request only.
    assert len(server.requests) == 1


@by_provider
@both_paths
def test_a_dribbled_attempt_is_cut_at_its_timeout_and_retried(p: Provider, mode: str):
    _warm(p, mode)
    with DribblingServer(p.text_reply("slow")) as server:
        conn = p.make_connection(server.url, timeout=3.0, max_retries=1)
        start = time.monotonic()
        with pytest.raises(ModelCallTimeoutError, match=r"within 3s after 2 attempt") as info:
            _call(conn, mode, p)
        assert time.monotonic() - start < CUT
    assert info.value.timeout == 3.0
    assert len(server.requests) == 2


class _RetryingSdkConnection(OpenAIChatModelConnection):
    """An OpenAI connection whose SDK retries by itself (ours leaves that off), as a
    provider's SDK may."""

    def _client_kwargs(self) -> dict[str, Any]:
        return {**super()._client_kwargs(), "max_retries": 8}


@both_paths
def test_a_retry_inside_the_sdk_is_inside_the_deadline(mode: str):
    # Every reply is a 500: the SDK alone would retry 8 times with its own backoff
    # (0.5 s doubling, 8 s at most: about 40 s); the call's deadline ends it all.
    with ScriptedServer([Reply({"error": {"message": "down"}}, status=500)]) as server:
        conn = _RetryingSdkConnection(
            api_base_url=server.url + "/v1", api_key="sk-x", total_timeout=4, max_retries=0
        )
        start = time.monotonic()
        with pytest.raises(ModelCallTimeoutError, match="deadline of 4s"):
            _call(conn, mode, agents.OPENAI)
        assert time.monotonic() - start < CUT
    # The SDK's first retries (at about 0, 0.5, 1.5 and 3.5 s), then the deadline: not 9.
    assert 1 <= len(server.requests) <= 5


def _embedding_cases() -> list[Any]:
    """Every embedding connection: Ollama's, and those of tests/integrations/
    test_cloud_embeddings.py (OpenAI, Azure, Bedrock, Gemini, DashScope)."""
    from tests.integrations.test_cloud_embeddings import CASES

    cases = [
        pytest.param(
            lambda url: OllamaEmbeddingModelConnection(base_url=url, total_timeout=4),
            "m",
            id="ollama",
        )
    ]
    for name, case in CASES.items():
        marks = needs(case.requires)
        cases.append(
            pytest.param(
                lambda url, case=case: case.connection(**case.base(url), total_timeout=4),
                case.setup_args["model"],
                id=name,
                marks=marks,
            )
        )
    return cases


@both_paths
@pytest.mark.parametrize(("make", "model"), _embedding_cases())
def test_a_dribbled_embedding_reply_is_cut_at_the_calls_deadline(make: Any, model: str, mode: str):
    # Never complete (the call is cut long before), so one long JSON body serves them all.
    with DribblingServer({"pad": "x" * 400}) as server:
        conn = make(server.url)
        start = time.monotonic()
        with pytest.raises(ModelCallTimeoutError) as info:
            if mode == "sync":
                conn.embed(["some text"], model=model)
            else:
                asyncio.run(conn.aembed(["some text"], model=model))
        assert time.monotonic() - start < CUT
    assert (info.value.kind, info.value.timeout) == ("embedding model", 4)


def test_default_deadlines_per_kind():
    chat = agents.OPENAI.make_connection("http://127.0.0.1:1")
    assert chat.total_timeout is None and chat.call_deadline == 300.0
    embedding = OllamaEmbeddingModelConnection(base_url="http://127.0.0.1:1")
    assert embedding.call_deadline == 120.0
    assert OllamaEmbeddingModelConnection(total_timeout=7).call_deadline == 7


@by_provider
def test_an_agents_model_call_past_its_deadline_follows_the_error_strategy(p: Provider):
    agent = ChatAgent()
    with DribblingServer(p.text_reply("too slow")) as server:
        agent.add_resource("conn", p.connection_descriptor(server.url, total_timeout=1.0))
        agent.add_resource(
            "model", ResourceDescriptor(clazz=p.setup, connection="conn", **p.setup_args)
        )
        start = time.monotonic()
        out = agents.run_agent(
            agent, [{"key": "k", "value": "hi"}], **{"error-handling-strategy": "ignore"}
        )
        assert time.monotonic() - start < CUT
    (result,) = [o["k"] for o in out]
    assert result["type"] == "ModelCallTimeoutError"
    assert "deadline of 1s" in result["error"]
