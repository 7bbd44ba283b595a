"""Embeddings from Google Gemini (Gemini API or Vertex AI) through ``google-genai``
(``pip install 'flink-agents-py[gemini]'``).

Example::

    agent.add_resource("gemini_emb", ResourceDescriptor(clazz=GeminiEmbeddingModelConnection))
    agent.add_resource("embedder", ResourceDescriptor(
        clazz=GeminiEmbeddingModelSetup, connection="gemini_emb",
        model="gemini-embedding-001", output_dimensionality=768))

Token counts: the reply's ``usage_metadata.prompt_token_count`` when sent, else the sum of
Vertex AI's per-embedding ``statistics.token_count``; counted in the agent's metrics.
Credentials, retries and throttling as for the chat connection
(:mod:`flink_agents.integrations._gemini`).
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
from flink_agents.integrations._gemini import GeminiClient, genai_sdk

#: Most texts in one request (the Gemini API's batch limit).
BATCH = 100


class GeminiEmbeddingModelConnection(BaseEmbeddingModelConnection, GeminiClient):
    """Client of Gemini's embeddings (``embedContent`` / ``batchEmbedContents``).

    Attributes:
        api_key: a Gemini API key (default ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``).
        vertex_ai: use Vertex AI (with ``project``, ``location``).
        project: the Google Cloud project (Vertex AI).
        location: the Vertex AI region.
        access_token: an OAuth access token for Vertex AI.
        base_url: another endpoint.
        model: the default model (a setup's ``model`` wins).
    """

    model: str | None = None

    def _batch(self, model: str, texts: list[str], config: dict[str, Any]) -> Any:
        def attempt() -> Any:
            try:
                return self.client.models.embed_content(
                    model=model, contents=texts, config=config or None
                )
            except ModelCallError:
                raise
            except Exception as exc:  # noqa: BLE001 - the SDK's errors, classified
                raise self._failure(exc) from None

        reply, _ = self.call_with_retries(attempt, model=model)
        return reply

    def embed_with_usage(self, texts: Sequence[str], **kwargs: Any) -> EmbeddingResult:
        """Vectors and, when reported, the tokens the calls cost.

        Raises:
            ModelCallError: a call failed after retries.
        """
        genai_sdk(type(self).__name__)
        texts = list(texts)
        if not texts:
            return EmbeddingResult([])
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        model = kwargs.pop("model", None) or self.model
        if not model:
            raise ModelCallError(
                "no model name: set model= on the embedding model setup", provider=self.PROVIDER
            )
        vectors: list[list[float]] = []
        tokens: int | None = None
        for start in range(0, len(texts), BATCH):
            chunk = texts[start : start + BATCH]
            reply = self._batch(model, chunk, kwargs)
            found = getattr(reply, "embeddings", None) or []
            if len(found) != len(chunk):
                raise ModelCallError(
                    f"malformed reply: asked for {len(chunk)} embeddings, got {len(found)}",
                    provider=self.PROVIDER,
                    model=model,
                )
            vectors.extend([float(x) for x in (e.values or [])] for e in found)
            meta = getattr(reply, "usage_metadata", None)
            count = getattr(meta, "prompt_token_count", None)
            if count is None:
                stats = [getattr(e, "statistics", None) for e in found]
                counts = [s.token_count for s in stats if s is not None and s.token_count]
                count = int(sum(counts)) if counts else None
            if count is not None:
                tokens = (tokens or 0) + int(count)
        usage = EmbeddingTokenUsage(tokens, tokens) if tokens is not None else None
        return EmbeddingResult(vectors, usage)

    def embed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        """One vector per text."""
        return self.embed_with_usage(texts, **kwargs).embeddings

    def close(self) -> None:
        """Forget the SDK client."""
        GeminiClient.close(self)


class GeminiEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """How an agent uses a Gemini embedding model.

    Attributes:
        connection: name of the :class:`GeminiEmbeddingModelConnection` resource.
        model: the model (``gemini-embedding-001``, ``text-embedding-005``...).
        task_type: ``RETRIEVAL_DOCUMENT``, ``RETRIEVAL_QUERY``, ``SEMANTIC_SIMILARITY``...
        output_dimensionality: shorten vectors to this size.
    """

    model: str | None = None
    task_type: str | None = None
    output_dimensionality: int | None = None

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {
            "model": self.model,
            "task_type": self.task_type,
            "output_dimensionality": self.output_dimensionality,
        }
