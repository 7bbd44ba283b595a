"""Missing extras name the extra to install; long-term memory (mem0) on each database store;
what is particular to some stores (Redis' search modes, pgvector's refused conninfo, Qdrant
and Milvus Lite reopening their files)."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.errors import ConfigurationError, MissingExtraError, VectorStoreError
from tests.integrations.store_fixtures import *  # noqa: F403 - the stores' fixtures
from tests.integrations.test_vector_stores import STORES, _lookup

USER = [ChatMessage(role=MessageRole.USER, content="hi")]
PKG = "flink_agents.integrations."

MISSING = [
    ("boto3", "bedrock", PKG + "chat_models.bedrock.bedrock_chat_model.BedrockChatModelConnection",
     {"region": "us-east-1"}, lambda c: c.chat(USER, model="m")),
    ("google.genai", "gemini",
     PKG + "chat_models.gemini.gemini_chat_model.GeminiChatModelConnection",
     {"api_key": "k" * 8}, lambda c: c.chat(USER, model="m")),
    ("dashscope", "tongyi", PKG + "chat_models.tongyi_chat_model.TongyiChatModelConnection",
     {"api_key": "k" * 8}, lambda c: c.chat(USER, model="m")),
    ("azure.identity", "azure",
     PKG + "chat_models.azure.azure_openai_chat_model.AzureOpenAIChatModelConnection",
     {"azure_endpoint": "http://127.0.0.1:9", "use_entra_id": True},
     lambda c: c.chat(USER, model="m")),
    ("boto3", "bedrock",
     PKG + "embedding_models.bedrock_embedding_model.BedrockEmbeddingModelConnection",
     {}, lambda c: c.embed(["x"], model="m")),
    ("dashscope", "tongyi",
     PKG + "embedding_models.tongyi_embedding_model.TongyiEmbeddingModelConnection",
     {"api_key": "k" * 8}, lambda c: c.embed(["x"])),
    ("qdrant_client", "qdrant", PKG + "vector_stores.qdrant.qdrant_vector_store.QdrantVectorStore",
     {}, lambda s: s.list_collections()),
    ("pymilvus", "milvus", PKG + "vector_stores.milvus.milvus_vector_store.MilvusVectorStore",
     {}, lambda s: s.list_collections()),
    ("psycopg", "pgvector", PKG + "vector_stores.pgvector.pgvector_vector_store.PGVectorStore",
     {}, lambda s: s.list_collections()),
    ("elasticsearch", "elasticsearch",
     PKG + "vector_stores.elasticsearch.elasticsearch_vector_store.ElasticsearchVectorStore",
     {}, lambda s: s.list_collections()),
    ("opensearchpy", "opensearch",
     PKG + "vector_stores.elasticsearch.opensearch_vector_store.OpenSearchVectorStore",
     {}, lambda s: s.list_collections()),
    ("redis", "redis", PKG + "vector_stores.redis.redis_vector_store.RedisVectorStore",
     {}, lambda s: s.list_collections()),
]  # fmt: skip


@pytest.mark.parametrize(
    ("package", "extra", "path", "arguments", "use"),
    MISSING,
    ids=[f"{m[1]}-{m[2].rsplit('.', 1)[-1]}" for m in MISSING],
)
def test_a_missing_extra_is_named(
    package: str, extra: str, path: str, arguments: dict, use: Any, monkeypatch
):
    module_path, name = path.rsplit(".", 1)
    cls = getattr(importlib.import_module(module_path), name)  # imports without the SDK
    for loaded in [m for m in list(sys.modules) if m == package or m.startswith(package + ".")]:
        monkeypatch.delitem(sys.modules, loaded)
    monkeypatch.setitem(sys.modules, package, None)  # "import package" now fails
    resource = cls(**arguments)
    with pytest.raises(MissingExtraError) as info:
        use(resource)
    assert f"pip install 'flink-agents-py[{extra}]'" in str(info.value)
    assert info.value.extra == extra and isinstance(info.value, ConfigurationError)


@pytest.mark.parametrize("name", STORES)
def test_long_term_memory_runs_on_each_store(name: str, request: pytest.FixtureRequest):
    """mem0 keeps, finds and forgets items through the store (the agent's vector store)."""
    pytest.importorskip("mem0")
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment
    from flink_agents.api.resource import ResourceDescriptor
    from tests.runtime.ltm_agents import LTM_CONFIG, MemoryOpsAgent, ltm_resources, ops

    factory = request.getfixturevalue(f"{name.replace('-', '_')}_store_factory")
    probe = factory(embedding_model="embedder", get_resource=_lookup(), collection="ltm")
    descriptor = ResourceDescriptor(
        clazz=type(probe), **probe.model_dump(exclude={"get_resource"}, exclude_none=True)
    )
    probe.close()
    agent = ltm_resources(MemoryOpsAgent(), "/unused")
    agent._added_resources[next(t for t in agent._added_resources if t.value == "vector_store")][
        "store"
    ] = descriptor
    env = AgentsExecutionEnvironment.get_execution_environment(
        **LTM_CONFIG, **{"job-identifier": f"ltm-{name}"}
    )
    script = ops(
        ("add", {"items": ["Alice likes green tea", "Bob drives a red car"]}),
        ("search", {"query": "Alice likes tea", "limit": 1}),
        ("get", {}),
    )
    out = env.from_list([{"key": "u1", "value": script}]).apply(agent).to_list()
    env.execute()
    added, found, everything = out[0]["u1"]
    assert len(added) == 2
    assert [f["value"] for f in found] == ["Alice likes green tea"]
    assert sorted(i["value"] for i in everything) == [
        "Alice likes green tea",
        "Bob drives a red car",
    ]


def test_redis_search_modes(redis_store_factory: Any):
    plain = redis_store_factory(embedding_model="embedder", get_resource=_lookup())
    assert plain._uses_index() is False  # Debian's redis-server has no query engine: scan
    strict = redis_store_factory(search_mode="index", dimension=4)
    with pytest.raises(VectorStoreError, match="no query engine"):
        strict.create_collection_if_not_exists("c")


def test_pgvector_refuses_a_password_in_conninfo():
    from flink_agents.integrations.vector_stores.pgvector.pgvector_vector_store import (
        PGVectorStore,
    )

    for conninfo in ("host=db password=hunter2", "postgresql://u:hunter2@db/agents"):
        with pytest.raises(Exception, match="do not put the password into conninfo"):
            PGVectorStore(conninfo=conninfo)
    assert PGVectorStore(conninfo="sslmode=require").conninfo == "sslmode=require"


@pytest.mark.parametrize("name", ["qdrant", "milvus"])
def test_embedded_stores_keep_their_data_in_their_files(name: str, tmp_path, request):
    """A new process opens the directory / file and finds the documents."""
    import subprocess
    import sys
    import textwrap

    request.getfixturevalue(f"{name}_store_factory")  # skips without the packages
    from flink_agents.api.vector_stores.vector_store import Document

    factory = request.getfixturevalue(f"{name}_store_factory")
    store = factory(collection="kept")
    store.add([Document(id="a", content="alpha", embedding=[1.0, 0.0], metadata={"n": 1})])
    store.close()
    where = {"qdrant": "path", "milvus": "uri"}[name]
    location = store.path if name == "qdrant" else store.uri
    code = textwrap.dedent(
        f"""
        from {type(store).__module__} import {type(store).__name__} as S
        s = S({where}={location!r}, collection="kept")
        print([d.id for d in s.get()], s._query_embedding([1.0, 0.0], limit=1)[0].id)
        """
    )
    # one process at a time may open a Qdrant directory or a Milvus Lite file
    importlib.import_module(type(store).__module__)._close_local_clients()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.strip().splitlines()[-1] == "['a'] a"


@pytest.mark.parametrize("name", ["qdrant", "milvus"])
def test_embedded_stores_lose_no_write_from_concurrent_threads(name: str, request):
    """Keys' runs call a store from the pool's threads at once (long-term memory does):
    Qdrant's local mode has no lock of its own and lost points that way (1 run in 3 of the
    long-term-memory example under load); every document must be there."""
    from concurrent.futures import ThreadPoolExecutor

    from flink_agents.api.vector_stores.vector_store import Document

    store = request.getfixturevalue(f"{name}_store_factory")(collection="threads")
    threads, each = 8, 25

    def write(t: int) -> None:
        for i in range(each):
            vector = [float(t + 1), float(i + 1)]
            store.add([Document(id=f"{t}-{i}", content=f"d{t}-{i}", embedding=vector)])

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(write, range(threads)))
    try:
        ids = {d.id for d in store.get(limit=threads * each + 10)}
    finally:
        store.close()
    assert ids == {f"{t}-{i}" for t in range(threads) for i in range(each)}
