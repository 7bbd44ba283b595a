"""Embedding model extension points (connection = client, setup = per-use settings)."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from flink_agents.api.resource import Resource, ResourceType


class BaseEmbeddingModelConnection(Resource, ABC):
    """The client of an embedding service."""

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.EMBEDDING_MODEL_CONNECTION

    @abstractmethod
    def embed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        """One vector per text."""

    async def aembed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        """Asynchronous :meth:`embed`; a worker thread by default."""
        return await asyncio.to_thread(self.embed, texts, **kwargs)


class BaseEmbeddingModelSetup(Resource, ABC):
    """How an agent uses an embedding connection.

    Attributes:
        connection: name of the embedding model connection resource.
        model: the model name.
    """

    connection: str
    model: str | None = None

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.EMBEDDING_MODEL

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """Options passed to the connection on every call."""
        return {"model": self.model} if self.model else {}

    def get_connection(self) -> BaseEmbeddingModelConnection:
        """The connection resource this setup uses."""
        conn = self._lookup(self.connection, ResourceType.EMBEDDING_MODEL_CONNECTION)
        return conn

    def embed(self, text: str | Sequence[str], **kwargs: Any) -> Any:
        """A vector for one text, or a list of vectors for a list of texts."""
        single = isinstance(text, str)
        texts = [text] if isinstance(text, str) else list(text)
        vectors = self.get_connection().embed(texts, **{**self.model_kwargs, **kwargs})
        return vectors[0] if single else vectors

    async def aembed(self, text: str | Sequence[str], **kwargs: Any) -> Any:
        """Asynchronous :meth:`embed`."""
        single = isinstance(text, str)
        texts = [text] if isinstance(text, str) else list(text)
        vectors = await self.get_connection().aembed(texts, **{**self.model_kwargs, **kwargs})
        return vectors[0] if single else vectors
