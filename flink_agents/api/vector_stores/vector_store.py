"""Vector store extension points (names and signatures as in Apache Flink Agents).

A vector store keeps :class:`Document` objects (text, metadata, embedding) in named
*collections* and finds those closest to a query. Texts are embedded with the store's
``embedding_model`` (the name of an embedding model setup resource) unless the documents or
the caller bring their own vectors.

Metadata filters (``filters=`` of :meth:`BaseVectorStore.get`, :meth:`~BaseVectorStore.delete`,
:class:`VectorStoreQuery`) use one language in every store: Apache Flink Agents' equality
shorthand ``{"field": value, ...}`` (keys AND-ed), extended with Chroma's operators::

    {"lang": "en"}                                   equality
    {"year": {"$gte": 2020}}                         $eq $ne $gt $gte $lt $lte
    {"tag": {"$in": ["a", "b"]}}                     $in $nin (non-empty list, one type)
    {"$or": [{"lang": "en"}, {"year": {"$lt": 2000}}]}   $and $or

A field missing from a document matches only ``$ne`` and ``$nin``; order comparisons need
numbers; ``True`` is not ``1``. A malformed filter raises
:class:`~flink_agents.errors.VectorStoreError`. ``where=`` (Chroma's own name, also through
``VectorStoreQuery.extra_args``) takes the same language and is AND-ed with ``filters``.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from flink_agents.api.resource import Resource, ResourceType


class VectorStoreQueryMode(str, Enum):
    """How a query searches. SEMANTIC: by embedding similarity."""

    SEMANTIC = "semantic"


class VectorStoreQuery(BaseModel):
    """A similarity query.

    Attributes:
        mode: how to search (only SEMANTIC).
        query_text: the text to search for (embedded with the store's embedding model).
        limit: how many documents to return at most.
        collection_name: the collection to search (default: the store's ``collection``).
        filters: metadata filter (see the module docstring).
        extra_args: store-specific arguments (e.g. ``{"where": {...}}``).
    """

    mode: VectorStoreQueryMode = VectorStoreQueryMode.SEMANTIC
    query_text: str
    limit: int = 10
    collection_name: str | None = None
    filters: dict[str, Any] | None = None
    extra_args: dict[str, Any] = Field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.mode.value} query: {self.query_text!r} (limit={self.limit})"


class Document(BaseModel):
    """A piece of text with metadata, as stored in and returned by a vector store.

    Attributes:
        content: the text.
        metadata: anything else about it (values: str, int, float, bool, or lists of them).
        id: its id in the store (made up by the store when not given).
        embedding: its vector, if known.
        score: on query results, the similarity to the query: higher is closer (cosine
            similarity for cosine spaces); None on documents from ``get``.
    """

    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    embedding: list[float] | None = None
    score: float | None = None

    def __str__(self) -> str:
        preview = self.content[:50] + "..." if len(self.content) > 50 else self.content
        return f"Document: {preview}"


class VectorStoreQueryResult(BaseModel):
    """Documents found, best first."""

    documents: list[Document]

    def __str__(self) -> str:
        return f"QueryResult: {len(self.documents)} documents"


_T = TypeVar("_T")


def _as_list(value: _T | list[_T] | None) -> list[_T] | None:
    if value is None:
        return None
    return value if isinstance(value, list) else [value]


class BaseVectorStore(Resource, ABC):
    """A store of documents searchable by similarity.

    Implement :meth:`get`, :meth:`delete`, :meth:`_add_embedding`, :meth:`_update_embedding`
    and :meth:`_query_embedding` (they get documents that already have vectors); the public
    :meth:`add`, :meth:`update` and :meth:`query` embed texts first.

    Attributes:
        embedding_model: name of the embedding model setup used for texts without vectors.
        collection: the collection used when a call names none.
    """

    embedding_model: str | None = None
    collection: str | None = None

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.VECTOR_STORE

    @property
    def store_kwargs(self) -> dict[str, Any]:
        """Store-specific arguments passed to every ``_add_embedding`` / ``_query_embedding``
        / ``_update_embedding`` call (call arguments win)."""
        return {}

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.embedding_model is None:
            raise TypeError(
                f"{type(self).__name__} has no embedding_model: set embedding_model= to an "
                "embedding model setup, or give the documents and queries their vectors"
            )
        model = self._lookup(self.embedding_model, ResourceType.EMBEDDING_MODEL)
        return [list(v) for v in model.embed(list(texts))]

    def _ensure_embeddings(self, documents: list[Document]) -> None:
        """Embed (in one call) the documents that have no vector yet."""
        missing = [d for d in documents if d.embedding is None]
        if missing:
            for doc, vector in zip(missing, self._embed([d.content for d in missing]), strict=True):
                doc.embedding = vector

    def _merged(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {**self.store_kwargs, **kwargs}

    def add(
        self,
        documents: Document | list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Store documents, embedding those without a vector. A document whose id is already
        in the collection replaces it (content, metadata and vector).

        Args:
            documents: one document or a list.
            collection_name: the collection (default: the store's ``collection``).
            **kwargs: store-specific arguments.

        Returns:
            The ids of the documents, in order (made up for documents without one).
        """
        docs = _as_list(documents) or []
        self._ensure_embeddings(docs)
        return self._add_embedding(
            documents=docs, collection_name=collection_name, **self._merged(kwargs)
        )

    def update(
        self,
        documents: Document | list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Replace stored documents (matched by ``Document.id``), re-embedding those
        without a vector.

        Raises:
            ValueError: no documents, or a document without an id.
            VectorStoreError: an id is not in the collection.
        """
        docs = _as_list(documents) or []
        if not docs:
            raise ValueError("update needs at least one document")
        if any(d.id is None for d in docs):
            raise ValueError("every document passed to update must have its id set")
        self._ensure_embeddings(docs)
        self._update_embedding(
            documents=docs, collection_name=collection_name, **self._merged(kwargs)
        )

    def query(self, query: VectorStoreQuery) -> VectorStoreQueryResult:
        """The documents most similar to the query text, best first."""
        vector = self._embed([query.query_text])[0]
        documents = self._query_embedding(
            vector,
            limit=query.limit,
            collection_name=query.collection_name,
            filters=query.filters,
            **self._merged(query.extra_args),
        )
        return VectorStoreQueryResult(documents=documents)

    async def aquery(self, query: VectorStoreQuery) -> VectorStoreQueryResult:
        """Asynchronous :meth:`query` (a worker thread by default)."""
        return await asyncio.to_thread(self.query, query)

    @abstractmethod
    def get(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = 100,
        **kwargs: Any,
    ) -> list[Document]:
        """Stored documents: those with ``ids`` (in that order; unknown ids are skipped), or
        up to ``limit`` (None: all) matching ``filters``.

        Args:
            ids: one id or a list; None for any.
            collection_name: the collection (default: the store's ``collection``).
            filters: metadata filter (see the module docstring).
            limit: at most this many documents when ``ids`` is None; None for all.
            **kwargs: store-specific arguments (``where``, ``offset``, ...).
        """

    @abstractmethod
    def delete(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remove documents by id and/or filter; with neither, every document of the
        collection. Unknown ids are ignored."""

    @abstractmethod
    def _query_embedding(
        self,
        embedding: list[float],
        limit: int = 10,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """The documents closest to ``embedding``, best first, with ``score`` set."""

    @abstractmethod
    def _add_embedding(
        self,
        *,
        documents: list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Store documents that all have vectors (an existing id is replaced); their ids."""

    @abstractmethod
    def _update_embedding(
        self,
        *,
        documents: list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Replace the stored documents with these ids; a document without a vector keeps
        its stored one. An unknown id is a :class:`~flink_agents.errors.VectorStoreError`."""


class CollectionManageableVectorStore(BaseVectorStore, ABC):
    """A vector store whose collections can be created, listed and deleted."""

    @abstractmethod
    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        """Create collection ``name`` unless it exists (then nothing changes).

        Args:
            name: the collection name.
            **kwargs: store-specific settings applied only at creation (e.g. Chroma's
                ``metadata``).
        """

    @abstractmethod
    def delete_collection(self, name: str) -> None:
        """Delete collection ``name`` and its documents.

        Raises:
            VectorStoreError: there is no such collection.
        """

    def list_collections(self) -> list[str]:
        """The names of the collections, sorted."""
        raise NotImplementedError(f"{type(self).__name__} cannot list its collections")
