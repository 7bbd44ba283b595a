"""Embedding models implemented in Java (``org.flinkagents.bridge.JavaEmbeddingModel``).

Upstream Flink Agents names are kept::

    ResourceDescriptor(clazz=JavaEmbeddingModelConnection,
                       java_clazz="org.flinkagents.examples.HashingEmbeddingModel", dimension=8)
    ResourceDescriptor(clazz=JavaEmbeddingModelSetup, connection="java_embeddings", model="m")

Extra arguments of the connection become the Java object's configuration; extra arguments of
the setup become per-call options. Needs a Flink job in thread mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import ConfigDict, PrivateAttr

from flink_agents.api._java import JavaHandleHolder
from flink_agents.api.embedding_models.embedding_model import (
    BaseEmbeddingModelConnection,
    BaseEmbeddingModelSetup,
)


class JavaEmbeddingModelConnection(BaseEmbeddingModelConnection):
    """An embedding model connection whose implementation is a Java class.

    Attributes:
        java_clazz: fully qualified name of a class implementing
            ``org.flinkagents.bridge.JavaEmbeddingModel`` with a public no-argument
            constructor.
    """

    model_config = ConfigDict(extra="allow")

    uses_java_bridge: ClassVar[bool] = True

    java_clazz: str

    _holder: JavaHandleHolder = PrivateAttr(default_factory=JavaHandleHolder)

    def model_post_init(self, context: Any, /) -> None:
        self._handle()

    @property
    def java_config(self) -> dict[str, Any]:
        """The configuration handed to the Java model's ``open``: the extra arguments."""
        return dict(self.model_extra or {})

    def _handle(self) -> Any:
        return self._holder.get(
            self.java_clazz, "embedding_model", self.java_config, self.get_resource
        )

    def embed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        """One vector per text, computed by the Java model.

        Raises:
            JavaBridgeError: the Java model threw.
        """
        return self._handle().embed(list(texts), kwargs)

    def close(self) -> None:
        """Close the Java model (calls its ``close()``)."""
        self._holder.close()


class JavaEmbeddingModelSetup(BaseEmbeddingModelSetup):
    """How an agent uses an embedding connection; extra arguments become call options."""

    model_config = ConfigDict(extra="allow")

    @property
    def model_kwargs(self) -> dict[str, Any]:
        options: dict[str, Any] = {"model": self.model} if self.model else {}
        options.update(self.model_extra or {})
        return options
