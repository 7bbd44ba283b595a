"""Vector stores implemented in Java (``org.flinkagents.bridge.JavaVectorStore``), used from
Python agents like any vector store (names as in Apache Flink Agents)::

    ResourceDescriptor(clazz=JavaCollectionManageableVectorStore,
                       java_clazz="org.flinkagents.examples.InMemoryJavaVectorStore",
                       embedding_model="embedder", collection="docs")

Extra arguments become the Java store's configuration (its ``open(configJson)``). Texts are
embedded on the Python side with ``embedding_model``; documents, query vectors and filters
cross the bridge as JSON, and every result is checked against the metadata filter again
here, so a Java store may filter loosely. :class:`JavaVectorStore` is the plain interface;
:class:`JavaCollectionManageableVectorStore` adds collection management (the Java class
implements ``listCollections`` / ``createCollection`` / ``deleteCollection``). Java stores
need a Flink job in thread mode (see :mod:`flink_agents.runtime.java`).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pydantic import ConfigDict, PrivateAttr

from flink_agents.api._java import JavaHandleHolder
from flink_agents.api.vector_stores._filters import matches, parse_filter
from flink_agents.api.vector_stores.vector_store import (
    BaseVectorStore,
    CollectionManageableVectorStore,
    Document,
)

DEFAULT_COLLECTION = "default"


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _documents(found: Any) -> list[Document]:
    return [Document.model_validate(d) for d in found or []]


class JavaVectorStore(BaseVectorStore):
    """A vector store whose implementation is a Java class.

    Attributes:
        java_clazz: fully qualified name of a class implementing
            ``org.flinkagents.bridge.JavaVectorStore`` with a public no-argument constructor.
        embedding_model: name of the embedding model setup for texts without vectors.
        collection: the collection used when a call names none (default ``default``).
    """

    model_config = ConfigDict(extra="allow")

    uses_java_bridge: ClassVar[bool] = True

    java_clazz: str
    collection: str | None = DEFAULT_COLLECTION

    _holder: JavaHandleHolder = PrivateAttr(default_factory=JavaHandleHolder)

    def model_post_init(self, context: Any, /) -> None:
        self._handle()  # create (and open) the Java store with the resource: fail early

    @property
    def java_config(self) -> dict[str, Any]:
        """The configuration handed to the Java store's ``open``: the extra arguments."""
        return dict(self.model_extra or {})

    def _handle(self) -> Any:
        return self._holder.get(
            self.java_clazz, "vector_store", self.java_config, self.get_resource
        )

    def _call(self, operation: str, *args: Any) -> Any:
        return self._handle().vector_store(operation, *args)

    def _name(self, collection_name: str | None) -> str:
        return collection_name or self.collection or DEFAULT_COLLECTION

    def get(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = 100,
        **kwargs: Any,
    ) -> list[Document]:
        """Stored documents by id and/or filter (see ``BaseVectorStore.get``)."""
        where = parse_filter(filters, kwargs.get("where"))
        wanted = [ids] if isinstance(ids, str) else ids
        if wanted is not None and not wanted:
            return []
        merged = _merged(filters, kwargs.get("where"))
        found = _documents(
            self._call(
                "get",
                _json(wanted),
                self._name(collection_name),
                _json(merged),
                -1 if limit is None or wanted is not None else int(limit),
            )
        )
        return [d for d in found if matches(where, d.metadata)]

    def delete(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remove documents by id and/or filter; with neither, all of the collection."""
        parse_filter(filters, kwargs.get("where"))  # a malformed filter fails here
        wanted = [ids] if isinstance(ids, str) else ids
        if wanted is not None and not wanted:
            return
        self._call(
            "delete",
            _json(wanted),
            self._name(collection_name),
            _json(_merged(filters, kwargs.get("where"))),
        )

    def _query_embedding(
        self,
        embedding: list[float],
        limit: int = 10,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        where = parse_filter(filters, kwargs.get("where"))
        if limit <= 0:
            return []
        found = _documents(
            self._call(
                "query",
                json.dumps([float(x) for x in embedding]),
                int(limit),
                self._name(collection_name),
                _json(_merged(filters, kwargs.get("where"))),
            )
        )
        return [d for d in found if matches(where, d.metadata)][:limit]

    def _add_embedding(
        self, *, documents: list[Document], collection_name: str | None = None, **kwargs: Any
    ) -> list[str]:
        import uuid

        docs = [d if d.id else d.model_copy(update={"id": uuid.uuid4().hex}) for d in documents]
        payload = [d.model_dump(exclude={"score"}, exclude_none=True) for d in docs]
        return [str(i) for i in self._call("add", json.dumps(payload), self._name(collection_name))]

    def _update_embedding(
        self, *, documents: list[Document], collection_name: str | None = None, **kwargs: Any
    ) -> None:
        payload = [d.model_dump(exclude={"score"}, exclude_none=True) for d in documents]
        self._call("update", json.dumps(payload), self._name(collection_name))

    def close(self) -> None:
        """Close the Java store (calls its ``close()``)."""
        self._holder.close()


class JavaCollectionManageableVectorStore(JavaVectorStore, CollectionManageableVectorStore):
    """A Java vector store with collections (list, create, delete)."""

    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        """Create collection ``name`` unless it exists."""
        self._call("createCollection", name)

    def delete_collection(self, name: str) -> None:
        """Delete collection ``name`` and its documents."""
        self._call("deleteCollection", name)

    def list_collections(self) -> list[str]:
        """The collection names, sorted."""
        return sorted(str(n) for n in self._call("listCollections") or [])


def _merged(filters: dict[str, Any] | None, where: dict[str, Any] | None) -> Any:
    """``filters`` and ``where`` as one filter (AND), for the Java side."""
    parts = [f for f in (filters, where) if f]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}
