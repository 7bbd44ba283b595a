"""The frame of the stores whose collections live in a database with a fixed vector size
(private): Qdrant, Milvus, pgvector, Elasticsearch/OpenSearch and Redis.

:class:`SizedCollectionStore` holds what those stores do alike (resolving the collection,
creating it on first use, checking vector sizes, assigning ids, filling in the stored vector
of an update, paging a filtered read, deleting by id or filter) and asks each store for the
parts that speak its database:

- :meth:`~SizedCollectionStore._location`: where the store is, for error messages;
- :meth:`~SizedCollectionStore._dimension` / :meth:`~SizedCollectionStore._create` /
  :meth:`~SizedCollectionStore._drop`: a collection's vector size, making and removing one;
- :meth:`~SizedCollectionStore._write`: upsert documents (with vectors and ids);
- :meth:`~SizedCollectionStore._stored_vectors`: the stored vectors of some ids;
- :meth:`~SizedCollectionStore._fetch`: documents by id;
- :meth:`~SizedCollectionStore._page` (or a whole :meth:`~SizedCollectionStore._scan`):
  documents by filter;
- :meth:`~SizedCollectionStore._remove`: delete ids;
- :meth:`~SizedCollectionStore._search`: the nearest documents of a vector.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import PrivateAttr

from flink_agents.api.vector_stores._filters import Node
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.errors import VectorStoreError
from flink_agents.integrations.vector_stores._common import (
    DatabaseVectorStore,
    check_query_dimension,
    check_vectors,
    in_order,
    kept,
    missing_collection,
    new_id,
    wanted_ids,
    where_of,
)


class SizedCollectionStore(DatabaseVectorStore):
    """A :class:`DatabaseVectorStore` whose collections have a fixed vector size; the
    database-specific parts are the hooks below (see the module's docstring)."""

    #: Documents asked of :meth:`_page` at a time when reading by filter.
    PAGE: ClassVar[int] = 256

    _dims: dict[str, int] = PrivateAttr(default_factory=dict)

    # -- what a store provides -------------------------------------------------------------
    def _location(self) -> str:
        """Where the collections are (``"Milvus at ./m.db"``), for error messages."""
        raise NotImplementedError

    def _dimension(self, name: str) -> int | None:
        """The vector size of collection ``name``, or None when it does not exist."""
        raise NotImplementedError

    def _create(self, name: str, size: int) -> None:
        """Create collection ``name`` for ``size``-dimensional vectors (a no-op if it exists)."""
        raise NotImplementedError

    def _drop(self, name: str) -> None:
        """Remove the existing collection ``name`` and its documents."""
        raise NotImplementedError

    def _write(self, name: str, docs: list[Document]) -> None:
        """Insert or replace ``docs`` (each with an id and a vector of the right size)."""
        raise NotImplementedError

    def _stored_vectors(self, name: str, ids: list[str]) -> dict[str, list[float]]:
        """The stored vectors of those of ``ids`` that are in collection ``name``."""
        raise NotImplementedError

    def _fetch(self, name: str, ids: list[str], where: Node | None) -> list[Document]:
        """The stored documents of ``ids`` (a non-empty list; any order; unknown ids left
        out). ``where`` may narrow them where the database can; :meth:`get` checks it again.
        """
        raise NotImplementedError

    def _page(
        self, name: str, where: Node | None, size: int, cursor: Any
    ) -> tuple[list[Document], Any]:
        """Up to ``size`` documents that may match ``where`` from ``cursor`` on (None: the
        start), with the cursor of the next page (None: there is none)."""
        raise NotImplementedError

    def _remove(self, name: str, ids: list[str]) -> None:
        """Delete the documents of ``ids`` (unknown ids are ignored)."""
        raise NotImplementedError

    def _search(
        self, name: str, embedding: list[float], limit: int, where: Node | None
    ) -> list[Document]:
        """The at most ``limit`` (> 0) documents nearest to ``embedding`` that match
        ``where``, best first, with their scores."""
        raise NotImplementedError

    def _collection_exists(self, name: str) -> bool:
        """Whether collection ``name`` exists (default: it has a vector size)."""
        return self._dimension(name) is not None

    # -- collections -----------------------------------------------------------------------
    def _missing(self, name: str) -> VectorStoreError:
        return missing_collection(name, self._location(), self.list_collections())

    def _existing(self, name: str) -> int:
        """The vector size of collection ``name``, which must exist."""
        size = self._dimension(name)
        if size is None:
            raise self._missing(name)
        return size

    def _auto_create(self, kwargs: dict[str, Any]) -> bool:
        return bool(kwargs.get("auto_create_collection", self.auto_create_collection))

    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        """Create collection ``name`` unless it exists; ``dimension=`` sets its vector size."""
        if self._dimension(name) is None:
            self._create(name, self._dimension_for_new(kwargs))

    def delete_collection(self, name: str) -> None:
        """Delete collection ``name`` and its documents."""
        if not self._collection_exists(name):
            raise self._missing(name)
        self._drop(name)
        self._dims.pop(name, None)

    # -- writing ---------------------------------------------------------------------------
    def _add_embedding(
        self, *, documents: list[Document], collection_name: str | None = None, **kwargs: Any
    ) -> list[str]:
        name = self._name(collection_name)
        if not documents:
            return []
        size = self._dimension(name)
        if size is None and not self._auto_create(kwargs):
            raise self._missing(name)
        size = check_vectors(documents, size, name)
        if self._dimension(name) is None:
            self._create(name, size)
        docs = [d if d.id else d.model_copy(update={"id": new_id()}) for d in documents]
        self._write(name, docs)
        return [str(d.id) for d in docs]

    def _update_embedding(
        self, *, documents: list[Document], collection_name: str | None = None, **kwargs: Any
    ) -> None:
        name = self._name(collection_name)
        size = self._existing(name)
        ids = [str(d.id) for d in documents]
        stored = self._stored_vectors(name, ids)
        missing = [i for i in ids if i not in stored]
        if missing:
            raise VectorStoreError(f"cannot update {missing}: not in collection {name!r}")
        full = [
            d if d.embedding is not None else d.model_copy(update={"embedding": stored[str(d.id)]})
            for d in documents
        ]
        check_vectors(full, size, name)
        self._write(name, full)

    # -- reading ---------------------------------------------------------------------------
    def get(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = 100,
        **kwargs: Any,
    ) -> list[Document]:
        """Stored documents by id and/or filter (see ``BaseVectorStore.get``)."""
        where = where_of(filters, kwargs)
        name = self._name(collection_name)
        self._existing(name)
        wanted = wanted_ids(ids)
        if wanted is not None:
            if not wanted:
                return []
            return kept(in_order(self._fetch(name, wanted, where), wanted), where)
        return self._scan(name, where, limit, kwargs)

    def _scan(
        self, name: str, where: Node | None, limit: int | None, kwargs: dict[str, Any]
    ) -> list[Document]:
        """At most ``limit`` (None: all) documents matching ``where``, page by page."""
        found: list[Document] = []
        cursor = None
        while limit is None or len(found) < limit:
            size = self.PAGE if limit is None else min(self.PAGE, limit - len(found))
            docs, cursor = self._page(name, where, size, cursor)
            found.extend(kept(docs, where))
            if cursor is None:
                break
        return found if limit is None else found[:limit]

    def delete(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remove documents by id and/or filter; with neither, all of the collection."""
        where = where_of(filters, kwargs)
        name = self._name(collection_name)
        self._existing(name)
        self._delete(name, wanted_ids(ids), where, filters, kwargs)

    def _delete(
        self,
        name: str,
        wanted: list[str] | None,
        where: Node | None,
        filters: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        """Delete ``wanted`` ids (None: any) that match ``where`` from collection ``name``
        (default: by id where no filter narrows them, else the ids :meth:`get` finds)."""
        if wanted is not None and where is None:
            if wanted:
                self._remove(name, wanted)
            return
        victims = self.get(ids=wanted, collection_name=name, filters=filters, limit=None, **kwargs)
        self._remove(name, [str(d.id) for d in victims])

    def _query_embedding(
        self,
        embedding: list[float],
        limit: int = 10,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        where = where_of(filters, kwargs)
        name = self._name(collection_name)
        size = self._dimension(name)
        if size is None:
            if not self._auto_create(kwargs):
                raise self._missing(name)
            self._create(name, len(embedding))
            return []
        check_query_dimension(embedding, size, name)
        if limit <= 0:
            return []
        return self._search(name, embedding, limit, where)
