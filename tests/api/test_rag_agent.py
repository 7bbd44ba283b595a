"""RAGAgent and the ingestion helper on the local environment: documents ingested into a
real embedded Chroma (and the in-memory store), answers citing the right documents,
idempotent re-ingestion, the prompt, filters, scores, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from examples.rag_pipeline import (
    COLLECTION,
    DOCUMENTS_FILE,
    QUESTIONS,
    embedding,
    scripted_answer,
    stored_ids,
    vector_store,
)
from flink_agents.api.agents.rag_agent import DEFAULT_PROMPT, RAGAgent, cited_numbers
from flink_agents.api.agents.rag_ingestion import (
    DocumentIngestionAgent,
    DocumentKey,
    content_id,
    document_of,
    ingest_documents,
)
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.errors import InputSchemaError, VectorStoreError
from flink_agents.integrations.embedding_models.hashing_embedding_model import (
    HashingEmbeddingModelConnection,
)
from flink_agents.integrations.vector_stores.in_memory_vector_store import InMemoryVectorStore
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup, run_agent

DOCUMENTS = [json.loads(line) for line in DOCUMENTS_FILE.read_text().splitlines()]
#: What :func:`record` saw (the local environment runs in this process).
SEEN: list[list[ChatMessage]] = []


def cites_everything(messages: list[ChatMessage], tools: Any) -> str:
    return "A [2][1]; also [1, 2] and [9] and [0]."


def cites_nothing(messages: list[ChatMessage], tools: Any) -> str:
    return "I do not know."


def record(messages: list[ChatMessage], tools: Any) -> str:
    SEEN.append(messages)
    return "ok [1]"


def _env(respond: Any = scripted_answer) -> Any:
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_resource("hashing", ResourceDescriptor(clazz=HashingEmbeddingModelConnection))
    env.add_resource(
        "scripted", ResourceDescriptor(clazz=ScriptedChatModelConnection, respond=respond)
    )
    return env


def _model() -> ResourceDescriptor:
    return ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="scripted")


def _ingest(store: ResourceDescriptor, documents: list[Any]) -> list[dict[str, Any]]:
    env = _env()
    out = ingest_documents(env, documents, vector_store=store, embedding=embedding())
    env.execute()
    return [next(iter(o.values())) for o in out]


def _ask(agent: RAGAgent, questions: list[Any], respond: Any = scripted_answer) -> list[Any]:
    env = _env(respond)
    out = (
        env.from_list([{"key": i, "value": q} for i, q in enumerate(questions)])
        .apply(agent)
        .to_list()
    )
    env.execute()
    return [next(iter(o.values())) for o in sorted(out, key=lambda o: next(iter(o)))]


@pytest.fixture
def chroma_dir(tmp_path: Path) -> Path:
    ingested = _ingest(vector_store(tmp_path), DOCUMENTS)
    assert [o["id"] for o in ingested] == [d["id"] for d in DOCUMENTS]
    assert {o["collection"] for o in ingested} == {COLLECTION}
    return tmp_path


def test_answers_cite_the_right_documents_from_chroma(chroma_dir: Path) -> None:
    agent = RAGAgent(
        embedding=embedding(), vector_store=vector_store(chroma_dir), chat_model=_model(), top_k=3
    )
    answers = _ask(agent, [q for q, _ in QUESTIONS])
    by_id = {d["id"]: d for d in DOCUMENTS}
    for (question, expected), out in zip(QUESTIONS, answers, strict=True):
        assert out["question"] == question
        assert [c["id"] for c in out["citations"]] == [expected], out
        cited = out["citations"][0]
        assert out["retrieved"][cited["index"] - 1] == expected
        assert cited["content"] == by_id[expected]["content"]
        assert cited["metadata"] == by_id[expected]["metadata"]
        assert 0 < cited["score"] <= 1
        assert out["answer"].endswith(f"[{cited['index']}].")
        assert len(out["retrieved"]) == 3 and len(set(out["retrieved"])) == 3


def test_reingesting_is_an_upsert_by_id(chroma_dir: Path) -> None:
    assert stored_ids(chroma_dir) == sorted(d["id"] for d in DOCUMENTS)
    changed = [{**d, "content": d["content"].upper()} for d in DOCUMENTS[:3]]
    _ingest(vector_store(chroma_dir), DOCUMENTS + changed)  # a full replay, then new versions
    assert stored_ids(chroma_dir) == sorted(d["id"] for d in DOCUMENTS)  # still once each
    store = vector_store(chroma_dir).clazz(persist_directory=str(chroma_dir), collection=COLLECTION)
    try:
        got = {d.id: d.content for d in store.get(ids=[d["id"] for d in DOCUMENTS[:4]])}
    finally:
        store.close()
    assert got[DOCUMENTS[0]["id"]] == DOCUMENTS[0]["content"].upper()  # the last write won
    assert got[DOCUMENTS[3]["id"]] == DOCUMENTS[3]["content"]


def test_documents_without_id_get_the_hash_of_their_text() -> None:
    assert document_of("plain text").id == content_id("plain text")
    assert document_of({"content": "x", "id": ""}).id == content_id("x")
    assert document_of({"text": "y", "key": 7}, id_field="key", content_field="text").id == "7"
    doc = document_of(
        {"content": "z", "metadata": {"a": 1}, "lang": "en", "embedding": (0.1, 0.2)},
        metadata_fields=["lang"],
    )
    assert doc.metadata == {"a": 1, "lang": "en"} and doc.embedding == [0.1, 0.2]
    assert document_of(Document(content="w")).id == content_id("w")
    assert DocumentKey()({"content": "q"}) == content_id("q")
    with pytest.raises(InputSchemaError, match="content_field="):
        document_of({"body": "no content field"})


def test_ingestion_of_texts_into_the_memory_store_then_rag() -> None:
    # One in-memory store per slot: the documents and the questions go through one job.
    texts = [d["content"] for d in DOCUMENTS]
    env = _env()
    store = ResourceDescriptor(clazz=InMemoryVectorStore, documents=DOCUMENTS)
    agent = RAGAgent(embedding=embedding(), vector_store=store, chat_model=_model(), top_k=2)
    out = _ask(agent, ["Where does the RocksDB backend keep state?"])
    assert [c["id"] for c in out[0]["citations"]] == ["rocksdb"]
    ingested = ingest_documents(
        env,
        texts,
        vector_store=ResourceDescriptor(clazz=InMemoryVectorStore),
        embedding=embedding(),
    )
    env.execute()
    assert [next(iter(o.values()))["id"] for o in ingested] == [content_id(t) for t in texts]


def test_citations_name_only_retrieved_documents_each_once(chroma_dir: Path) -> None:
    agent = RAGAgent(
        embedding=embedding(), vector_store=vector_store(chroma_dir), chat_model=_model(), top_k=2
    )
    out = _ask(agent, ["checkpoints and watermarks"], respond=cites_everything)[0]
    assert [c["index"] for c in out["citations"]] == [2, 1]
    assert [c["id"] for c in out["citations"]] == [out["retrieved"][1], out["retrieved"][0]]
    assert cited_numbers("no citation") == [] and cited_numbers("[3] [ 1 , 3 ]") == [3, 1]

    out = _ask(agent, ["checkpoints"], respond=cites_nothing)[0]
    assert out["citations"] == [] and len(out["retrieved"]) == 2


def test_prompt_filters_min_score_and_question_fields(chroma_dir: Path) -> None:
    seen = SEEN
    seen.clear()
    agent = RAGAgent(
        embedding=embedding(),
        vector_store=vector_store(chroma_dir),
        chat_model=_model(),
        top_k=5,
        prompt=Prompt.from_messages(
            [
                ChatMessage(role="system", content="Context:\n{context}"),
            ]
        ),
        filters={"source": {"$in": ["flink-docs/state", "flink-docs/state-backends"]}},
        min_score=0.01,
    )
    out = _ask(agent, [{"question": "Where is keyed state kept?", "id": 3}], respond=record)[0]
    assert set(out["retrieved"]) <= {"keyed-state", "rocksdb"} and out["retrieved"]
    system, user = seen[0]
    assert system.role.value == "system" and system.content.startswith("Context:\n[1] ")
    assert user.role.value == "user" and user.content == "Where is keyed state kept?"
    # the default prompt: one user message with the numbered documents and the question
    agent = RAGAgent(
        embedding=embedding(), vector_store=vector_store(chroma_dir), chat_model=_model(), top_k=1
    )
    _ask(agent, ["What is a savepoint?"], respond=record)
    (only,) = seen[1]
    assert only.content == DEFAULT_PROMPT.format(
        context=f"[1] {DOCUMENTS[1]['content']}", question="What is a savepoint?"
    )
    # a score no document reaches: the model is told there is nothing
    agent = RAGAgent(
        embedding=embedding(),
        vector_store=vector_store(chroma_dir),
        chat_model=_model(),
        min_score=0.999,
    )
    out = _ask(agent, ["What is a savepoint?"], respond=record)[0]
    assert out["retrieved"] == [] and out["citations"] == []
    assert "(no documents found)" in seen[2][0].content


def test_a_question_it_cannot_read_is_a_clear_error(chroma_dir: Path) -> None:
    agent = RAGAgent(
        embedding=embedding(), vector_store=vector_store(chroma_dir), chat_model=_model()
    )
    with pytest.raises(Exception, match="RAGAgent needs a question") as info:
        _ask(agent, [{"text": "no question field"}])
    assert "'question' or 'query'" in str(info.value)


def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    store = vector_store(tmp_path)
    with pytest.raises(ValueError, match="top_k must be an int of at least 1"):
        RAGAgent(embedding=embedding(), vector_store=store, chat_model=_model(), top_k=0)
    with pytest.raises(ValueError, match=r"needs a \{context\} placeholder"):
        RAGAgent(embedding(), store, _model(), prompt="Answer {question}")
    own = ResourceDescriptor(clazz=InMemoryVectorStore, embedding_model="mine")
    with pytest.raises(ValueError, match="embedding_model='mine' and embedding= is given"):
        RAGAgent(embedding(), own, _model())
    with pytest.raises(ValueError, match="set its embedding_model there"):
        RAGAgent(embedding(), "env_store", _model())
    with pytest.raises(VectorStoreError):
        RAGAgent(embedding(), store, _model(), filters={"year": {"$between": 1}})
    with pytest.raises(TypeError, match="needs vector_store= and chat_model="):
        RAGAgent(embedding())
    with pytest.raises(ValueError, match="set its embedding_model there"):
        DocumentIngestionAgent("env_store", embedding())


def test_plan_round_trips_and_names_the_agent(tmp_path: Path) -> None:
    agent = RAGAgent(
        embedding=embedding(),
        vector_store=vector_store(tmp_path),
        chat_model=_model(),
        name="docs_rag",
    )
    agent.add_resource("hashing", ResourceDescriptor(clazz=HashingEmbeddingModelConnection))
    agent.add_resource(
        "scripted", ResourceDescriptor(clazz=ScriptedChatModelConnection, respond=scripted_answer)
    )
    plan = AgentPlan.from_agent(agent)
    again = AgentPlan.model_validate_json(plan.model_dump_json())
    assert again.model_dump_json() == plan.model_dump_json()
    assert plan.name == "docs_rag"
    assert {"rag_retrieve_action", "rag_answer_action", "chat_model_action"} <= set(plan.actions)
    retrieve = plan.actions["rag_retrieve_action"]
    assert retrieve.config["top_k"] == 3 and retrieve.config["vector_store"] == "_rag_vector_store"


def test_retrieval_is_a_durable_call_seen_in_the_event_log(chroma_dir: Path) -> None:
    agent = RAGAgent(
        embedding=embedding(), vector_store=vector_store(chroma_dir), chat_model=_model()
    )
    run = run_agent(
        agent,
        ["Where does the RocksDB backend keep state?"],
        resources={
            "hashing": ResourceDescriptor(clazz=HashingEmbeddingModelConnection),
            "scripted": ResourceDescriptor(
                clazz=ScriptedChatModelConnection, respond=scripted_answer
            ),
        },
    )
    (out,) = run.all_outputs
    assert [c["id"] for c in out["citations"]] == ["rocksdb"]
    calls = run.event_log.calls()
    assert [c["kind"] for c in calls] == ["call", "model"]
    assert calls[0]["action"] == "rag_retrieve_action" and "aquery" in calls[0]["name"]
