"""Any vector database mem0 supports, through mem0's vector store factory (class name and
arguments as in Apache Flink Agents; the ``mem0`` extra).

Example::

    ResourceDescriptor(clazz=Mem0VectorStore, provider="qdrant",
                       provider_config={"path": "/var/lib/agent/qdrant", "on_disk": True},
                       embedding_model="embedder", collection="docs")
    ResourceDescriptor(clazz=Mem0VectorStore, provider="pgvector",
                       provider_config={"host": "db", "port": 5432, "dbname": "agents",
                                        "user": "agent"},  # password: PGPASSWORD
                       embedding_model="embedder")

``provider`` is a key of ``mem0.utils.factory.VectorStoreFactory`` (``qdrant``, ``chroma``,
``pgvector``, ``milvus``, ``redis``, ``elasticsearch``, ``opensearch``, ``faiss``, ...);
``provider_config`` its configuration without ``collection_name`` and
``embedding_model_dims``, which this store sets per collection (one mem0 store object per
collection, made on first use: mem0 creates the collection then). Values under secret-like
keys (``password``, ``api_key``...) are kept out of the plan like every resource argument.

What this store adds: our ids (mapped to UUIDs, which every mem0 provider takes; ours stay in
the payload as ``_doc_id``), the text under mem0's ``data`` key, metadata as the other payload
keys, the common filter language (equality conditions are given to the provider, whose
filter support varies; every result is checked against the whole filter here), and
collection management. ``score`` is the provider's own (cosine similarity for qdrant; a
distance, lower is closer, for some others, e.g. chroma). For Qdrant in local mode
(``path``) the store shares one client per directory with :class:`QdrantVectorStore`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from pydantic import Field, PrivateAttr

from flink_agents.api.vector_stores._filters import Condition, Junction, Node
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.errors import VectorStoreError
from flink_agents.integrations._extras import require
from flink_agents.integrations.vector_stores._common import (
    DatabaseVectorStore,
    check_query_dimension,
    check_vectors,
    in_order,
    kept,
    missing_collection,
    new_id,
    point_id,
    wanted_ids,
    where_of,
)

DEFAULT_COLLECTION = "flink_agents_mem0_collection"


def _flat_equalities(node: Node | None) -> dict[str, Any] | None:
    """The top-level AND of equality conditions, as mem0's ``{"field": value}`` filters."""
    if node is None:
        return None
    parts = node.parts if isinstance(node, Junction) and node.op == "$and" else (node,)
    found = {
        p.field: p.value
        for p in parts
        if isinstance(p, Condition) and p.op == "$eq" and not isinstance(p.value, float)
    }
    return found or None


def _items(result: Any) -> list[Any]:
    """mem0 providers answer ``list`` as a list, a list of lists or a (points, offset)."""
    if isinstance(result, tuple) and result and isinstance(result[0], list):
        return list(result[0])
    if isinstance(result, list) and result and isinstance(result[0], (list, tuple)):
        return list(result[0])
    return list(result or [])


def _names(result: Any) -> list[str]:
    """Collection names from a provider's ``list_cols`` answer."""
    collections = getattr(result, "collections", result)
    names: Iterable[Any] = collections or []
    return sorted(n if isinstance(n, str) else str(getattr(n, "name", n)) for n in names)


