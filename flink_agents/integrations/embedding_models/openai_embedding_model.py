"""Embeddings from OpenAI or any OpenAI-compatible server (``POST /v1/embeddings``).

Example::

    agent.add_resource("emb_conn", ResourceDescriptor(
        clazz=OpenAIEmbeddingModelConnection, api_base_url="http://127.0.0.1:8000/v1"))
    agent.add_resource("embedder", ResourceDescriptor(
        clazz=OpenAIEmbeddingModelSetup, connection="emb_conn",
        model="text-embedding-3-small"))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import openai

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
    EmbeddingResult,
    EmbeddingTokenUsage,
)
from flink_agents.errors import ModelCallError
from flink_agents.integrations._openai import OpenAIClient
from flink_agents.integrations._pacing import embedding_usage, estimate_text_tokens


def _usage(reply: Any) -> EmbeddingTokenUsage | None:
    """The tokens a reply reports (``usage.prompt_tokens``; None: not reported)."""
    u = getattr(reply, "usage", None)
    if u is None or getattr(u, "prompt_tokens", None) is None:
        return None
    prompt = int(u.prompt_tokens)
    return EmbeddingTokenUsage(prompt, int(getattr(u, "total_tokens", None) or prompt))


class OpenAIEmbeddingModelConnection(BaseEmbeddingModelConnection, OpenAIClient):
    """Client of an OpenAI-compatible embeddings endpoint.

    Attributes:
        api_key: the API key; default: the ``OPENAI_API_KEY`` environment variable.
        api_base_url: the server's base URL (``http://host:port/v1``); default: OpenAI's.
        timeout: seconds one attempt may take.
        max_retries: further attempts after 429, 5xx, timeouts or connection errors.
        max_concurrency: calls this connection runs at once per task slot.
    """

    def _request(self, texts: Sequence[str], kwargs: dict[str, Any]) -> tuple[dict[str, Any], str]:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        model = kwargs.pop("model", None)
        if not model:
            raise ModelCallError(
                "no model name: set model= on the embedding model setup", provider=self.PROVIDER
            )
        extra_body = {k: v for k, v in kwargs.items() if k not in ("dimensions", "user")}
        request: dict[str, Any] = {"model": model, "input": list(texts)}
        request.update({k: v for k, v in kwargs.items() if k in ("dimensions", "user")})
        if extra_body:
            request["extra_body"] = extra_body
        return request, model

    #: Embeddings generate no tokens: the token pacing counts the input only.
    COMPLETION_GUESS = 0

    def _vectors(
        self, reply: Any, usage: EmbeddingTokenUsage | None, count: int, model: str
    ) -> EmbeddingResult:
        data = sorted(getattr(reply, "data", None) or [], key=lambda d: d.index)
        if len(data) != count:
            raise ModelCallError(
                f"asked for {count} embeddings, got {len(data)}",
                provider=self.PROVIDER,
                model=model,
            )
        return EmbeddingResult([list(map(float, d.embedding)) for d in data], usage)

    def _attempt(self, request: dict[str, Any]) -> tuple[Any, EmbeddingTokenUsage | None]:
        """The reply and its usage (read once, for the governor and the result)."""
        try:
            reply = self.client.embeddings.create(**request)
        except (openai.OpenAIError, ValueError) as exc:
            raise self._failure(exc) from None
        return reply, _usage(reply)

    async def _aattempt(self, request: dict[str, Any]) -> tuple[Any, EmbeddingTokenUsage | None]:
        try:
            reply = await self.aclient.embeddings.create(**request)
        except (openai.OpenAIError, ValueError) as exc:
            raise self._failure(exc) from None
        return reply, _usage(reply)

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
        """Vectors and the tokens the call cost (``usage.prompt_tokens``)."""
        if not texts:
            return EmbeddingResult([])
        request, model = self._request(texts, kwargs)
        (reply, usage), _ = self.call_with_retries(
            lambda: self._attempt(request),
            model=model,
            tokens=estimate_text_tokens(texts),
            usage_of=embedding_usage,
        )
        return self._vectors(reply, usage, len(texts), model)

    async def aembed_with_usage(self, texts: Sequence[str], **kwargs: Any) -> EmbeddingResult:
        """Asynchronous :meth:`embed_with_usage`."""
        if not texts:
            return EmbeddingResult([])
        request, model = self._request(texts, kwargs)
        (reply, usage), _ = await self.acall_with_retries(
            self._aattempt,
            request,
            model=model,
            tokens=estimate_text_tokens(texts),
            usage_of=embedding_usage,
        )
        return self._vectors(reply, usage, len(texts), model)

    def close(self) -> None:
        """Close the HTTP clients."""
        OpenAIClient.close(self)


class OpenAIEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """How an agent uses an OpenAI-compatible embedding model.

    Attributes:
        connection: name of the :class:`OpenAIEmbeddingModelConnection` resource.
        model: the model name (default ``text-embedding-3-small``).
        dimensions: shorten vectors to this size (models that support it).
    """

    model: str | None = "text-embedding-3-small"
    dimensions: int | None = None

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {"model": self.model, "dimensions": self.dimensions}
