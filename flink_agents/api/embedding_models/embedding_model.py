"""Embedding model extension points (connection = client, setup = per-use settings).

Token usage (names as in Apache Flink Agents): a connection that knows what a call cost
implements :meth:`BaseEmbeddingModelConnection.embed_with_usage`, returning an
:class:`EmbeddingResult` with :class:`EmbeddingTokenUsage`. The setup's ``embed`` /
``aembed`` go through it and count the tokens in the agent's metrics, in the group
``embedding_model`` = setup resource name: ``numOfEmbeddingCalls``,
``embeddingPromptTokens``, ``embeddingTotalTokens``; and, request-scoped (as upstream main's
token metrics), for the action that made the call: ``action.<action>.model.<setup>``
``promptTokens`` / ``totalTokens`` (the runtime's usage scope, ``api/_usage.py``).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flink_agents.api._usage import report_usage
from flink_agents.api.resource import Resource, ResourceType


@dataclass(frozen=True)
class EmbeddingTokenUsage:
    """Tokens an embedding call cost, as the provider reported them."""

    prompt_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class EmbeddingResult:
    """Vectors (one per text; a setup's ``embed_with_usage`` of one text: its vector, as
    upstream) and, when the provider reports it, the call's token usage."""

    embeddings: Any
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

    def embed_with_usage(self, texts: Sequence[str], **kwargs: Any) -> EmbeddingResult:
        """:meth:`embed` with the token usage, when the connection knows it (override)."""
        return EmbeddingResult(embeddings=self.embed(texts, **kwargs))

    async def aembed_with_usage(self, texts: Sequence[str], **kwargs: Any) -> EmbeddingResult:
        """Asynchronous :meth:`embed_with_usage`; wraps :meth:`aembed` unless overridden."""
        if type(self).embed_with_usage is not BaseEmbeddingModelConnection.embed_with_usage:
            return await asyncio.to_thread(self.embed_with_usage, texts, **kwargs)
        return EmbeddingResult(embeddings=await self.aembed(texts, **kwargs))


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
        result = self.get_connection().embed_with_usage(texts, **{**self.model_kwargs, **kwargs})
        self._count(result)
        return result.embeddings[0] if single else result.embeddings

    async def aembed(self, text: str | Sequence[str], **kwargs: Any) -> Any:
        """Asynchronous :meth:`embed`."""
        single = isinstance(text, str)
        texts = [text] if isinstance(text, str) else list(text)
        result = await self.get_connection().aembed_with_usage(
            texts, **{**self.model_kwargs, **kwargs}
        )
        self._count(result)
        return result.embeddings[0] if single else result.embeddings

    def embed_with_usage(self, text: str | Sequence[str], **kwargs: Any) -> EmbeddingResult:
        """The vector of one text, or the vectors of a list, with the call's token usage."""
        single = isinstance(text, str)
        texts = [text] if isinstance(text, str) else list(text)
        result = self.get_connection().embed_with_usage(texts, **{**self.model_kwargs, **kwargs})
        self._count(result)
        if single:
            return EmbeddingResult(result.embeddings[0], result.token_usage)
        return result

    def _count(self, result: EmbeddingResult) -> None:
        """Count the call and its tokens in the agent's metrics (when run by an agent), and
        book the tokens to the action making the call (its usage scope, if one is open)."""
        usage = result.token_usage
        if usage is not None:
            report_usage(self, usage.prompt_tokens, usage.total_tokens)
        owner: Any = getattr(self.get_resource, "__self__", None)
        metrics = getattr(owner, "metrics", None)
        if metrics is None:
            return
        name = owner.name_of(self) if hasattr(owner, "name_of") else None
        group = metrics.get_sub_group("embedding_model", name or self.model or "embedding")
        group.get_counter("numOfEmbeddingCalls").inc()
        if usage is not None:
            group.get_counter("embeddingPromptTokens").inc(usage.prompt_tokens)
            group.get_counter("embeddingTotalTokens").inc(usage.total_tokens)
