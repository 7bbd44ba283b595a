"""Embedding connections (against local servers), the hashing embedding, the in-memory vector
store and the retrieval path through an agent, plus the RAG example."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.vector_stores.vector_store import Document, VectorStoreQuery
from flink_agents.errors import ModelCallError
from flink_agents.integrations.embedding_models.hashing_embedding_model import (
    HashingEmbeddingModelConnection,
    HashingEmbeddingModelSetup,
    hashing_embedding,
)
from flink_agents.integrations.embedding_models.ollama_embedding_model import (
    OllamaEmbeddingModelConnection,
    OllamaEmbeddingModelSetup,
)
from flink_agents.integrations.embedding_models.openai_embedding_model import (
    OpenAIEmbeddingModelConnection,
    OpenAIEmbeddingModelSetup,
)
from flink_agents.integrations.vector_stores.in_memory_vector_store import InMemoryVectorStore
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.testing.servers import Reply, ScriptedServer
from tests.integrations import agents
from tests.integrations.agents import FAST


def _openai_embeddings(request):
    texts = request.body["input"]
    dims = request.body.get("dimensions", 64)
    data = [
        {"object": "embedding", "index": i, "embedding": hashing_embedding(t, dims)}
        for i, t in enumerate(texts)
    ]
    data.reverse()  # servers may answer out of order: the index decides
    return Reply({"object": "list", "data": data, "model": request.body["model"], "usage": {}})


def _ollama_embeddings(request):
    return Reply(
        {"model": "m", "embeddings": [hashing_embedding(t, 32) for t in request.body["input"]]}
    )


async def test_openai_embeddings_keep_order_retry_and_pass_options():
    calls = []

    def respond(request):
        calls.append(request)
        if len(calls) == 1:
            return Reply({"error": {"message": "slow down"}}, status=429)
        return _openai_embeddings(request)

    with ScriptedServer(respond=respond) as server:
        conn = OpenAIEmbeddingModelConnection(
            api_base_url=server.url + "/v1", api_key="sk-e-123456", **FAST
        )
        setup = OpenAIEmbeddingModelSetup(
            connection="c", model="emb-x", dimensions=48, get_resource=lambda n, t: conn
        )
        vectors = await setup.aembed(["alpha beta", "gamma"])
        single = setup.embed("alpha beta")
    assert vectors == [hashing_embedding("alpha beta", 48), hashing_embedding("gamma", 48)]
    assert single == vectors[0]
    assert calls[-1].path == "/v1/embeddings"
    assert calls[-1].body["model"] == "emb-x" and calls[-1].body["dimensions"] == 48
    assert calls[-1].headers["authorization"] == "Bearer sk-e-123456"
    assert len(calls) == 3  # 429, retried ok, then the sync call


def test_openai_embeddings_errors_are_model_call_errors():
    with ScriptedServer([Reply({"error": {"message": "no such model"}}, status=404)]) as server:
        conn = OpenAIEmbeddingModelConnection(api_base_url=server.url + "/v1", **FAST)
        with pytest.raises(ModelCallError) as info:
            conn.embed(["x"], model="nope")
    assert (info.value.provider, info.value.model, info.value.status) == ("openai", "nope", 404)


async def test_ollama_embeddings_and_wrong_count():
    with ScriptedServer(respond=_ollama_embeddings) as server:
        conn = OllamaEmbeddingModelConnection(base_url=server.url, **FAST)
        setup = OllamaEmbeddingModelSetup(
            connection="c", model="nomic", truncate=True, get_resource=lambda n, t: conn
        )
        assert await setup.aembed(["a b", "c"]) == [
            hashing_embedding("a b", 32),
            hashing_embedding("c", 32),
        ]
        assert setup.embed(["a b"]) == [hashing_embedding("a b", 32)]
    assert server.requests[0].path == "/api/embed"
    assert server.requests[0].body == {"model": "nomic", "input": ["a b", "c"], "truncate": True}
    with ScriptedServer([Reply({"embeddings": [[0.1]]})]) as server:
        conn = OllamaEmbeddingModelConnection(base_url=server.url, **FAST)
        with pytest.raises(ModelCallError, match="asked for 2 embeddings"):
            conn.embed(["a", "b"], model="m")


def test_hashing_embedding_properties():
    conn = HashingEmbeddingModelConnection(dimensions=128)
    a, b, c, empty = conn.embed(
        ["Flink keeps keyed state", "keyed state in Flink", "bananas are yellow", "the of and"]
    )
    assert len(a) == 128
    assert math.isclose(sum(x * x for x in a), 1.0)
    assert conn.embed(["Flink keeps keyed state"])[0] == a  # deterministic
    assert np.dot(a, b) > 0.5 > abs(np.dot(a, c))
    assert empty == [0.0] * 128  # only stop words
    assert len(conn.embed(["x"], dimensions=16)[0]) == 16


def test_hashing_embedding_is_the_same_in_another_process():
    code = (
        "import json; from flink_agents.integrations.embedding_models.hashing_embedding_model "
        "import hashing_embedding; print(json.dumps(hashing_embedding('stable across runs', 32)))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == hashing_embedding("stable across runs", 32)


def _store(**kw):
    emb = HashingEmbeddingModelSetup(connection="c")
    conn = HashingEmbeddingModelConnection(dimensions=64)
    calls = []

    def lookup(name, rtype):
        calls.append((name, rtype))
        return {"embedder": emb, "c": conn}[name]

    emb.get_resource = lookup
    return InMemoryVectorStore(embedding_model="embedder", get_resource=lookup, **kw), calls


def test_in_memory_store_ranks_filters_and_deletes():
    store, _ = _store()
    ids = store._add_embedding(
        documents=[
            Document(content="x", embedding=[1.0, 0.0, 0.0], metadata={"lang": "en"}, id="x"),
            Document(content="y", embedding=[0.0, 2.0, 0.0], metadata={"lang": "de"}),
            Document(content="xy", embedding=[1.0, 1.0, 0.0], metadata={"lang": "en"}, id="xy"),
        ]
    )
    assert ids[0] == "x" and ids[2] == "xy" and len(ids[1]) == 32
    found = store._query_embedding([1.0, 0.1, 0.0], limit=2)
    assert [d.id for d in found] == ["x", "xy"]
    assert found[0].score == pytest.approx(1 / math.sqrt(1.01))
    assert [d.content for d in store._query_embedding([0.0, 1.0, 0.0], filters={"lang": "en"})] == [
        "xy",
        "x",
    ]
    store.delete(["x"])
    assert [d.id for d in store._query_embedding([1.0, 0.0, 0.0])][0] == "xy"
    assert len(store.get(limit=None)) == 2
    with pytest.raises(ValueError, match="3-dimensional"):
        store._query_embedding([1.0, 0.0])
    with pytest.raises(ValueError, match="3-dimensional"):
        store._add_embedding(documents=[Document(content="bad", embedding=[1.0])])


def test_in_memory_store_preloads_documents_lazily():
    docs = [
        {"content": "Checkpoints snapshot state for recovery.", "metadata": {"t": "ckpt"}},
        {"content": "Watermarks track event time progress.", "metadata": {"t": "wm"}},
    ]
    store, calls = _store(documents=docs)
    assert calls == []  # nothing embedded at creation
    result = store.query(
        VectorStoreQuery(query_text="how is state recovered from checkpoints", limit=1)
    )
    assert [d.metadata["t"] for d in result.documents] == ["ckpt"]
    assert ("embedder", ResourceType.EMBEDDING_MODEL) in calls
    store.add([Document(content="Late events and watermarks", metadata={"t": "late"})])
    found = store.query(
        VectorStoreQuery(query_text="watermarks for late events", limit=3)
    ).documents
    assert found[0].metadata["t"] == "late" and len(found) == 3


class RetrievalAgent(Agent):
    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            ContextRetrievalRequestEvent(query=event.input, vector_store="store", max_results=2)
        )

    @action(ContextRetrievalResponseEvent)
    @staticmethod
    def done(event: ContextRetrievalResponseEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=[d.id for d in event.documents]))


def test_retrieval_through_an_agent_with_a_remote_embedding_model():
    docs = [
        {"id": "cats", "content": "Cats purr and chase mice."},
        {"id": "flink", "content": "Flink processes unbounded streams with exactly once state."},
        {"id": "rain", "content": "Rain falls from clouds."},
    ]
    agent = RetrievalAgent()
    with ScriptedServer(respond=_openai_embeddings) as server:
        agent.add_resource(
            "emb_conn",
            ResourceDescriptor(
                clazz=OpenAIEmbeddingModelConnection, api_base_url=server.url + "/v1", **FAST
            ),
        )
        agent.add_resource(
            "embedder",
            ResourceDescriptor(clazz=OpenAIEmbeddingModelSetup, connection="emb_conn", model="e"),
        )
        agent.add_resource(
            "store",
            ResourceDescriptor(
                clazz=InMemoryVectorStore, embedding_model="embedder", documents=docs
            ),
        )
        AgentPlan.from_agent(agent)
        assert server.requests == []  # compiling the plan embeds nothing
        out = agents.run_agent(
            agent, [{"key": "q", "value": "streams with exactly once state in Flink"}]
        )
    assert out[0]["q"][0] == "flink"
    assert len(out[0]["q"]) == 2
    # the three documents in one call, then the query
    assert [len(q.body["input"]) for q in server.requests] == [3, 1]


def test_rag_example_answers_from_the_right_passages():
    from examples import rag_agent

    out = rag_agent.main()
    answers = [next(iter(o.values())) for o in out]
    assert [a["sources"][0] for a in answers] == [
        "flink-docs/checkpointing",
        "flink-docs/event-time",
        "flink-docs/state-backends",
    ]
    for a in answers:
        assert a["answer"].endswith(f"[{a['sources'][0]}]")
    assert "without losing data" in answers[0]["answer"]
