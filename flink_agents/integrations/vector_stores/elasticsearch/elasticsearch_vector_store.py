"""Elasticsearch as a vector store (``pip install 'flink-agents-py[elasticsearch]'``;
class name as Apache Flink Agents' Java integration).

Example::

    ResourceDescriptor(clazz=ElasticsearchVectorStore, hosts=["https://es.internal:9200"],
                       embedding_model="embedder", collection="docs")
    # credentials: api_key= or username= / password= (kept out of the plan), or
    # ELASTICSEARCH_API_KEY

Each collection is an index ``<index_prefix><collection>`` whose vector is a
``dense_vector`` (HNSW, cosine); a query is a ``knn`` search (``k`` = the limit,
``num_candidates`` at least that) with the metadata filter as its ``filter``; ``score`` is
the cosine similarity (Elasticsearch's ``(1 + cosine) / 2`` converted back). Metadata
strings are mapped as keywords, so filters match them exactly. Writes and deletes refresh
the index, so a query right after sees them.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from flink_agents.integrations._common import secret_value
from flink_agents.integrations._extras import require
from flink_agents.integrations.vector_stores.elasticsearch._search_engine import (
    VECTOR_FIELD,
    SearchEngineVectorStore,
)

DEFAULT_COLLECTION = "flink_agents_es_collection"


class ElasticsearchVectorStore(SearchEngineVectorStore):
    """Elasticsearch 8.12+ (dense vectors with kNN search).

    Attributes:
        hosts: the cluster's URLs (default ``http://localhost:9200``).
        api_key: an API key (default: ``ELASTICSEARCH_API_KEY``).
        username: a user for basic authentication (with ``password``).
        password: its password.
        verify_certs: check TLS certificates.
        request_timeout: seconds a request may take.
        index_prefix: prefix of each collection's index.
        num_candidates: candidates examined per shard for a vector query.
        embedding_model: name of the embedding model setup for texts without vectors.
        collection: the default collection.
        dimension: vector size of collections created before a vector was seen.
        auto_create_collection: create missing collections on write and query.
    """

    ENGINE: ClassVar[str] = "Elasticsearch"
    collection: str | None = DEFAULT_COLLECTION

    def _default_collection(self) -> str:
        return DEFAULT_COLLECTION

    def _make_client(self) -> Any:
        module = require("elasticsearch", extra="elasticsearch", user=type(self).__name__)
        kwargs: dict[str, Any] = {
            "hosts": list(self.hosts),
            "verify_certs": self.verify_certs,
            "request_timeout": self.request_timeout,
        }
        key = secret_value(self.api_key) or os.environ.get("ELASTICSEARCH_API_KEY")
        if key:
            kwargs["api_key"] = key
        elif self.username:
            kwargs["basic_auth"] = (self.username, secret_value(self.password) or "")
        return module.Elasticsearch(**kwargs)

    def _index_body(self, size: int) -> dict[str, Any]:
        vector = {"type": "dense_vector", "dims": size, "index": True, "similarity": "cosine"}
        return {"mappings": self._mappings(vector)}

    def _vector_dims(self, spec: dict[str, Any]) -> int | None:
        return int(spec["dims"]) if spec.get("type") == "dense_vector" else None

    def _create_index(self, index: str, body: dict[str, Any]) -> None:
        self.client.indices.create(index=index, **body)

    def _bulk(self, operations: list[dict[str, Any]]) -> Any:
        return self.client.bulk(operations=operations, refresh=True)

    def _mget(self, index: str, ids: list[str]) -> Any:
        return self.client.mget(index=index, ids=ids)

    def _plain_search(self, index: str, body: dict[str, Any]) -> Any:
        return self.client.search(
            index=index,
            query=body["query"],
            sort=body["sort"],
            from_=body["from"],
            size=body["size"],
        )

    def _delete_by_query(self, index: str, query: dict[str, Any]) -> Any:
        return self.client.delete_by_query(index=index, query=query, refresh=True)

    def _knn_search(
        self, index: str, vector: list[float], k: int, query: dict[str, Any] | None
    ) -> Any:
        knn: dict[str, Any] = {
            "field": VECTOR_FIELD,
            "query_vector": vector,
            "k": k,
            "num_candidates": max(self.num_candidates, k),
        }
        if query is not None:
            knn["filter"] = query
        return self.client.search(index=index, knn=knn, size=k)
