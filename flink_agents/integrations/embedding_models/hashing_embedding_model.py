"""A deterministic, dependency-free embedding: hashed bag of words.

``HashingEmbeddingModelConnection`` turns a text into a fixed-size vector without any model
or network: it lower-cases the text, splits it into words (Unicode ``\\w+``), drops a few
very common English words, and adds each word's weight ``1 + log(count)`` to one of
``dimensions`` buckets chosen by a stable hash (BLAKE2b) of the word, with a sign from the
same hash (so collisions cancel out on average instead of piling up). Word bigrams are
added with half the weight when ``bigrams`` is on. The vector is L2-normalized, so cosine
similarity is a dot product and measures shared vocabulary.

It is the same vector for the same text on every machine and in every process (no
``PYTHONHASHSEED`` dependence), which makes it useful offline, in tests, in examples and as
a cheap lexical retriever; it does not know synonyms (use a real model for semantics).

Example::

    agent.add_resource("emb_conn", ResourceDescriptor(
        clazz=HashingEmbeddingModelConnection, dimensions=256))
    agent.add_resource("embedder", ResourceDescriptor(
        clazz=HashingEmbeddingModelSetup, connection="emb_conn"))
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import Field

from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
)

_WORD = re.compile(r"\w+", re.UNICODE)

#: Very common English words carry little meaning and would dominate short texts.
_STOP_WORDS_TEXT = (
    "a an and are as at be but by do does for from has have how i in is it its me my of on "
    "or our that the their them there these they this to was we were what when where which "
    "who why will with you your"
)
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def _bucket(token: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % dimensions, (1.0 if (value >> 63) & 1 == 0 else -1.0)


def hashing_embedding(
    text: str, dimensions: int = 256, *, bigrams: bool = True, stop_words: bool = True
) -> list[float]:
    """The hashed bag-of-words vector of ``text`` (unit length; all zeros for no words)."""
    words = [w for w in _WORD.findall(text.lower()) if not (stop_words and w in STOP_WORDS)]
    features: Counter[str] = Counter(words)
    weights = {w: 1.0 + math.log(c) for w, c in features.items()}
    if bigrams:
        pairs = Counter(f"{a} {b}" for a, b in itertools.pairwise(words))
        weights.update({p: 0.5 * (1.0 + math.log(c)) for p, c in pairs.items()})
    vector = [0.0] * dimensions
    for token, weight in weights.items():
        index, sign = _bucket(token, dimensions)
        vector[index] += sign * weight
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


class HashingEmbeddingModelConnection(BaseEmbeddingModelConnection):
    """Hashed bag-of-words embeddings computed locally (see the module docstring).

    Attributes:
        dimensions: vector size (more dimensions, fewer hash collisions).
        bigrams: also hash pairs of neighbouring words (helps with phrases).
        stop_words: ignore very common English words.
    """

    dimensions: int = Field(default=256, ge=8)
    bigrams: bool = True
    stop_words: bool = True

    def embed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        """One unit vector per text; ``dimensions=`` overrides the connection's size."""
        dimensions = int(kwargs.get("dimensions") or self.dimensions)
        return [
            hashing_embedding(t, dimensions, bigrams=self.bigrams, stop_words=self.stop_words)
            for t in texts
        ]

    async def aembed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        """Same as :meth:`embed` (pure computation, no I/O)."""
        return self.embed(texts, **kwargs)


class HashingEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """How an agent uses a :class:`HashingEmbeddingModelConnection`.

    Attributes:
        connection: name of the connection resource.
        dimensions: vector size for this use (default: the connection's).
    """

    dimensions: int | None = None

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {"dimensions": self.dimensions} if self.dimensions else {}
