"""The ingestion job on a Flink MiniCluster, failed and restored mid-way: every document is
in the store exactly once (counted in the store), every input committed exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.rag_pipeline import COLLECTION, embedding, stored_ids, vector_store
from flink_agents.api.agents.rag_ingestion import DocumentIngestionAgent
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.integrations.embedding_models.hashing_embedding_model import (
    HashingEmbeddingModelConnection,
)
from flink_agents.testing import assert_exactly_once, run_agent

pytestmark = pytest.mark.flink


def test_ingestion_is_exactly_once_per_document_across_a_restore(
    tmp_path: Path, flink_mode: str
) -> None:
    store_dir = tmp_path / "chroma"
    docs = [
        {"id": f"doc-{i:03d}", "content": f"document {i} on topic {i % 7}", "metadata": {"n": i}}
        for i in range(40)
    ]
    run = run_agent(
        DocumentIngestionAgent(vector_store(store_dir), embedding()),
        docs,
        key="id",
        mode=flink_mode,
        fail_after=15,
        resources={"hashing": ResourceDescriptor(clazz=HashingEmbeddingModelConnection)},
    )
    assert run.failures == 1
    assert_exactly_once(run, {d["id"]: [{"id": d["id"], "collection": COLLECTION}] for d in docs})
    assert stored_ids(store_dir) == [d["id"] for d in docs]  # each once, none lost
    # The writes of every attempt (the event log keeps the failed attempt's too): at least
    # one per document; any more were replays, harmless because a write is an upsert.
    writes = [c for c in run.event_log.calls() if c["action"] == "ingest_document_action"]
    assert len(writes) >= len(docs)
    assert {r["key"] for r in run.event_log.runs()} == {d["id"] for d in docs}
