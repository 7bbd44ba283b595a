"""Embeddings from DashScope's text embedding models (``text-embedding-v3``...) through the
``dashscope`` SDK (``pip install 'flink-agents-py[tongyi]'``; class names as in Apache Flink
Agents).

Example::

    agent.add_resource("tongyi_emb", ResourceDescriptor(clazz=TongyiEmbeddingModelConnection))
    agent.add_resource("embedder", ResourceDescriptor(
        clazz=TongyiEmbeddingModelSetup, connection="tongyi_emb",
        model="text-embedding-v3", dimension=512))

Texts go ``batch_size`` per call (DashScope takes at most 10 per request for v3, 25 for
v1/v2). Token counts (``usage.total_tokens``) are counted in the agent's metrics.
Credentials, retries and throttling as for the chat connection
(:mod:`flink_agents.integrations._dashscope`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from pydantic import Field

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
    EmbeddingResult,
    EmbeddingTokenUsage,
)
from flink_agents.errors import ModelCallError
from flink_agents.integrations._common import snippet
from flink_agents.integrations._dashscope import DashScopeClient, dashscope_sdk

DEFAULT_MODEL = "text-embedding-v3"


class TongyiEmbeddingModelConnection(BaseEmbeddingModelConnection, DashScopeClient):
    """Client of DashScope's text embedding service.

    Attributes:
        api_key: the DashScope API key (default: ``DASHSCOPE_API_KEY``).
        base_url: the API's base URL (default: DashScope's mainland endpoint).
        request_timeout: seconds one attempt may take.
        batch_size: texts per request.
    """

    batch_size: int = Field(default=10, ge=1)

    def _call(self, request: dict[str, Any]) -> Any:
        sdk = dashscope_sdk(type(self).__name__)
        try:
            response = sdk.TextEmbedding.call(**request, **self._call_kwargs())
        except ModelCallError:
            raise
        except Exception as exc:  # noqa: BLE001 - requests' errors, classified
            raise self._transport_failure(exc) from None
        return self._answer(response)

    def embed_with_usage(self, texts: Sequence[str], **kwargs: Any) -> EmbeddingResult:
        """Vectors and the tokens the calls cost.

        Raises:
            ModelCallError: a call failed after retries.
        """
        texts = list(texts)
        if not texts:
            return EmbeddingResult([])
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        model = str(kwargs.pop("model", None) or DEFAULT_MODEL)
        vectors: list[list[float]] = []
        tokens = 0
        for start in range(0, len(texts), self.batch_size):
            chunk = texts[start : start + self.batch_size]
            request = {"model": model, "input": chunk, **kwargs}
            response, _ = self.call_with_retries(partial(self._call, request), model=model)
            try:
                found = sorted(response.output["embeddings"], key=lambda e: e["text_index"])
                chunk_vectors = [[float(x) for x in e["embedding"]] for e in found]
            except (KeyError, TypeError):
                raise ModelCallError(
                    f"malformed reply: no embeddings in {snippet(str(response))}",
                    provider=self.PROVIDER,
                    model=model,
                ) from None
            if len(chunk_vectors) != len(chunk):
                raise ModelCallError(
                    f"asked for {len(chunk)} embeddings, got {len(chunk_vectors)}",
                    provider=self.PROVIDER,
                    model=model,
                )
            vectors.extend(chunk_vectors)
            u = getattr(response, "usage", None) or {}
            tokens += int(u.get("total_tokens") or u.get("input_tokens") or 0)
        return EmbeddingResult(vectors, EmbeddingTokenUsage(tokens, tokens))

    def embed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        """One vector per text."""
        return self.embed_with_usage(texts, **kwargs).embeddings


class TongyiEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """How an agent uses a DashScope embedding model.

    Attributes:
        connection: name of the :class:`TongyiEmbeddingModelConnection` resource.
        model: the model (default ``text-embedding-v3``).
        text_type: ``document`` or ``query`` (v3 and later).
        dimension: output size (v3: 1024, 768, 512...).
        additional_kwargs: further request parameters.
    """

    model: str | None = DEFAULT_MODEL
    text_type: str | None = None
    dimension: int | None = None
    additional_kwargs: dict[str, Any] = Field(default_factory=dict)

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {
            "model": self.model,
            "text_type": self.text_type,
            "dimension": self.dimension,
            **self.additional_kwargs,
        }
