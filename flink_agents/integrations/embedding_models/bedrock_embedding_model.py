"""Embeddings from Amazon Bedrock: Amazon Titan and Cohere models through ``InvokeModel``
(``pip install 'flink-agents-py[bedrock]'``; class names as Apache Flink Agents' Java
integration).

Example::

    agent.add_resource("bedrock_emb", ResourceDescriptor(
        clazz=BedrockEmbeddingModelConnection, region="us-east-1"))
    agent.add_resource("embedder", ResourceDescriptor(
        clazz=BedrockEmbeddingModelSetup, connection="bedrock_emb",
        model="amazon.titan-embed-text-v2:0", dimensions=512))

Request bodies by model family: Titan (``amazon.titan-embed-*``) embeds one text per call
(``{"inputText", "dimensions", "normalize"}``), run ``embed_concurrency`` at a time; Cohere
(``cohere.embed-*``) embeds up to 96 texts per call (``{"texts", "input_type",
"embedding_types"}``). Token counts come from Titan's ``inputTextTokenCount`` or Bedrock's
``X-Amzn-Bedrock-Input-Token-Count`` header, and are counted in the agent's metrics.
Credentials, retries and throttling as for the chat connection
(:mod:`flink_agents.integrations._bedrock`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import Field

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
    EmbeddingResult,
    EmbeddingTokenUsage,
)
from flink_agents.errors import ModelCallError
from flink_agents.integrations._bedrock import BedrockClient
from flink_agents.integrations._common import snippet

#: Most texts in one Cohere embed request.
COHERE_BATCH = 96


def _family(model: str) -> str:
    # Cross-region profiles prefix the model id with a region group ("us.cohere.embed-...").
    name = model.split("/")[-1]
    for family in ("cohere", "amazon"):
        if name.startswith(family + ".") or f".{family}." in name:
            return family
    return "amazon"


class BedrockEmbeddingModelConnection(BaseEmbeddingModelConnection, BedrockClient):
    """Client of Bedrock's embedding models.

    Attributes:
        region: the AWS region (default: ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else
            ``us-east-1``).
        profile_name: a profile of the shared AWS config files.
        aws_access_key_id: an access key id (with ``aws_secret_access_key``).
        aws_secret_access_key: its secret.
        aws_session_token: a session token of temporary credentials.
        endpoint_url: another endpoint.
        model: the default model id (a setup's ``model`` wins).
        embed_concurrency: Titan calls made at once for a list of texts.
    """

    model: str | None = None
    embed_concurrency: int = Field(default=4, ge=1)

    def _invoke(self, model: str, body: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        request = {
            "modelId": model,
            "body": json.dumps(body),
            "contentType": "application/json",
            "accept": "application/json",
        }
        reply, _ = self.call_with_retries(
            lambda: self._attempt("invoke_model", request), model=model
        )
        try:
            data = json.loads(reply["body"].read())
        except (KeyError, ValueError) as exc:
            raise ModelCallError(
                f"malformed reply: {exc}", provider=self.PROVIDER, model=model
            ) from None
        headers = (reply.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
        count = headers.get("x-amzn-bedrock-input-token-count")
        return data, int(count) if count is not None and str(count).isdigit() else None

    def _titan(self, model: str, text: str, kwargs: dict[str, Any]) -> tuple[list[float], int]:
        body: dict[str, Any] = {"inputText": text}
        if kwargs.get("dimensions") is not None:
            body["dimensions"] = kwargs["dimensions"]
        if kwargs.get("normalize") is not None:
            body["normalize"] = kwargs["normalize"]
        data, header_tokens = self._invoke(model, body)
        vector = data.get("embedding")
        if not isinstance(vector, list):
            raise ModelCallError(
                f"malformed reply: no embedding in {snippet(str(data))}",
                provider=self.PROVIDER,
                model=model,
            )
        tokens = data.get("inputTextTokenCount", header_tokens)
        return [float(x) for x in vector], int(tokens or 0)

    def _cohere(
        self, model: str, texts: list[str], kwargs: dict[str, Any]
    ) -> tuple[list[list[float]], int]:
        vectors: list[list[float]] = []
        tokens = 0
        for start in range(0, len(texts), COHERE_BATCH):
            chunk = texts[start : start + COHERE_BATCH]
            body: dict[str, Any] = {
                "texts": chunk,
                "input_type": kwargs.get("input_type") or "search_document",
                "embedding_types": ["float"],
            }
            if kwargs.get("truncate"):
                body["truncate"] = kwargs["truncate"]
            data, header_tokens = self._invoke(model, body)
            found = data.get("embeddings")
            if isinstance(found, dict):
                found = found.get("float")
            if not isinstance(found, list) or len(found) != len(chunk):
                raise ModelCallError(
                    f"malformed reply: asked for {len(chunk)} embeddings, got {snippet(str(data))}",
                    provider=self.PROVIDER,
                    model=model,
                )
            vectors.extend([float(x) for x in v] for v in found)
            tokens += header_tokens or 0
        return vectors, tokens

    def embed_with_usage(self, texts: Sequence[str], **kwargs: Any) -> EmbeddingResult:
        """Vectors and the tokens the calls cost.

        Raises:
            ModelCallError: a call failed after retries.
        """
        texts = list(texts)
        if not texts:
            return EmbeddingResult([])
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        model = kwargs.pop("model", None) or self.model
        if not model:
            raise ModelCallError(
                "no model id: set model= on the embedding model setup", provider=self.PROVIDER
            )
        if _family(model) == "cohere":
            vectors, tokens = self._cohere(model, texts, kwargs)
        elif len(texts) == 1 or self.embed_concurrency == 1:
            pairs = [self._titan(model, t, kwargs) for t in texts]
            vectors, tokens = [v for v, _ in pairs], sum(n for _, n in pairs)
        else:
            with ThreadPoolExecutor(min(self.embed_concurrency, len(texts))) as pool:
                pairs = list(pool.map(lambda t: self._titan(model, t, kwargs), texts))
            vectors, tokens = [v for v, _ in pairs], sum(n for _, n in pairs)
        return EmbeddingResult(vectors, EmbeddingTokenUsage(tokens, tokens))

    def embed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        """One vector per text."""
        return self.embed_with_usage(texts, **kwargs).embeddings

    def close(self) -> None:
        """Close the client's connection pool."""
        BedrockClient.close(self)


class BedrockEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """How an agent uses a Bedrock embedding model.

    Attributes:
        connection: name of the :class:`BedrockEmbeddingModelConnection` resource.
        model: the model id (``amazon.titan-embed-text-v2:0``, ``cohere.embed-english-v3``...).
        dimensions: Titan v2's output size (256, 512 or 1024).
        normalize: Titan v2: unit-length vectors.
        input_type: Cohere: ``search_document`` (default) or ``search_query``...
    """

    model: str | None = None
    dimensions: int | None = None
    normalize: bool | None = None
    input_type: str | None = None

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {
            "model": self.model,
            "dimensions": self.dimensions,
            "normalize": self.normalize,
            "input_type": self.input_type,
        }
