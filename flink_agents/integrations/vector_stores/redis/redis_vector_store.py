"""Redis as a vector store (``pip install 'flink-agents-py[redis]'``).

Example::

    ResourceDescriptor(clazz=RedisVectorStore, url="redis://cache.internal:6379/0",
                       embedding_model="embedder", collection="docs")
    # the password: password= (kept out of the plan) or REDIS_PASSWORD

Documents are hashes ``<key_prefix><collection>:<id>`` with ``content``, ``metadata`` (JSON)
and ``embedding`` (float32 bytes); a sorted set per collection keeps the ids in insertion
order, a hash ``<key_prefix>__collections__`` each collection's vector size.

Two ways to search (``search_mode``):

- ``"index"``: Redis' query engine (Redis Stack, Redis 8, or the RediSearch module 2.4+):
  an HNSW vector index per collection (``FT.CREATE ... VECTOR HNSW ... COSINE``) and
  ``FT.SEARCH`` KNN queries;
- ``"scan"``: plain Redis (and Valkey) without the query engine: the collection's vectors
  are read and ranked in the client (numpy). Right for up to some ten thousand documents
  per collection.
- ``"auto"`` (default): ``"index"`` when the server has the query engine, else ``"scan"``.

Metadata filters are evaluated by the store in both modes (the metadata is one JSON field;
an indexed query fetches more neighbours when filtered). ``score`` is the cosine
similarity.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Literal

import numpy as np
from pydantic import Field, PrivateAttr, SecretStr

from flink_agents.api.vector_stores._filters import Node
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.errors import VectorStoreError
from flink_agents.integrations._common import secret_value
from flink_agents.integrations._extras import require
from flink_agents.integrations.vector_stores._base import SizedCollectionStore
from flink_agents.integrations.vector_stores._common import chunks, kept

DEFAULT_COLLECTION = "flink_agents_redis_collection"
_BATCH = 500


class RedisVectorStore(SizedCollectionStore):
    """Redis (with or without its query engine).

    ``get`` by filter returns documents in insertion order and also takes ``offset``.

    Attributes:
        url: the server (``redis://host:6379/0``, ``rediss://`` for TLS).
        username: an ACL user.
        password: the password (kept out of the plan; default: ``REDIS_PASSWORD``).
        key_prefix: prefix of every key this store writes.
        search_mode: ``"auto"``, ``"index"`` (the query engine) or ``"scan"``.
        embedding_model: name of the embedding model setup for texts without vectors.
        collection: the default collection.
        dimension: vector size of collections created before a vector was seen.
        auto_create_collection: create missing collections on write and query.
    """

    url: str = "redis://localhost:6379/0"
    username: str | None = None
    password: SecretStr | None = Field(default=None, repr=False)
    key_prefix: str = "fa:"
    search_mode: Literal["auto", "index", "scan"] = "auto"
    collection: str | None = DEFAULT_COLLECTION

    _client: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _indexed: bool | None = PrivateAttr(default=None)

    def _default_collection(self) -> str:
        return DEFAULT_COLLECTION

    @property
    def client(self) -> Any:
        """The ``redis.Redis`` client (made on first use; thread safe)."""
        if self._client is None:
            redis = require("redis", extra="redis", user=type(self).__name__)
            with self._lock:
                if self._client is None:
                    self._client = redis.Redis.from_url(
                        self.url,
                        username=self.username,
                        password=secret_value(self.password) or os.environ.get("REDIS_PASSWORD"),
                    )
        return self._client

    def _uses_index(self) -> bool:
        """Whether searches go through the query engine (see ``search_mode``)."""
        if self._indexed is None:
            if self.search_mode == "scan":
                self._indexed = False
            else:
                try:
                    modules = self.client.execute_command("MODULE", "LIST") or []
                    names = {
                        (m.get(b"name") or m.get("name") or b"").lower()
                        if isinstance(m, dict)
                        else str(m).lower()
                        for m in modules
                    }
                    found = any(
                        b"search" in n if isinstance(n, bytes) else "search" in n for n in names
                    )
                except Exception:  # noqa: BLE001 - a server without MODULE: no query engine
                    found = False
                if self.search_mode == "index" and not found:
                    raise VectorStoreError(
                        f"search_mode='index' but the Redis server at {self.url} has no query "
                        "engine (Redis Stack, Redis 8 or RediSearch 2.4+); use 'scan' or 'auto'"
                    )
                self._indexed = found
        return self._indexed

    # -- keys ------------------------------------------------------------------------------
    def _registry(self) -> str:
        return f"{self.key_prefix}__collections__"

    def _doc_key(self, name: str, doc_id: str) -> str:
        return f"{self.key_prefix}{name}:{doc_id}"

    def _ids_key(self, name: str) -> str:
        return f"{self.key_prefix}{name}:__ids__"

    def _index_name(self, name: str) -> str:
        return f"{self.key_prefix}{name}:__index__"

    # -- collections ---------------------------------------------------------------------
    def list_collections(self) -> list[str]:
        """The collection names, sorted."""
        return sorted(k.decode() for k in self.client.hkeys(self._registry()))

    def _dimension(self, name: str) -> int | None:
        found = self.client.hget(self._registry(), name)
        return int(found) if found is not None else None

    def _create(self, name: str, size: int) -> None:
        if not self.client.hsetnx(self._registry(), name, size):
            return
        if self._uses_index():
            self.client.execute_command(
                "FT.CREATE", self._index_name(name), "ON", "HASH",
                "PREFIX", "1", f"{self.key_prefix}{name}:",
                "SCHEMA", "embedding", "VECTOR", "HNSW", "6",
                "TYPE", "FLOAT32", "DIM", str(size), "DISTANCE_METRIC", "COSINE",
            )  # fmt: skip

    def _location(self) -> str:
        return f"Redis at {self.url}"

    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        """Create collection ``name`` unless it exists; ``dimension=`` sets its vector size."""
        if ":" in name:
            raise VectorStoreError(f"a Redis collection name cannot contain ':' ({name!r})")
        super().create_collection_if_not_exists(name, **kwargs)

    def _drop(self, name: str) -> None:
        for part in chunks(self._ids(name), _BATCH):
            self.client.delete(*[self._doc_key(name, i) for i in part])
        self.client.delete(self._ids_key(name))
        if self._uses_index():
            try:
                self.client.execute_command("FT.DROPINDEX", self._index_name(name))
            except Exception:  # noqa: BLE001 - an index already gone
                pass
        self.client.hdel(self._registry(), name)

    def close(self) -> None:
        """Close the connection pool."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- writing ---------------------------------------------------------------------------
    def _write(self, name: str, docs: list[Document]) -> None:
        for part in chunks(docs, _BATCH):
            pipe = self.client.pipeline(transaction=False)
            for doc in part:
                key = self._doc_key(name, str(doc.id))
                pipe.delete(key)
                pipe.hset(
                    key,
                    mapping={
                        "id": str(doc.id),
                        "content": doc.content,
                        "metadata": json.dumps(doc.metadata),
                        "embedding": np.asarray(doc.embedding, dtype=np.float32).tobytes(),
                    },
                )
                # a new id goes to the end; a replaced one keeps its place
                pipe.zadd(self._ids_key(name), {str(doc.id): _order()}, nx=True)
            pipe.execute()

    def _stored_vectors(self, name: str, ids: list[str]) -> dict[str, list[float]]:
        pipe = self.client.pipeline(transaction=False)
        for i in ids:
            pipe.hget(self._doc_key(name, i), "embedding")
        return {
            i: np.frombuffer(raw, np.float32).tolist()
            for i, raw in zip(ids, pipe.execute(), strict=True)
            if raw is not None
        }

    def _remove(self, name: str, ids: list[str]) -> None:
        for part in chunks(ids, _BATCH):
            self.client.delete(*[self._doc_key(name, i) for i in part])
            self.client.zrem(self._ids_key(name), *part)

    # -- reading ---------------------------------------------------------------------------
    def _load(self, name: str, ids: list[str], *, vectors: bool = False) -> list[Any]:
        fields = ["id", "content", "metadata"] + (["embedding"] if vectors else [])
        pipe = self.client.pipeline(transaction=False)
        for i in ids:
            pipe.hmget(self._doc_key(name, i), fields)
        rows = []
        for values in pipe.execute():
            if values[0] is None:
                continue
            doc = Document(
                id=values[0].decode(),
                content=values[1].decode(),
                metadata=json.loads(values[2] or b"{}"),
            )
            rows.append((doc, np.frombuffer(values[3], np.float32) if vectors else None))
        return rows

    def _ids(self, name: str) -> list[str]:
        return [i.decode() for i in self.client.zrange(self._ids_key(name), 0, -1)]

    def _fetch(self, name: str, ids: list[str], where: Node | None) -> list[Document]:
        return [d for d, _ in self._load(name, ids)]

    def _scan(
        self, name: str, where: Node | None, limit: int | None, kwargs: dict[str, Any]
    ) -> list[Document]:
        found: list[Document] = []
        for part in chunks(self._ids(name), _BATCH):
            found.extend(kept([d for d, _ in self._load(name, list(part))], where))
        offset = int(kwargs.get("offset") or 0)
        return found[offset:] if limit is None else found[offset : offset + limit]

    def _search(
        self, name: str, embedding: list[float], limit: int, where: Node | None
    ) -> list[Document]:
        if self._uses_index():
            return self._indexed_query(name, embedding, limit, where)
        query = np.asarray(embedding, dtype=np.float64)
        norm = np.linalg.norm(query)
        query = query / norm if norm else query
        scored: list[tuple[float, Document]] = []
        for part in chunks(self._ids(name), _BATCH):
            for doc, vector in self._load(name, list(part), vectors=True):
                if not kept([doc], where):
                    continue
                length = np.linalg.norm(vector)
                score = float(vector @ query / length) if length else 0.0
                scored.append((score, doc))
        scored.sort(key=lambda pair: -pair[0])
        return [d.model_copy(update={"score": s}) for s, d in scored[:limit]]

    def _indexed_query(
        self, name: str, embedding: list[float], limit: int, where: Any
    ) -> list[Document]:
        """A KNN query through the query engine (more neighbours when filtered here)."""
        fetch = limit if where is None else max(limit * 4, 50)
        reply = self.client.execute_command(
            "FT.SEARCH", self._index_name(name),
            f"*=>[KNN {fetch} @embedding $vector AS distance]",
            "PARAMS", "2", "vector", np.asarray(embedding, dtype=np.float32).tobytes(),
            "SORTBY", "distance", "RETURN", "4", "id", "content", "metadata", "distance",
            "LIMIT", "0", str(fetch), "DIALECT", "2",
        )  # fmt: skip
        docs = []
        for i in range(1, len(reply), 2):
            fields = dict(zip(reply[i + 1][::2], reply[i + 1][1::2], strict=False))
            docs.append(
                Document(
                    id=fields[b"id"].decode(),
                    content=fields[b"content"].decode(),
                    metadata=json.loads(fields.get(b"metadata") or b"{}"),
                    score=1.0 - float(fields[b"distance"]),
                )
            )
        return kept(docs, where)[:limit]


_counter = threading.Lock()
_last = [0]


def _order() -> int:
    """A strictly increasing number (microseconds; exact in a sorted set's double score):
    the insertion order of ids."""
    import time

    with _counter:
        _last[0] = max(time.time_ns() // 1000, _last[0] + 1)
        return _last[0]
