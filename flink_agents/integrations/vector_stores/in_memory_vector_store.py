"""A vector store in process memory: numpy cosine similarity, the common metadata filters.

It has the interface of :class:`ChromaVectorStore` (collections, add / update / get / delete,
queries with filters), so an agent can be developed against it and moved to Chroma by
changing the descriptor. Nothing is persisted.

Resources are created once per task slot, so each slot has its own store. To give every
slot the same documents, pass them to the constructor: ``documents=[{"content": ...,
"metadata": {...}}, ...]`` (JSON-like, so they travel in the plan). They go into the default
collection and are embedded with the store's ``embedding_model`` on first use, not when the
plan is compiled. Documents added at run time stay in that slot's store.

Example::

    agent.add_resource("docs", ResourceDescriptor(
        clazz=InMemoryVectorStore, embedding_model="embedder",
        documents=[{"content": "Flink checkpoints state.", "metadata": {"topic": "flink"}}]))
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import numpy as np
from pydantic import Field, PrivateAttr

from flink_agents.api.vector_stores._filters import matches, parse_filter
from flink_agents.api.vector_stores.vector_store import (
    CollectionManageableVectorStore,
    Document,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from flink_agents.errors import VectorStoreError

#: Call arguments this store understands besides its parameters.
_KNOWN_KWARGS = frozenset({"where", "offset", "auto_create_collection", "metadata"})


class _Collection:
    """Documents of one collection, in insertion order, and their unit vectors."""

    def __init__(self, metadata: dict[str, Any] | None = None) -> None:
        self.metadata = dict(metadata or {})
        self.docs: dict[str, Document] = {}
        self._matrix: Any = None
        self._ids: list[str] = []

    def dimensions(self) -> int | None:
        for doc in self.docs.values():
            return len(doc.embedding or [])
        return None

    def changed(self) -> None:
        self._matrix = None

    def unit_matrix(self) -> tuple[list[str], Any]:
        if self._matrix is None:
            self._ids = list(self.docs)
            rows = np.array([self.docs[i].embedding for i in self._ids], dtype=np.float64)
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            self._matrix = rows / np.where(norms == 0, 1.0, norms)
        return self._ids, self._matrix


class InMemoryVectorStore(CollectionManageableVectorStore):
    """Documents and their unit vectors in memory; queries rank by cosine similarity
    (``score`` is the cosine similarity, higher is closer).

    Attributes:
        embedding_model: name of the embedding model setup for texts without vectors.
        collection: the default collection.
        auto_create_collection: whether adding to or querying a collection that does not
            exist creates it (else it is a :class:`VectorStoreError`).
        documents: documents to load into the default collection on first use: dicts with
            ``content`` and optional ``metadata``, ``id`` and ``embedding``.
    """

    collection: str | None = "default"
    auto_create_collection: bool = True
    documents: list[dict[str, Any]] = Field(default_factory=list)

    _collections: dict[str, _Collection] = PrivateAttr(default_factory=dict)
    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
    _loaded: bool = PrivateAttr(default=False)

    # -- helpers -------------------------------------------------------------------------
    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            self._loaded = True  # before add: it calls back into the store
            try:
                self._collections.setdefault(self._default_name(), _Collection())
                if self.documents:
                    self.add([Document.model_validate(d) for d in self.documents])
            except BaseException:
                self._loaded = False
                raise

    def _default_name(self) -> str:
        return self.collection or "default"

    @staticmethod
    def _check_kwargs(kwargs: dict[str, Any]) -> None:
        unknown = sorted(set(kwargs) - _KNOWN_KWARGS)
        if unknown:
            raise VectorStoreError(
                f"InMemoryVectorStore does not understand {unknown}; it takes "
                f"{sorted(_KNOWN_KWARGS)}"
            )

    def _resolve(
        self, collection_name: str | None, *, create: bool, kwargs: dict[str, Any]
    ) -> _Collection:
        self._check_kwargs(kwargs)
        self._ensure_loaded()
        name = collection_name or self._default_name()
        found = self._collections.get(name)
        if found is not None:
            return found
        if create and kwargs.get("auto_create_collection", self.auto_create_collection):
            found = self._collections[name] = _Collection(kwargs.get("metadata"))
            return found
        raise VectorStoreError(
            f"collection {name!r} does not exist (collections: {self.list_collections()}); "
            "create it with create_collection_if_not_exists"
        )

    @staticmethod
    def _check_dimensions(coll: _Collection, name: str, vector: Any, what: str) -> None:
        dims = coll.dimensions()
        if dims is not None and len(vector) != dims:
            raise VectorStoreError(
                f"{what} has {len(vector)} dimensions, collection {name!r} holds "
                f"{dims}-dimensional vectors (the same embedding model for both?)"
            )

    # -- collections ---------------------------------------------------------------------
    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        """Create collection ``name`` (``metadata=`` is kept with it) unless it exists."""
        self._ensure_loaded()
        with self._lock:
            self._collections.setdefault(name, _Collection(kwargs.get("metadata")))

    def delete_collection(self, name: str) -> None:
        """Delete collection ``name`` and its documents."""
        self._ensure_loaded()
        with self._lock:
            if self._collections.pop(name, None) is None:
                raise VectorStoreError(
                    f"collection {name!r} does not exist (collections: {self.list_collections()})"
                )

    def list_collections(self) -> list[str]:
        """The collection names, sorted."""
        self._ensure_loaded()
        with self._lock:
            return sorted(self._collections)

    # -- documents -------------------------------------------------------------------------
    def query(self, query: VectorStoreQuery) -> VectorStoreQueryResult:
        """The documents most similar to the query text (pre-loaded documents are embedded
        first, on the first use)."""
        self._ensure_loaded()
        return super().query(query)

    def _add_embedding(
        self,
        *,
        documents: list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> list[str]:
        with self._lock:
            coll = self._resolve(collection_name, create=True, kwargs=kwargs)
            name = collection_name or self._default_name()
            ids = []
            for doc in documents:
                if doc.embedding is None:
                    raise VectorStoreError(f"document {doc.id or doc.content[:40]!r} has no vector")
                stored = doc.model_copy(
                    update={"id": doc.id or uuid.uuid4().hex, "score": None}, deep=True
                )
                self._check_dimensions(coll, name, stored.embedding, f"document {stored.id!r}")
                coll.docs.pop(str(stored.id), None)  # a replaced document moves to the end
                coll.docs[str(stored.id)] = stored
                ids.append(str(stored.id))
            coll.changed()
        return ids

    def _update_embedding(
        self,
        *,
        documents: list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            coll = self._resolve(collection_name, create=False, kwargs=kwargs)
            missing = [d.id for d in documents if d.id not in coll.docs]
            if missing:
                raise VectorStoreError(
                    f"cannot update {missing}: not in collection "
                    f"{collection_name or self._default_name()!r}"
                )
            for doc in documents:
                old = coll.docs[str(doc.id)]
                vector = doc.embedding if doc.embedding is not None else old.embedding
                self._check_dimensions(
                    coll, collection_name or self._default_name(), vector, f"document {doc.id!r}"
                )
                coll.docs[str(doc.id)] = doc.model_copy(
                    update={"embedding": vector, "score": None}, deep=True
                )
            coll.changed()

    def get(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = 100,
        **kwargs: Any,
    ) -> list[Document]:
        """Stored documents by id and/or filter (see :meth:`BaseVectorStore.get`)."""
        where = parse_filter(filters, kwargs.get("where"))
        with self._lock:
            coll = self._resolve(collection_name, create=False, kwargs=kwargs)
            if ids is not None:
                wanted = [ids] if isinstance(ids, str) else list(ids)
                found = [coll.docs[i] for i in wanted if i in coll.docs]
                return [d.model_copy(deep=True) for d in found if matches(where, d.metadata)]
            selected = [d for d in coll.docs.values() if matches(where, d.metadata)]
        offset = int(kwargs.get("offset") or 0)
        end = None if limit is None else offset + limit
        return [d.model_copy(deep=True) for d in selected[offset:end]]

    def delete(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remove documents by id and/or filter; with neither, all of the collection."""
        where = parse_filter(filters, kwargs.get("where"))
        with self._lock:
            coll = self._resolve(collection_name, create=False, kwargs=kwargs)
            wanted = None if ids is None else set([ids] if isinstance(ids, str) else ids)
            for doc_id in list(coll.docs):
                if wanted is not None and doc_id not in wanted:
                    continue
                if matches(where, coll.docs[doc_id].metadata):
                    del coll.docs[doc_id]
            coll.changed()

    def _query_embedding(
        self,
        embedding: list[float],
        limit: int = 10,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The stored documents closest to ``embedding`` (cosine), best first, with
        ``score`` set, among those passing the filters."""
        where = parse_filter(filters, kwargs.get("where"))
        with self._lock:
            coll = self._resolve(collection_name, create=True, kwargs=kwargs)
            if not coll.docs or limit <= 0:
                return []
            self._check_dimensions(
                coll, collection_name or self._default_name(), embedding, "the query embedding"
            )
            ids, matrix = coll.unit_matrix()
            docs = dict(coll.docs)
        query = np.asarray(embedding, dtype=np.float64)
        norm = np.linalg.norm(query)
        scores = matrix @ (query / norm if norm else query)
        found = []
        for index in np.argsort(-scores, kind="stable"):
            doc = docs[ids[index]]
            if not matches(where, doc.metadata):
                continue
            found.append(doc.model_copy(update={"score": float(scores[index])}, deep=True))
            if len(found) == limit:
                break
        return found
