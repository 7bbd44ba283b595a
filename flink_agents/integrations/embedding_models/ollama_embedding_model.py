"""Embeddings from an Ollama server (``POST /api/embed``).

Example::

    agent.add_resource("emb_conn", ResourceDescriptor(
        clazz=OllamaEmbeddingModelConnection, base_url="http://localhost:11434"))
    agent.add_resource("embedder", ResourceDescriptor(
        clazz=OllamaEmbeddingModelSetup, connection="emb_conn", model="nomic-embed-text"))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
    EmbeddingResult,
    EmbeddingTokenUsage,
)
from flink_agents.errors import ModelCallError
from flink_agents.integrations._common import HttpJsonClient, snippet
from flink_agents.integrations._pacing import embedding_usage, estimate_text_tokens
from flink_agents.integrations._throttling import ollama_is_throttling


class OllamaEmbeddingModelConnection(BaseEmbeddingModelConnection, HttpJsonClient):
    """Client of an Ollama server's embedding endpoint.

    Attributes:
        base_url: the server, default ``http://localhost:11434``.
        timeout: seconds one attempt may take.
        max_retries: further attempts after 429, 5xx, timeouts or connection errors.
        max_concurrency: calls this connection runs at once per task slot.
    """

    PROVIDER = "ollama"

    #: Embeddings generate no tokens: the token pacing counts the input only.
    COMPLETION_GUESS = 0

    base_url: str = "http://localhost:11434"

    def _is_throttling(self, status: int, body: Any) -> bool:
        return ollama_is_throttling(status, str(self._error_text(body) or ""))

    def _base_url(self) -> str:
        return self.base_url

    def _request(self, texts: Sequence[str], kwargs: dict[str, Any]) -> tuple[dict[str, Any], str]:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        model = kwargs.pop("model", None)
        if not model:
            raise ModelCallError(
                "no model name: set model= on the embedding model setup", provider=self.PROVIDER
            )
        return {"model": model, "input": list(texts), **kwargs}, model

    def _vectors(self, data: Any, count: int, model: str) -> list[list[float]]:
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list) or len(vectors) != count:
            raise ModelCallError(
                f"asked for {count} embeddings, got {snippet(str(data), 200)}",
                provider=self.PROVIDER,
                model=model,
            )
        return [list(map(float, v)) for v in vectors]

    @staticmethod
    def _usage(data: Any) -> EmbeddingTokenUsage | None:
        tokens = data.get("prompt_eval_count") if isinstance(data, dict) else None
        if not isinstance(tokens, int):
            return None
        return EmbeddingTokenUsage(tokens, tokens)

    @classmethod
    def _with_usage(cls, data: Any) -> tuple[Any, EmbeddingTokenUsage | None]:
        """A reply and its usage, read once for the governor and the result."""
        return data, cls._usage(data)

    async def _apost_with_usage(
        self, path: str, request: dict[str, Any]
    ) -> tuple[Any, EmbeddingTokenUsage | None]:
        return self._with_usage(await self._apost(path, request))

    def embed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        """One vector per text.

        Raises:
            ModelCallError: the call failed after retries.
        """
        return self.embed_with_usage(texts, **kwargs).embeddings

    async def aembed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        """Asynchronous :meth:`embed`."""
        return (await self.aembed_with_usage(texts, **kwargs)).embeddings

    def embed_with_usage(self, texts: Sequence[str], **kwargs: Any) -> EmbeddingResult:
        """:meth:`embed` with Ollama's ``prompt_eval_count`` as the tokens used."""
        if not texts:
            return EmbeddingResult([])
        request, model = self._request(texts, kwargs)
        (data, usage), _ = self.call_with_retries(
            lambda: self._with_usage(self._post("/api/embed", request)),
            model=model,
            tokens=estimate_text_tokens(texts),
            usage_of=embedding_usage,
        )
        return EmbeddingResult(self._vectors(data, len(texts), model), usage)

    async def aembed_with_usage(self, texts: Sequence[str], **kwargs: Any) -> EmbeddingResult:
        """Asynchronous :meth:`embed_with_usage`."""
        if not texts:
            return EmbeddingResult([])
        request, model = self._request(texts, kwargs)
        (data, usage), _ = await self.acall_with_retries(
            self._apost_with_usage,
            "/api/embed",
            request,
            model=model,
            tokens=estimate_text_tokens(texts),
            usage_of=embedding_usage,
        )
        return EmbeddingResult(self._vectors(data, len(texts), model), usage)

    def close(self) -> None:
        """Close the HTTP clients."""
        self._close_clients()


class OllamaEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """How an agent uses an Ollama embedding model.

    Attributes:
        connection: name of the :class:`OllamaEmbeddingModelConnection` resource.
        model: the model name (``nomic-embed-text``, ``all-minilm``...).
        truncate: cut inputs longer than the model's context instead of failing.
        keep_alive: how long Ollama keeps the model loaded.
    """

    truncate: bool | None = None
    keep_alive: str | float | None = None

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {"model": self.model, "truncate": self.truncate, "keep_alive": self.keep_alive}
