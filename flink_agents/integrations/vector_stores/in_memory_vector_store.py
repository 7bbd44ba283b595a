"""A vector store in process memory: numpy cosine similarity, exact metadata filters.

Resources are created once per task slot, so each slot has its own store. To give every
slot the same documents, pass them to the constructor: ``documents=[{"content": ...,
"metadata": {...}}, ...]`` (JSON-like, so they travel in the plan). They are embedded with
the store's ``embedding_model`` on the first query, not when the plan is compiled. Documents
added at run time (``add_documents``) stay in that slot's store.

Example::

    agent.add_resource("docs", ResourceDescriptor(
        clazz=InMemoryVectorStore, embedding_model="embedder",
        documents=[{"content": "Flink checkpoints state.", "metadata": {"topic": "flink"}}]))
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field, PrivateAttr

from flink_agents.api.vector_stores.vector_store import (
    BaseVectorStore,
    Document,
    VectorStoreQuery,
    VectorStoreQueryResult,
)


class InMemoryVectorStore(BaseVectorStore):
    """Documents and their unit vectors in memory; queries rank by cosine similarity.

    Attributes:
        embedding_model: name of the embedding model setup for texts without vectors.
        documents: documents to load on first use: dicts with ``content`` and optional
            ``metadata``, ``id`` and ``embedding``.
    """

    documents: list[dict[str, Any]] = Field(default_factory=list)

    _docs: dict[str, Document] = PrivateAttr(default_factory=dict)
    _ids: list[str] = PrivateAttr(default_factory=list)
    _matrix: Any = PrivateAttr(default=None)
    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
    _loaded: bool = PrivateAttr(default=False)

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            self._loaded = True  # before add_documents: it calls back into the store
            try:
                if self.documents:
                    self.add_documents([Document.model_validate(d) for d in self.documents])
            except BaseException:
                self._loaded = False
                raise

    def add_embedded(self, documents: list[Document]) -> list[str]:
        """Store documents that have embeddings (an existing id is replaced)."""
        ids = []
        with self._lock:
            for doc in documents:
                if doc.embedding is None:
                    raise ValueError(f"document {doc.id or doc.content[:40]!r} has no embedding")
                stored = doc.model_copy(update={"id": doc.id or uuid.uuid4().hex, "score": None})
                dims = self._dimensions()
                if dims is not None and len(stored.embedding or []) != dims:
                    raise ValueError(
                        f"embedding of document {stored.id!r} has {len(stored.embedding or [])} "
                        f"dimensions, the store holds {dims}-dimensional vectors"
                    )
                if stored.id not in self._docs:
                    self._ids.append(str(stored.id))
                self._docs[str(stored.id)] = stored
                ids.append(str(stored.id))
            self._matrix = None
        return ids

    def _dimensions(self) -> int | None:
        for doc in self._docs.values():
            return len(doc.embedding or [])
        return None

    def _unit_matrix(self) -> Any:
        if self._matrix is None:
            rows = np.array([self._docs[i].embedding for i in self._ids], dtype=np.float64)
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            self._matrix = rows / np.where(norms == 0, 1.0, norms)
        return self._matrix

    def query_embedding(
        self, embedding: Sequence[float], *, limit: int = 10, filters: dict[str, Any] | None = None
    ) -> list[Document]:
        """The stored documents closest to ``embedding`` (cosine), best first, with
        ``score`` set; ``filters`` keep documents whose metadata has those exact values."""
        self._ensure_loaded()
        with self._lock:
            if not self._ids or limit <= 0:
                return []
            matrix = self._unit_matrix()
            ids = list(self._ids)
        query = np.asarray(embedding, dtype=np.float64)
        if query.shape != (matrix.shape[1],):
            raise ValueError(
                f"query embedding has {query.size} dimensions, the store holds "
                f"{matrix.shape[1]}-dimensional vectors (same embedding model for both?)"
            )
        norm = np.linalg.norm(query)
        scores = matrix @ (query / norm if norm else query)
        found = []
        for index in np.argsort(-scores, kind="stable"):
            doc = self._docs[ids[index]]
            if filters and any(doc.metadata.get(k) != v for k, v in filters.items()):
                continue
            found.append(doc.model_copy(update={"score": float(scores[index])}))
            if len(found) == limit:
                break
        return found

    def query(self, query: VectorStoreQuery) -> VectorStoreQueryResult:
        """The documents most similar to the query text (pre-loaded documents are embedded
        on the first query)."""
        self._ensure_loaded()
        return super().query(query)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove documents by id (unknown ids are ignored)."""
        self._ensure_loaded()
        with self._lock:
            for doc_id in ids:
                if self._docs.pop(doc_id, None) is not None:
                    self._ids.remove(doc_id)
            self._matrix = None

    def get(self, doc_id: str) -> Document | None:
        """The stored document with this id."""
        self._ensure_loaded()
        return self._docs.get(doc_id)

    def __len__(self) -> int:
        self._ensure_loaded()
        return len(self._ids)