class Mem0VectorStore(DatabaseVectorStore):
    """A vector database through mem0's vector store factory.

    Attributes:
        provider: the mem0 vector store provider (``qdrant``, ``chroma``, ``pgvector``...).
        provider_config: its configuration (without ``collection_name`` and
            ``embedding_model_dims``).
        embedding_model: name of the embedding model setup for texts without vectors.
        collection: the default collection.
        dimension: vector size of collections created before a vector was seen.
        auto_create_collection: create missing collections on write and query.
    """

    provider: str
    provider_config: dict[str, Any] = Field(default_factory=dict)
    collection: str | None = DEFAULT_COLLECTION

    _stores: dict[str, Any] = PrivateAttr(default_factory=dict)
    _dims: dict[str, int] = PrivateAttr(default_factory=dict)
    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)

    def _default_collection(self) -> str:
        return DEFAULT_COLLECTION

    def _config(self, name: str, size: int) -> dict[str, Any]:
        config = {**self.provider_config, "collection_name": name, "embedding_model_dims": size}
        if self.provider == "qdrant" and config.get("path") and "client" not in config:
            from flink_agents.integrations.vector_stores.qdrant.qdrant_vector_store import (
                QdrantVectorStore,
            )

            shared = QdrantVectorStore(path=str(config.pop("path")))
            config["client"] = shared.client
        return config

    def _open(self, name: str, size: int) -> Any:
        """The mem0 store of collection ``name`` (made, and the collection created, once)."""
        with self._lock:
            store = self._stores.get(name)
            if store is None:
                require("mem0", extra="mem0", user=type(self).__name__)
                from mem0.utils.factory import VectorStoreFactory

                try:
                    store = VectorStoreFactory.create(self.provider, self._config(name, size))
                except ValueError as exc:
                    raise VectorStoreError(f"mem0 provider {self.provider!r}: {exc}") from exc
                except ImportError as exc:
                    raise VectorStoreError(
                        f"mem0 provider {self.provider!r} needs a package that is not "
                        f"installed: {exc}"
                    ) from exc
                self._stores[name] = store
                self._dims.setdefault(name, size)
            return store

    def _any(self) -> Any:
        """Some mem0 store of this provider (to list collections)."""
        with self._lock:
            if self._stores:
                return next(iter(self._stores.values()))
        return self._open(self._name(None), self._dimension_for_new({}))

    # -- collections ---------------------------------------------------------------------
    def list_collections(self) -> list[str]:
        """The collection names, sorted (opening the default collection first if no
        collection was used yet: mem0 creates a collection with its store object)."""
        return _names(self._any().list_cols())

    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        """Create collection ``name`` unless it exists; ``dimension=`` sets its vector size."""
        self._open(name, self._dimension_for_new(kwargs))

    def delete_collection(self, name: str) -> None:
        """Delete collection ``name`` and its documents."""
        if name not in self.list_collections():
            raise missing_collection(name, f"mem0 {self.provider}", self.list_collections())
        store = self._open(name, self._dims.get(name) or self._dimension_for_new({}))
        store.delete_col()
        with self._lock:
            self._stores.pop(name, None)
            self._dims.pop(name, None)

    def _existing(self, name: str) -> Any:
        with self._lock:
            store = self._stores.get(name)
        if store is not None:
            return store
        if name not in self.list_collections():
            raise missing_collection(name, f"mem0 {self.provider}", self.list_collections())
        return self._open(name, self._dimension_for_new({}))

    # -- writing ---------------------------------------------------------------------------
    @staticmethod
    def _payload(doc: Document) -> dict[str, Any]:
        # mem0 keeps the text under "data"; a metadata "data" may only repeat it (mem0's own
        # payloads do, when long-term memory runs on this store)
        clash = [
            k
            for k in doc.metadata
            if k == "_doc_id" or (k == "data" and doc.metadata[k] != doc.content)
        ]
        if clash:
            raise VectorStoreError(
                f"document {doc.id!r}: metadata keys {clash} are reserved by Mem0VectorStore"
            )
        return {**doc.metadata, "data": doc.content, "_doc_id": str(doc.id)}

    def _add_embedding(
        self, *, documents: list[Document], collection_name: str | None = None, **kwargs: Any
    ) -> list[str]:
        name = self._name(collection_name)
        if not documents:
            return []
        auto = kwargs.get("auto_create_collection", self.auto_create_collection)
        if not auto and name not in self._stores and name not in self.list_collections():
            raise missing_collection(name, f"mem0 {self.provider}", self.list_collections())
        size = check_vectors(documents, self._dims.get(name), name)
        store = self._open(name, size)
        docs = [d if d.id else d.model_copy(update={"id": new_id()}) for d in documents]
        ids = [str(d.id) for d in docs]
        for doc_id in ids:  # an existing id is replaced
            try:
                store.delete(point_id(doc_id))
            except Exception:  # noqa: BLE001 - providers differ on deleting a missing id
                pass
        store.insert(
            vectors=[list(d.embedding or []) for d in docs],
            payloads=[self._payload(d) for d in docs],
            ids=[point_id(i) for i in ids],
        )
        return ids

    def _update_embedding(
        self, *, documents: list[Document], collection_name: str | None = None, **kwargs: Any
    ) -> None:
        name = self._name(collection_name)
        store = self._existing(name)
        missing = [d.id for d in documents if store.get(point_id(str(d.id))) is None]
        if missing:
            raise VectorStoreError(f"cannot update {missing}: not in collection {name!r}")
        with_vectors = [d for d in documents if d.embedding is not None]
        if with_vectors:
            check_vectors(with_vectors, self._dims.get(name), name)
        for doc in documents:
            store.update(
                point_id(str(doc.id)),
                vector=list(doc.embedding) if doc.embedding is not None else None,
                payload=self._payload(doc),
            )

    # -- reading ---------------------------------------------------------------------------
    @staticmethod
    def _document(item: Any, score: float | None = None) -> Document:
        payload = dict(getattr(item, "payload", None) or {})
        doc_id = payload.pop("_doc_id", None) or getattr(item, "id", None)
        content = payload.pop("data", "")
        return Document(id=str(doc_id), content=str(content), metadata=payload, score=score)

    def get(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = 100,
        **kwargs: Any,
    ) -> list[Document]:
        """Stored documents by id and/or filter (see ``BaseVectorStore.get``)."""
        where = where_of(filters, kwargs)
        store = self._existing(self._name(collection_name))
        wanted = wanted_ids(ids)
        if wanted is not None:
            found = [store.get(point_id(i)) for i in wanted]
            docs = [self._document(f) for f in found if f is not None]
            return kept(in_order(docs, wanted), where)
        # mem0's list takes a limit only: ask for all when anything is filtered here.
        ask = None if where is not None or limit is None else limit
        items = _items(store.list(filters=_flat_equalities(where), limit=ask or 10**6))
        docs = kept([self._document(i) for i in items], where)
        return docs if limit is None else docs[:limit]

    def delete(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remove documents by id and/or filter; with neither, all of the collection."""
        name = self._name(collection_name)
        store = self._existing(name)
        victims = self.get(ids=ids, collection_name=name, filters=filters, limit=None, **kwargs)
        for doc in victims:
            store.delete(point_id(str(doc.id)))

    def _query_embedding(
        self,
        embedding: list[float],
        limit: int = 10,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        where = where_of(filters, kwargs)
        name = self._name(collection_name)
        if name not in self._stores:
            auto = kwargs.get("auto_create_collection", self.auto_create_collection)
            if not auto and name not in self.list_collections():
                raise missing_collection(name, f"mem0 {self.provider}", self.list_collections())
            # opening creates a missing collection (mem0) and keeps an existing one
            self._open(name, len(embedding))
        store = self._stores[name]
        check_query_dimension(embedding, self._dims.get(name), name)
        if limit <= 0:
            return []
        exact = where is None or (
            _flat_equalities(where) is not None and not isinstance(where, Junction)
        )
        fetch = limit if exact else max(limit * 4, 50)
        hits = store.search(
            query="", vectors=list(embedding), limit=fetch, filters=_flat_equalities(where)
        )
        docs = [self._document(h, float(h.score) if h.score is not None else None) for h in hits]
        return kept(docs, where)[:limit]

    def close(self) -> None:
        """Forget the mem0 store objects."""
        with self._lock:
            self._stores.clear()
