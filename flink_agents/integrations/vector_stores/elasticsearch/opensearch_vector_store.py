"""OpenSearch as a vector store (``pip install 'flink-agents-py[opensearch]'``; class name as
Apache Flink Agents' Java integration).

Example::

    ResourceDescriptor(clazz=OpenSearchVectorStore, hosts=["https://search.internal:9200"],
                       username="agent", embedding_model="embedder", collection="docs")
    # the password: password= (kept out of the plan) or OPENSEARCH_PASSWORD

Each collection is a k-NN index (``index.knn``) whose vector is a ``knn_vector`` (HNSW,
``cosinesimil``, the Lucene engine, which filters during the search); a query is a ``knn``
query with the metadata filter as its ``filter``; ``score`` is the cosine similarity (the
engine's ``(1 + cosine) / 2`` converted back). Metadata strings are mapped as keywords.
Writes and deletes refresh the index.
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

DEFAULT_COLLECTION = "flink_agents_os_collection"


class OpenSearchVectorStore(SearchEngineVectorStore):
    """OpenSearch 2.x+ with the k-NN plugin.

    Attributes:
        hosts: the cluster's URLs (default ``http://localhost:9200``).
        username: a user for basic authentication (with ``password``).
        password: its password (default: ``OPENSEARCH_PASSWORD``).
        verify_certs: check TLS certificates.
        request_timeout: seconds a request may take.
        index_prefix: prefix of each collection's index.
        embedding_model: name of the embedding model setup for texts without vectors.
        collection: the default collection.
        dimension: vector size of collections created before a vector was seen.
        auto_create_collection: create missing collections on write and query.
    """

    ENGINE: ClassVar[str] = "OpenSearch"
    collection: str | None = DEFAULT_COLLECTION

    def _default_collection(self) -> str:
        return DEFAULT_COLLECTION

    def _make_client(self) -> Any:
        module = require("opensearchpy", extra="opensearch", user=type(self).__name__)
        kwargs: dict[str, Any] = {
            "hosts": list(self.hosts),
            "verify_certs": self.verify_certs,
            "timeout": self.request_timeout,
        }
        if self.username:
            password = secret_value(self.password) or os.environ.get("OPENSEARCH_PASSWORD", "")
            kwargs["http_auth"] = (self.username, password)
        return module.OpenSearch(**kwargs)

    def _index_body(self, size: int) -> dict[str, Any]:
        vector = {
            "type": "knn_vector",
            "dimension": size,
            "method": {"name": "hnsw", "space_type": "cosinesimil", "engine": "lucene"},
        }
        return {"settings": {"index": {"knn": True}}, "mappings": self._mappings(vector)}

    def _vector_dims(self, spec: dict[str, Any]) -> int | None:
        return int(spec["dimension"]) if spec.get("type") == "knn_vector" else None

    def _create_index(self, index: str, body: dict[str, Any]) -> None:
        self.client.indices.create(index=index, body=body)

    def _bulk(self, operations: list[dict[str, Any]]) -> Any:
        return self.client.bulk(body=operations, refresh=True)

    def _mget(self, index: str, ids: list[str]) -> Any:
        return self.client.mget(index=index, body={"ids": ids})

    def _plain_search(self, index: str, body: dict[str, Any]) -> Any:
        return self.client.search(index=index, body=body)

    def _delete_by_query(self, index: str, query: dict[str, Any]) -> Any:
        return self.client.delete_by_query(index=index, body={"query": query}, refresh=True)

    def _knn_search(
        self, index: str, vector: list[float], k: int, query: dict[str, Any] | None
    ) -> Any:
        spec: dict[str, Any] = {"vector": vector, "k": k}
        if query is not None:
            spec["filter"] = query
        return self.client.search(
            index=index, body={"size": k, "query": {"knn": {VECTOR_FIELD: spec}}}
        )
