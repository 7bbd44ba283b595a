"""Vector store extension points."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from flink_agents.api.resource import Resource, ResourceType


class Document(BaseModel):
    """A piece of text with metadata, as stored in and returned by a vector store.

    Attributes:
        content: the text.
        metadata: anything else about it.
        id: its id in the store.
        embedding: its vector, if known.
        score: similarity to the query, on query results.
    """

    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    embedding: list[float] | None = None
    score: float | None = None


class VectorStoreQuery(BaseModel):
    """A similarity query.

    Attributes:
        query_text: the text to search for.
        limit: how many documents to return at most.
        filters: exact-match metadata filters.
    """

    query_text: str
    limit: int = 10
    filters: dict[str, Any] | None = None


class VectorStoreQueryResult(BaseModel):
    """Documents found, best first."""

    documents: list[Document]


class BaseVectorStore(Resource, ABC):
    """A store of documents searchable by similarity.

    Attributes:
        embedding_model: name of the embedding model setup used for texts without vectors.
    """

    embedding_model: str | None = None

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.VECTOR_STORE

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.embedding_model is None:
            raise ValueError(
                f"{type(self).__name__} has no embedding_model; set one or pass embeddings"
            )
        model = self._lookup(self.embedding_model, ResourceType.EMBEDDING_MODEL)
        return model.embed(list(texts))  # type: ignore[no-any-return]

    def add_documents(self, documents: Sequence[Document]) -> list[str]:
        """Store documents, embedding those without a vector. Returns their ids."""
        missing = [d for d in documents if d.embedding is None]
        if missing:
            for doc, vec in zip(missing, self._embed([d.content for d in missing]), strict=True):
                doc.embedding = list(vec)
        return self.add_embedded(list(documents))

    def query(self, query: VectorStoreQuery) -> VectorStoreQueryResult:
        """The documents most similar to the query text."""
        vector = self._embed([query.query_text])[0]
        docs = self.query_embedding(vector, limit=query.limit, filters=query.filters)
        return VectorStoreQueryResult(documents=docs)

    async def aquery(self, query: VectorStoreQuery) -> VectorStoreQueryResult:
        """Asynchronous :meth:`query` (a worker thread by default)."""
        return await asyncio.to_thread(self.query, query)

    @abstractmethod
    def add_embedded(self, documents: list[Document]) -> list[str]:
        """Store documents that all have embeddings; return their ids."""

    @abstractmethod
    def query_embedding(
        self, embedding: Sequence[float], *, limit: int = 10, filters: dict[str, Any] | None = None
    ) -> list[Document]:
        """The documents closest to ``embedding``, best first, with ``score`` set."""
