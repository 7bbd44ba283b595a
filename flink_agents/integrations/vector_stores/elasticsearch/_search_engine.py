"""What the Elasticsearch and OpenSearch stores share: an index per collection, documents
with ``doc_id``, ``content``, ``metadata`` (strings mapped as keywords), ``seq`` (insertion
order) and the vector; the filter language as a ``bool`` query; scores converted back to the
cosine similarity (both engines score cosine as ``(1 + cosine) / 2``). Private: the user
facing classes are :class:`ElasticsearchVectorStore` and :class:`OpenSearchVectorStore`.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, ClassVar

from pydantic import Field, PrivateAttr, SecretStr

from flink_agents.api.vector_stores._filters import Condition, Node
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.errors import VectorStoreError
from flink_agents.integrations.vector_stores._base import SizedCollectionStore
from flink_agents.integrations.vector_stores._common import (
    chunks,
    kept,
    render_filter,
    to_document,
)

_INDEX = re.compile(r"^[a-z0-9][a-z0-9_\-]*$")
_BATCH = 500
_PAGE = 1000
VECTOR_FIELD = "embedding"


def to_bool_query(node: Node | None) -> dict[str, Any] | None:
    """The filter as an Elasticsearch / OpenSearch query over ``metadata.<field>``."""

    def junction(op: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
        if op == "$and":
            return {"bool": {"filter": parts}}
        return {"bool": {"should": parts, "minimum_should_match": 1}}

    def leaf(cond: Condition) -> dict[str, Any]:
        field = f"metadata.{cond.field}"
        op, value = cond.op, cond.value
        if op == "$eq":
            return {"term": {field: value}}
        if op == "$ne":
            return {"bool": {"must_not": [{"term": {field: value}}]}}
        if op == "$in":
            return {"terms": {field: list(value)}}
        if op == "$nin":
            return {"bool": {"must_not": [{"terms": {field: list(value)}}]}}
        bound = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}[op]
        return {"range": {field: {bound: value}}}

    return render_filter(node, leaf, junction)


class SearchEngineVectorStore(SizedCollectionStore):
    """The common part of the Elasticsearch and OpenSearch stores.

    ``get`` by filter returns documents in insertion order.

    Attributes:
        hosts: the cluster's URLs.
        api_key: an API key (kept out of the plan).
        username: a user for basic authentication (with ``password``).
        password: its password (kept out of the plan).
        verify_certs: check TLS certificates.
        request_timeout: seconds a request may take.
        index_prefix: prefix of the index of each collection (lowercase).
        num_candidates: candidates examined per shard for a vector query (at least the
            query's limit).
    """

    hosts: list[str] = Field(default_factory=lambda: ["http://localhost:9200"])
    api_key: SecretStr | None = Field(default=None, repr=False)
    username: str | None = None
    password: SecretStr | None = Field(default=None, repr=False)
    verify_certs: bool = True
    request_timeout: float = Field(default=30.0, gt=0)
    index_prefix: str = "flink-agents-"
    num_candidates: int = Field(default=100, ge=1)

    _client: Any = PrivateAttr(default=None)
    _client_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    # what a subclass provides ----------------------------------------------------------------
    ENGINE: ClassVar[str] = "search engine"

    def _make_client(self) -> Any:
        raise NotImplementedError

    def _index_body(self, size: int) -> dict[str, Any]:
        raise NotImplementedError

    def _vector_dims(self, spec: dict[str, Any]) -> int | None:
        raise NotImplementedError

    def _knn_search(
        self, index: str, vector: list[float], k: int, query: dict[str, Any] | None
    ) -> Any:
        raise NotImplementedError

    def _create_index(self, index: str, body: dict[str, Any]) -> None:
        raise NotImplementedError

    def _bulk(self, operations: list[dict[str, Any]]) -> Any:
        raise NotImplementedError

    def _mget(self, index: str, ids: list[str]) -> Any:
        raise NotImplementedError

    def _plain_search(self, index: str, body: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _delete_by_query(self, index: str, query: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _not_found(self) -> type[BaseException]:
        raise NotImplementedError

    # common ------------------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The engine's client (made on first use)."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = self._make_client()
        return self._client

    def _location(self) -> str:
        return f"{self.ENGINE} at {', '.join(self.hosts)}"

    def _index(self, collection: str) -> str:
        name = f"{self.index_prefix}{collection}"
        if not _INDEX.match(name):
            raise VectorStoreError(
                f"collection {collection!r} cannot be an index name ({name!r}: lowercase "
                "letters, digits, '-' and '_')"
            )
        return name

    def list_collections(self) -> list[str]:
        """The collection names, sorted."""
        found = self.client.indices.get(index=f"{self.index_prefix}*")
        names = found.body if hasattr(found, "body") else found
        return sorted(n[len(self.index_prefix) :] for n in names)

    def _dimension(self, name: str) -> int | None:
        if name in self._dims:
            return self._dims[name]
        index = self._index(name)
        if not self.client.indices.exists(index=index):
            return None
        found = self.client.indices.get_mapping(index=index)
        mapping = (found.body if hasattr(found, "body") else found)[index]["mappings"]
        spec = (mapping.get("properties") or {}).get(VECTOR_FIELD)
        dims = self._vector_dims(spec or {})
        if dims is None:
            raise VectorStoreError(
                f"index {index!r} was not made by this store (no {VECTOR_FIELD!r} vector field)"
            )
        self._dims[name] = dims
        return dims

    def _mappings(self, vector: dict[str, Any]) -> dict[str, Any]:
        return {
            "dynamic_templates": [
                {
                    "metadata_strings": {
                        "path_match": "metadata.*",
                        "match_mapping_type": "string",
                        "mapping": {"type": "keyword"},
                    }
                }
            ],
            "properties": {
                "doc_id": {"type": "keyword"},
                "content": {"type": "text"},
                "seq": {"type": "long"},
                "metadata": {"type": "object", "dynamic": True},
                VECTOR_FIELD: vector,
            },
        }

    def _create(self, name: str, size: int) -> None:
        index = self._index(name)
        if not self.client.indices.exists(index=index):
            try:
                self._create_index(index, self._index_body(size))
            except Exception as exc:
                if not self.client.indices.exists(index=index):
                    raise VectorStoreError(f"cannot create index {index!r}: {exc}") from exc
        self._dims.pop(name, None)
        self._dimension(name)

    def _drop(self, name: str) -> None:
        self.client.indices.delete(index=self._index(name))

    def close(self) -> None:
        """Close the client."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- writing ---------------------------------------------------------------------------
    def _write(self, name: str, docs: list[Document]) -> None:
        # a replaced document keeps its place in the insertion order; a new one goes last
        ids = [str(d.id) for d in docs]
        stored = self._sources(name, ids)
        base = time.time_ns() // 1000
        sequence = {
            i: int(stored[i]["seq"]) if i in stored else base + n for n, i in enumerate(ids)
        }
        index = self._index(name)
        for part in chunks(docs, _BATCH):
            operations: list[dict[str, Any]] = []
            for doc in part:
                operations.append({"index": {"_index": index, "_id": str(doc.id)}})
                operations.append(
                    {
                        "doc_id": str(doc.id),
                        "content": doc.content,
                        "metadata": doc.metadata,
                        "seq": sequence[str(doc.id)],
                        VECTOR_FIELD: [float(x) for x in doc.embedding or []],
                    }
                )
            reply = self._bulk(operations)
            body = reply.body if hasattr(reply, "body") else reply
            if body.get("errors"):
                reasons = [
                    next(iter(i.values())).get("error", {}).get("reason", "?")
                    for i in body["items"]
                    if next(iter(i.values())).get("error")
                ]
                raise VectorStoreError(f"{self.ENGINE} rejected documents: {reasons[:3]}")

    def _sources(self, name: str, ids: list[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for part in chunks(ids, _PAGE):
            reply = self._mget(self._index(name), list(part))
            body = reply.body if hasattr(reply, "body") else reply
            for doc in body["docs"]:
                if doc.get("found"):
                    found[doc["_id"]] = doc["_source"]
        return found

    def _stored_vectors(self, name: str, ids: list[str]) -> dict[str, list[float]]:
        return {i: list(s[VECTOR_FIELD]) for i, s in self._sources(name, ids).items()}

    def _remove(self, name: str, ids: list[str]) -> None:
        for part in chunks(ids, _BATCH):
            self._delete_by_query(self._index(name), {"ids": {"values": list(part)}})

    # -- reading ---------------------------------------------------------------------------
    @staticmethod
    def _document(source: dict[str, Any], score: float | None = None) -> Document:
        return to_document(source["doc_id"], source, score)

    def _fetch(self, name: str, ids: list[str], where: Node | None) -> list[Document]:
        return [self._document(s) for s in self._sources(name, ids).values()]

    def _page(
        self, name: str, where: Node | None, size: int, cursor: Any
    ) -> tuple[list[Document], Any]:
        start = cursor or 0
        reply = self._plain_search(
            self._index(name),
            {
                "query": to_bool_query(where) or {"match_all": {}},
                "sort": [{"seq": "asc"}],
                "from": start,
                "size": _PAGE,
            },
        )
        body = reply.body if hasattr(reply, "body") else reply
        hits = body["hits"]["hits"]
        following = start + len(hits) if len(hits) >= _PAGE else None
        return [self._document(h["_source"]) for h in hits], following

    def _search(
        self, name: str, embedding: list[float], limit: int, where: Node | None
    ) -> list[Document]:
        reply = self._knn_search(
            self._index(name), [float(x) for x in embedding], limit, to_bool_query(where)
        )
        body = reply.body if hasattr(reply, "body") else reply
        docs = [
            self._document(h["_source"], 2.0 * float(h["_score"]) - 1.0)
            for h in body["hits"]["hits"]
        ]
        return kept(docs, where)[:limit]
