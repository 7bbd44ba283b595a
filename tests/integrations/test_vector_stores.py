"""The vector store contract, run against the in-memory store and a real embedded Chroma
(persistent, in a temporary directory): collections, add / upsert / update / get / delete,
ranking, the metadata filter language, clear errors. Chroma-only: persistence across a
process restart, cosine/l2 scores, nothing downloaded or sent over the network."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flink_agents.api.resource import ResourceType
from flink_agents.api.vector_stores.vector_store import (
    CollectionManageableVectorStore,
    Document,
    VectorStoreQuery,
)
from flink_agents.errors import VectorStoreError
from flink_agents.integrations.embedding_models.hashing_embedding_model import (
    HashingEmbeddingModelConnection,
    HashingEmbeddingModelSetup,
)
from flink_agents.integrations.vector_stores.chroma.chroma_vector_store import ChromaVectorStore
from flink_agents.integrations.vector_stores.in_memory_vector_store import InMemoryVectorStore
from tests.integrations.store_fixtures import *  # noqa: F403 - the stores' fixtures

ROOT = Path(__file__).resolve().parents[2]
#: The database stores of tests/integrations/store_fixtures.py (real embedded stores and
#: servers, or stand-ins where no server can run here).
STORES = [
    *("qdrant", "milvus", "mem0-qdrant", "pgvector", "redis", "elasticsearch", "opensearch"),
]


def _lookup():
    conn = HashingEmbeddingModelConnection(dimensions=64)
    emb = HashingEmbeddingModelSetup(connection="conn")
    resources = {("conn", ResourceType.EMBEDDING_MODEL_CONNECTION): conn}
    resources[("embedder", ResourceType.EMBEDDING_MODEL)] = emb

    def lookup(name, rtype):
        return resources[(name, rtype)]

    emb.get_resource = lookup
    return lookup


@pytest.fixture(params=["memory", "chroma", *STORES])
def store(request, tmp_path) -> CollectionManageableVectorStore:
    kwargs = {"embedding_model": "embedder", "get_resource": _lookup(), "collection": "docs"}
    if request.param == "memory":
        made = InMemoryVectorStore(**kwargs)
    elif request.param == "chroma":
        made = ChromaVectorStore(persist_directory=str(tmp_path / "chroma"), **kwargs)
    else:
        made = request.getfixturevalue(f"{request.param.replace('-', '_')}_store_factory")(**kwargs)
    yield made
    made.close()


def _vectors(store):
    store._add_embedding(
        documents=[
            Document(id="x", content="x", embedding=[1.0, 0.0, 0.0], metadata={"lang": "en"}),
            Document(id="y", content="y", embedding=[0.0, 2.0, 0.0], metadata={"lang": "de"}),
            Document(id="xy", content="xy", embedding=[1.0, 1.0, 0.0], metadata={"lang": "en"}),
        ]
    )


def test_collections_are_created_listed_and_deleted(store):
    store.create_collection_if_not_exists("other")
    store.create_collection_if_not_exists("other")  # no-op the second time
    store.add(Document(content="in docs"))
    assert {"docs", "other"} <= set(store.list_collections())
    store.add(Document(id="o1", content="in other"), collection_name="other")
    assert [d.id for d in store.get(collection_name="other")] == ["o1"]
    assert [d.content for d in store.get()] == ["in docs"]
    store.delete_collection("other")
    assert "other" not in store.list_collections()
    with pytest.raises(VectorStoreError, match="'other'.*does not exist"):
        store.get(collection_name="other")
    with pytest.raises(VectorStoreError, match="does not exist"):
        store.delete_collection("other")
    # writes and queries create a missing collection unless told not to
    assert store.query(VectorStoreQuery(query_text="q", collection_name="fresh")).documents == []
    assert "fresh" in store.list_collections()
    with pytest.raises(VectorStoreError, match="does not exist"):
        store.add(Document(content="c"), collection_name="absent", auto_create_collection=False)


def test_add_get_upsert_update_delete(store):
    ids = store.add(
        [
            Document(id="a", content="apples are red fruit", metadata={"n": 1, "old": "x"}),
            Document(content="bananas are yellow fruit", metadata={"n": 2}),
        ]
    )
    assert ids[0] == "a" and len(ids[1]) >= 32
    assert [d.id for d in store.get(ids=[ids[1], "missing", "a"])] == [ids[1], "a"]
    assert store.get(ids=[]) == []
    assert store.get(ids="a")[0].metadata == {"n": 1, "old": "x"}
    # add with an existing id replaces the document: content, metadata (old keys go), vector
    store.add(Document(id="a", content="cherries are dark red", metadata={"n": 3}))
    again = store.get(ids="a")[0]
    assert (again.content, again.metadata) == ("cherries are dark red", {"n": 3})
    assert len(store.get(limit=None)) == 2
    found = store.query(VectorStoreQuery(query_text="dark red cherries", limit=1)).documents
    assert found[0].id == "a"
    # update replaces existing documents; a document without a vector is re-embedded
    store.update(Document(id="a", content="plums are purple", metadata={"n": 4}))
    assert store.get(ids="a")[0].content == "plums are purple"
    assert store.query(VectorStoreQuery(query_text="purple plums", limit=1)).documents[0].id == "a"
    with pytest.raises(VectorStoreError, match=r"cannot update \['nope'\]"):
        store.update(Document(id="nope", content="c"))
    with pytest.raises(ValueError, match="must have its id"):
        store.update(Document(content="no id"))
    # the vector-level update keeps the stored vector when none is given
    store._update_embedding(documents=[Document(id="a", content="renamed", metadata={})])
    assert store.query(VectorStoreQuery(query_text="purple plums", limit=1)).documents[0].id == "a"
    store.delete(ids=["a", "unknown"])
    assert [d.id for d in store.get(limit=None)] == [ids[1]]
    store.add([Document(content=f"doc {i}", metadata={"i": i}) for i in range(5)])
    assert len(store.get(limit=3)) == 3
    store.delete(filters={"i": {"$gte": 3}})
    assert sorted(d.metadata.get("i", -1) for d in store.get(limit=None)) == [-1, 0, 1, 2]
    store.delete()  # everything in the collection
    assert store.get(limit=None) == []


def test_query_ranks_by_similarity_with_scores(store):
    _vectors(store)
    found = store._query_embedding([1.0, 0.1, 0.0], limit=2)
    assert [d.id for d in found] == ["x", "xy"]
    assert found[0].score == pytest.approx(1 / 1.01**0.5, abs=1e-4)  # cosine similarity
    assert found[0].score > found[1].score
    assert [d.id for d in store._query_embedding([0.0, 1.0, 0.0], filters={"lang": "en"})] == [
        "xy",
        "x",
    ]
    assert store._query_embedding([1.0, 0.0, 0.0], limit=0) == []


def test_texts_are_embedded_with_the_embedding_model(store):
    store.add(
        [
            Document(content="Flink checkpoints snapshot operator state", metadata={"t": "ckpt"}),
            Document(content="Watermarks track event time progress", metadata={"t": "wm"}),
            Document(content="RocksDB keeps state on local disk", metadata={"t": "rocks"}),
        ]
    )
    result = store.query(VectorStoreQuery(query_text="event time watermarks", limit=2))
    assert [d.metadata["t"] for d in result.documents][0] == "wm"
    only = store.query(
        VectorStoreQuery(query_text="event time watermarks", filters={"t": {"$ne": "wm"}})
    )
    assert "wm" not in [d.metadata["t"] for d in only.documents]


_ROWS = [
    Document(id="1", content="one", metadata={"lang": "en", "n": 1, "ok": True}),
    Document(id="2", content="two", metadata={"lang": "de", "n": 2, "tag": "b"}),
    Document(id="3", content="three", metadata={"lang": "en", "n": 3, "tag": "a"}),
    Document(id="4", content="four", metadata={}),
]

FILTERS = [
    ({"lang": "en"}, ["1", "3"]),
    ({"lang": {"$eq": "en"}}, ["1", "3"]),
    ({"lang": {"$ne": "en"}}, ["2", "4"]),  # a missing field matches $ne
    ({"n": {"$gt": 1}}, ["2", "3"]),
    ({"n": {"$gte": 2, "$lt": 3}}, ["2"]),
    ({"n": {"$lte": 1.0}}, ["1"]),
    ({"n": {"$in": [1, 3]}}, ["1", "3"]),
    ({"tag": {"$nin": ["a"]}}, ["1", "2", "4"]),
    ({"lang": "en", "n": 3}, ["3"]),  # several keys: AND
    ({"$and": [{"lang": "en"}, {"n": {"$lt": 3}}]}, ["1"]),
    ({"$or": [{"lang": "de"}, {"tag": "a"}]}, ["2", "3"]),
    ({"$or": [{"lang": "de"}]}, ["2"]),  # one part is fine
    ({"ok": True}, ["1"]),
    ({"ok": 1}, []),  # True is not 1
]


@pytest.mark.parametrize(("where", "expected"), FILTERS, ids=[json.dumps(f) for f, _ in FILTERS])
def test_filters_mean_the_same_in_every_store(store, where, expected):
    store._add_embedding(
        documents=[
            d.model_copy(update={"embedding": [1.0, float(i), 0.5]}) for i, d in enumerate(_ROWS)
        ]
    )
    assert sorted(d.id for d in store.get(filters=where, limit=None)) == expected
    queried = store._query_embedding([1.0, 1.0, 0.5], limit=10, filters=where)
    assert sorted(d.id for d in queried) == expected
    # Chroma's own name, through a query's extra_args, takes the same language
    via_where = store._query_embedding([1.0, 1.0, 0.5], limit=10, where=where)
    assert sorted(d.id for d in via_where) == expected


BAD_FILTERS = [
    ({"lang": {"$like": "e%"}}, "unknown operator '\\$like'"),
    ({"$not": [{"lang": "en"}]}, "unknown operator '\\$not'"),
    ({"n": {"$in": 3}}, "needs a non-empty list"),
    ({"n": {"$in": []}}, "needs a non-empty list"),
    ({"n": {"$in": [1, "2"]}}, "one type"),
    ({"tag": {"$gt": "a"}}, "needs a number"),
    ({"$and": []}, "non-empty list of filters"),
    ({"lang": None}, "str, int, float or bool"),
    ({"lang": ["en"]}, "str, int, float or bool"),
    ({"lang": {}}, "empty operator dict"),
]


@pytest.mark.parametrize(("where", "problem"), BAD_FILTERS, ids=[str(f) for f, _ in BAD_FILTERS])
def test_bad_filters_are_clear_errors(store, where, problem):
    _vectors(store)
    with pytest.raises(VectorStoreError, match=problem):
        store.get(filters=where)
    with pytest.raises(VectorStoreError, match="invalid metadata filter"):
        store._query_embedding([1.0, 0.0, 0.0], filters=where)


def test_dimension_mismatch_is_a_clear_error(store):
    _vectors(store)
    with pytest.raises(VectorStoreError, match="dimension"):
        store._query_embedding([1.0, 0.0])
    with pytest.raises(VectorStoreError, match="dimension"):
        store._add_embedding(documents=[Document(content="bad", embedding=[1.0])])
    with pytest.raises(TypeError, match="no embedding_model"):
        store.model_copy(update={"embedding_model": None}).add(Document(content="a vector?"))


def test_chroma_reopens_its_directory_in_a_new_process(tmp_path):
    directory = str(tmp_path / "chroma")
    store = ChromaVectorStore(persist_directory=directory, collection="kept")
    store._add_embedding(
        documents=[
            Document(id="a", content="alpha", embedding=[1.0, 0.0], metadata={"k": 1}),
            Document(id="b", content="beta", embedding=[0.0, 1.0], metadata={"k": 2}),
        ]
    )
    store.create_collection_if_not_exists("second")
    code = textwrap.dedent(
        f"""
        import json
        from flink_agents.integrations.vector_stores.chroma.chroma_vector_store import (
            ChromaVectorStore)
        store = ChromaVectorStore(persist_directory={directory!r}, collection="kept")
        found = store._query_embedding([0.1, 1.0], limit=1, filters={{"k": {{"$gte": 2}}}})
        print(json.dumps({{"collections": store.list_collections(),
                          "ids": [d.id for d in store.get(limit=None)],
                          "best": found[0].id, "meta": found[0].metadata}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "collections": ["kept", "second"],
        "ids": ["a", "b"],
        "best": "b",
        "meta": {"k": 2},
    }


def test_chroma_l2_collections_score_by_negative_distance(tmp_path):
    store = ChromaVectorStore(
        persist_directory=str(tmp_path / "c"), collection_metadata={"hnsw:space": "l2"}
    )
    store._add_embedding(
        documents=[
            Document(id="near", content="n", embedding=[1.0, 0.0]),
            Document(id="far", content="f", embedding=[3.0, 0.0]),
        ]
    )
    near, far = store._query_embedding([1.0, 0.0], limit=2)
    assert (near.id, far.id) == ("near", "far")
    assert near.score == pytest.approx(0.0) and far.score == pytest.approx(-4.0)  # squared L2


def test_chroma_never_downloads_or_connects(tmp_path):
    """With every outbound connection refused and Chroma's model cache in a fresh home, the
    whole API works: Chroma's default embedding function (a model download) is never used,
    even for an update that keeps a document's stored vector."""
    code = textwrap.dedent(
        f"""
        import os, socket
        def refuse(*args, **kwargs):
            raise RuntimeError(f"network access attempted: {{args}}")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from flink_agents.api.vector_stores.vector_store import Document, VectorStoreQuery
        from flink_agents.integrations.vector_stores.chroma.chroma_vector_store import (
            ChromaVectorStore)
        from tests.integrations.test_vector_stores import _lookup
        store = ChromaVectorStore(persist_directory={str(tmp_path / "c")!r},
                                  embedding_model="embedder", get_resource=_lookup())
        store.add([Document(id="a", content="alpha beta"), Document(content="gamma")])
        store.update(Document(id="a", content="alpha delta"))
        store._update_embedding(documents=[Document(id="a", content="no vector given")])
        hits = store.query(VectorStoreQuery(query_text="alpha delta", limit=1)).documents
        assert hits[0].id == "a", hits
        store.delete(ids="a"); store.delete_collection(store.collection)
        print("OK")
        """
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("OK")
    assert not (home / ".cache" / "chroma").exists()
