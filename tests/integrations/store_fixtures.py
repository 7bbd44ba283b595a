"""Fixtures making each database vector store for the contract tests
(``test_vector_stores.py``): a factory ``<name>_store_factory(**store_kwargs)`` per store.

What runs for real here: Qdrant in its embedded local mode (a directory), Milvus Lite (a
file, its server process started by ``milvus-lite``), PostgreSQL with pgvector (a server
started in a temporary directory), Redis (``redis-server`` on a free port). What is a
stand-in: Elasticsearch and OpenSearch (``tests/integrations/search_server.py``, a local HTTP
server speaking the subset of their REST API the clients use).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def _needs(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed: pip install 'flink-agents-py[{extra}]'")


@pytest.fixture
def qdrant_store_factory(tmp_path: Path) -> Callable[..., Any]:
    _needs("qdrant_client", "qdrant")
    from flink_agents.integrations.vector_stores.qdrant.qdrant_vector_store import (
        QdrantVectorStore,
    )

    return lambda **kw: QdrantVectorStore(path=str(tmp_path / "qdrant"), **kw)


@pytest.fixture
def milvus_store_factory(tmp_path: Path) -> Callable[..., Any]:
    _needs("pymilvus", "milvus")
    _needs("milvus_lite", "milvus")
    from flink_agents.integrations.vector_stores.milvus.milvus_vector_store import (
        MilvusVectorStore,
    )

    return lambda **kw: MilvusVectorStore(uri=str(tmp_path / "milvus.db"), **kw)


@pytest.fixture
def mem0_qdrant_store_factory(tmp_path: Path) -> Callable[..., Any]:
    _needs("mem0", "mem0")
    _needs("qdrant_client", "qdrant")
    from flink_agents.integrations.vector_stores.mem0.mem0_vector_store import Mem0VectorStore

    return lambda **kw: Mem0VectorStore(
        provider="qdrant", provider_config={"path": str(tmp_path / "mem0-qdrant")}, **kw
    )


@pytest.fixture(scope="session")
def postgres_with_pgvector() -> Any:
    _needs("psycopg", "pgvector")
    _needs("pgvector", "pgvector")
    from tests.integrations.pg_server import find_postgres, postgres_server

    if find_postgres()[0] is None:
        pytest.skip(find_postgres()[1])
    with postgres_server() as info:
        yield info


@pytest.fixture
def pgvector_store_factory(postgres_with_pgvector: dict[str, Any]) -> Callable[..., Any]:
    import uuid

    from flink_agents.integrations.vector_stores.pgvector.pgvector_vector_store import (
        PGVectorStore,
    )

    prefix = f"t{uuid.uuid4().hex[:8]}_"  # each test its own tables
    return lambda **kw: PGVectorStore(**postgres_with_pgvector, table_prefix=prefix, **kw)


@pytest.fixture(scope="session")
def redis_server() -> Any:
    """A real ``redis-server`` on a free port (plain Redis: no query engine)."""
    import shutil
    import subprocess
    import tempfile
    import time

    _needs("redis", "redis")
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (make stores: apt-get install redis-server)")
    from flink_agents.testing.ports import free_port

    port = free_port()
    directory = tempfile.mkdtemp(prefix="fa-redis-")
    process = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            directory,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port)
    deadline = time.monotonic() + 30
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start") from None
            time.sleep(0.1)
    yield f"redis://127.0.0.1:{port}/0"
    client.close()
    process.terminate()
    process.wait(10)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def redis_store_factory(redis_server: str) -> Callable[..., Any]:
    import uuid

    from flink_agents.integrations.vector_stores.redis.redis_vector_store import (
        RedisVectorStore,
    )

    prefix = f"t{uuid.uuid4().hex[:8]}:"  # each test its own keys
    return lambda **kw: RedisVectorStore(url=redis_server, key_prefix=prefix, **kw)


@pytest.fixture
def elasticsearch_store_factory() -> Any:
    _needs("elasticsearch", "elasticsearch")
    from flink_agents.integrations.vector_stores.elasticsearch.elasticsearch_vector_store import (
        ElasticsearchVectorStore,
    )
    from flink_agents.testing.servers.search_server import SearchServer

    with SearchServer(flavor="elasticsearch") as server:
        yield lambda **kw: ElasticsearchVectorStore(hosts=[server.url], **kw)


@pytest.fixture
def opensearch_store_factory() -> Any:
    _needs("opensearchpy", "opensearch")
    from flink_agents.integrations.vector_stores.elasticsearch.opensearch_vector_store import (
        OpenSearchVectorStore,
    )
    from flink_agents.testing.servers.search_server import SearchServer

    with SearchServer(flavor="opensearch") as server:
        yield lambda **kw: OpenSearchVectorStore(hosts=[server.url], **kw)


__all__ = [
    "elasticsearch_store_factory",
    "opensearch_store_factory",
    "redis_server",
    "redis_store_factory",
    "pgvector_store_factory",
    "postgres_with_pgvector",
    "mem0_qdrant_store_factory",
    "milvus_store_factory",
    "qdrant_store_factory",
]
