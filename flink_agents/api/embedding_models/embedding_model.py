"""Embedding model extension points (connection = client, setup = per-use settings).

A connection may report the tokens a call used by overriding :meth:`embed_with_usage`
(returning an :class:`EmbeddingResult` with :class:`EmbeddingTokenUsage`, as in Apache Flink
Agents); the setup's ``embed`` books them to the action that made the call (the metrics
``action.<action>.model.<embedding setup>.promptTokens`` / ``totalTokens``).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from flink_agents.api._usage import report_usage
from flink_agents.api.resource import Resource, ResourceType

_V = TypeVar("_V")


@dataclass(frozen=True)
class EmbeddingTokenUsage:
    """Tokens an embedding call used, as the provider reported them."""

    prompt_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class EmbeddingResult(Generic[_V]):
    """Embeddings with the provider's token usage (None: it reported none)."""

    embeddings: _V
    token_usage: EmbeddingTokenUsage | None = None


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

    def embed_with_usage(
        self, texts: Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[list[list[float]]]:
        """:meth:`embed` with the tokens it used; override to report them (by default
        no usage is known)."""
        return EmbeddingResult(self.embed(texts, **kwargs))

    async def aembed_with_usage(
        self, texts: Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[list[list[float]]]:
        """Asynchronous :meth:`embed_with_usage` (:meth:`aembed`'s vectors unless only
        the synchronous one reports usage)."""
        cls = type(self)
        if (
            cls.embed_with_usage is not BaseEmbeddingModelConnection.embed_with_usage
            and cls.aembed is BaseEmbeddingModelConnection.aembed
        ):
            return await asyncio.to_thread(self.embed_with_usage, texts, **kwargs)
        return EmbeddingResult(await self.aembed(texts, **kwargs))


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
        return self.embed_with_usage(text, **kwargs).embeddings

    async def aembed(self, text: str | Sequence[str], **kwargs: Any) -> Any:
        """Asynchronous :meth:`embed`."""
        return (await self.aembed_with_usage(text, **kwargs)).embeddings

    def embed_with_usage(self, text: str | Sequence[str], **kwargs: Any) -> EmbeddingResult[Any]:
        """:meth:`embed` with the tokens the call used (booked to the running action)."""
        single = isinstance(text, str)
        texts = [text] if isinstance(text, str) else list(text)
        result = self.get_connection().embed_with_usage(texts, **{**self.model_kwargs, **kwargs})
        return self._settled(result, single)

    async def aembed_with_usage(
        self, text: str | Sequence[str], **kwargs: Any
    ) -> EmbeddingResult[Any]:
        """Asynchronous :meth:`embed_with_usage`."""
        single = isinstance(text, str)
        texts = [text] if isinstance(text, str) else list(text)
        result = await self.get_connection().aembed_with_usage(
            texts, **{**self.model_kwargs, **kwargs}
        )
        return self._settled(result, single)

    def _settled(self, result: EmbeddingResult[Any], single: bool) -> EmbeddingResult[Any]:
        usage = result.token_usage
        if usage is not None:
            report_usage(self, usage.prompt_tokens, usage.total_tokens)
        if single:
            return EmbeddingResult(result.embeddings[0], usage)
        return result
