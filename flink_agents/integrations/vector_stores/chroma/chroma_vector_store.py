"""Chroma as a vector store, embedded in the process (``pip install flink-agents-py[chroma]``).

``persist_directory`` set: a ``chromadb.PersistentClient`` keeps the collections in that
directory, so they survive restarts; unset: an in-memory client (shared by every store of the
process that has no directory). No server is involved.

Vectors always come from this package (the store's ``embedding_model``, or the caller):
Chroma's own embedding function, which would download a model at run time, is never used
(collections are opened with ``embedding_function=None`` and every call passes embeddings).

New collections use cosine distance (``collection_metadata={"hnsw:space": "cosine"}``), and
query results carry a similarity ``score`` (higher is closer): ``1 - distance`` for the
``cosine`` and ``ip`` spaces, ``-distance`` for ``l2``.

A persistent directory belongs to one process at a time (Chroma's embedded mode has no
cross-process locking): on Flink, use thread mode (all slots of a TaskManager share the
process and the client), or one directory per TaskManager.

Example::

    agent.add_resource("docs", ResourceDescriptor(
        clazz=ChromaVectorStore, embedding_model="embedder",
        persist_directory="/var/lib/agent/chroma", collection="docs"))
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

from pydantic import Field, PrivateAttr

from flink_agents.api.vector_stores._filters import parse_filter, to_chroma_where
from flink_agents.api.vector_stores.vector_store import (
    CollectionManageableVectorStore,
    Document,
)
from flink_agents.errors import VectorStoreError

DEFAULT_COLLECTION = "flink_agents_chroma_collection"

# Chroma's embedded clients share one process-wide system per path, whose start-up is not
# synchronized: clients are made one at a time.
_CLIENT_LOCK = threading.Lock()


def _chromadb() -> Any:
    try:
        import chromadb
    except ImportError:
        raise VectorStoreError(
            "ChromaVectorStore needs the chromadb package: pip install 'flink-agents-py[chroma]'"
        ) from None
    return chromadb


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class ChromaVectorStore(CollectionManageableVectorStore):
    """Chroma, embedded: persistent in a directory, or in memory.

    Attributes:
        embedding_model: name of the embedding model setup for texts without vectors.
        persist_directory: where the collections live; None for an in-memory client.
        client_settings: ``chromadb.config.Settings`` fields (telemetry is always off).
        tenant: Chroma tenant.
        database: Chroma database.
        collection: the collection used when a call names none.
        collection_metadata: metadata of collections this store creates (the HNSW space:
            ``{"hnsw:space": "cosine" | "l2" | "ip"}``).
        auto_create_collection: whether adding to or querying a missing collection creates
            it (else it is a :class:`~flink_agents.errors.VectorStoreError`).
    """

    persist_directory: str | None = None
    client_settings: dict[str, Any] = Field(default_factory=dict)
    tenant: str = "default_tenant"
    database: str = "default_database"
    collection: str | None = DEFAULT_COLLECTION
    collection_metadata: dict[str, Any] = Field(default_factory=lambda: {"hnsw:space": "cosine"})
    auto_create_collection: bool = True

    _client: Any = PrivateAttr(default=None)

    # -- client and collections ----------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The Chroma client (``chromadb.ClientAPI``), made on first use."""
        if self._client is None:
            chromadb = _chromadb()
            from chromadb.config import Settings

            settings = Settings(**{**self.client_settings, "anonymized_telemetry": False})
            with _CLIENT_LOCK:
                if self._client is None:
                    try:
                        if self.persist_directory is not None:
                            self._client = chromadb.PersistentClient(
                                path=self.persist_directory,
                                settings=settings,
                                tenant=self.tenant,
                                database=self.database,
                            )
                        else:
                            self._client = chromadb.EphemeralClient(
                                settings=settings, tenant=self.tenant, database=self.database
                            )
                    except Exception as exc:
                        raise VectorStoreError(
                            f"cannot open Chroma at {self.persist_directory or '(memory)'}: "
                            f"{type(exc).__name__}: {exc}"
                        ) from exc
        return self._client

    @property
    def store_kwargs(self) -> dict[str, Any]:
        """Creation settings passed with every write and query."""
        return {
            "collection_metadata": self.collection_metadata,
            "auto_create_collection": self.auto_create_collection,
        }

    def _name(self, collection_name: str | None) -> str:
        return collection_name or self.collection or DEFAULT_COLLECTION

    def _open(self, collection_name: str | None, kwargs: dict[str, Any], *, create: bool) -> Any:
        name = self._name(collection_name)
        create = create and kwargs.get("auto_create_collection", self.auto_create_collection)
        try:
            if create:
                metadata = kwargs.get("collection_metadata", self.collection_metadata) or None
                return self.client.get_or_create_collection(
                    name=name, metadata=metadata, embedding_function=None
                )
            return self.client.get_collection(name=name, embedding_function=None)
        except Exception as exc:
            raise self._error(exc, f"collection {name!r}") from exc

    def _error(self, exc: Exception, what: str) -> VectorStoreError:
        if isinstance(exc, VectorStoreError):
            return exc
        from chromadb.errors import NotFoundError

        if isinstance(exc, NotFoundError):
            return VectorStoreError(
                f"{what}: does not exist in Chroma at {self.persist_directory or '(memory)'} "
                f"(collections: {self.list_collections()}); create it with "
                "create_collection_if_not_exists or set auto_create_collection"
            )
        hint = ""
        if "dimension" in str(exc):
            hint = " (vectors of one collection must come from one embedding model)"
        return VectorStoreError(f"Chroma rejected {what}: {exc}{hint}")

    def create_collection_if_not_exists(self, name: str, **kwargs: Any) -> None:
        """Create collection ``name`` unless it exists; ``metadata=`` replaces
        ``collection_metadata`` for it. Other keyword arguments are ignored."""
        metadata = kwargs.get("metadata") or self.collection_metadata or None
        try:
            self.client.get_or_create_collection(
                name=name, metadata=metadata, embedding_function=None
            )
        except Exception as exc:
            raise self._error(exc, f"creating collection {name!r}") from exc

    def delete_collection(self, name: str) -> None:
        """Delete collection ``name`` and its documents."""
        try:
            self.client.delete_collection(name=name)
        except Exception as exc:
            raise self._error(exc, f"collection {name!r}") from exc

    def list_collections(self) -> list[str]:
        """The collection names, sorted."""
        return sorted(c if isinstance(c, str) else c.name for c in self.client.list_collections())

    def close(self) -> None:
        """Forget the client (Chroma keeps its process-wide system for other stores)."""
        self._client = None

    # -- writing -------------------------------------------------------------------------------
    @staticmethod
    def _replacing(collection: Any, ids: list[str], metadatas: list[Any]) -> list[Any]:
        """``metadatas`` for writing over ``ids``: Chroma merges a written metadata dict into
        the stored one, so keys that are gone are written as None (which removes them)."""
        stored = collection.get(ids=ids, include=["metadatas"])
        old = dict(zip(stored["ids"], stored["metadatas"] or [], strict=False))
        out = []
        for doc_id, new in zip(ids, metadatas, strict=True):
            merged = {k: None for k in (old.get(doc_id) or {}) if k not in (new or {})}
            merged.update(new or {})
            out.append(merged or None)
        return out

    def _add_embedding(
        self,
        *,
        documents: list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> list[str]:
        collection = self._open(collection_name, kwargs, create=True)
        all_ids: list[str] = []
        for chunk in _chunks(documents, self.client.get_max_batch_size()):
            if any(d.embedding is None for d in chunk):
                raise VectorStoreError("every document written to Chroma needs its vector")
            ids = [d.id or uuid.uuid4().hex for d in chunk]
            try:
                collection.upsert(
                    ids=ids,
                    embeddings=[d.embedding for d in chunk],
                    documents=[d.content for d in chunk],
                    metadatas=self._replacing(collection, ids, [d.metadata for d in chunk]),
                )
            except Exception as exc:
                raise self._error(exc, f"adding to collection {collection.name!r}") from exc
            all_ids.extend(ids)
        return all_ids

    def _update_embedding(
        self,
        *,
        documents: list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        collection = self._open(collection_name, kwargs, create=False)
        ids = [str(d.id) for d in documents]
        try:
            stored = collection.get(ids=ids, include=["embeddings"])
        except Exception as exc:
            raise self._error(exc, f"reading collection {collection.name!r}") from exc
        vectors = dict(zip(stored["ids"], stored["embeddings"], strict=False))
        missing = [i for i in ids if i not in vectors]
        if missing:
            raise VectorStoreError(
                f"cannot update {missing}: not in collection {collection.name!r}"
            )
        # Chroma would embed documents given without a vector with its own (downloaded)
        # model: a document without one keeps its stored vector, passed explicitly.
        embeddings = [
            d.embedding if d.embedding is not None else [float(x) for x in vectors[str(d.id)]]
            for d in documents
        ]
        try:
            collection.update(
                ids=ids,
                embeddings=embeddings,
                documents=[d.content for d in documents],
                metadatas=self._replacing(collection, ids, [d.metadata for d in documents]),
            )
        except Exception as exc:
            raise self._error(exc, f"updating collection {collection.name!r}") from exc

    # -- reading -------------------------------------------------------------------------------
    def get(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = 100,
        **kwargs: Any,
    ) -> list[Document]:
        """Stored documents by id and/or filter (see :meth:`BaseVectorStore.get`); also
        takes Chroma's ``offset`` and ``where_document``."""
        where = to_chroma_where(parse_filter(filters, kwargs.get("where")))
        collection = self._open(collection_name, kwargs, create=False)
        wanted = [ids] if isinstance(ids, str) else ids
        if wanted is not None and not wanted:
            return []
        try:
            found = collection.get(
                ids=wanted,
                where=where,
                limit=None if wanted is not None else limit,
                offset=None if wanted is not None else kwargs.get("offset"),
                where_document=kwargs.get("where_document"),
                include=["documents", "metadatas"],
            )
        except Exception as exc:
            raise self._error(exc, f"reading collection {collection.name!r}") from exc
        docs = [
            Document(id=i, content=content or "", metadata=dict(meta or {}))
            for i, content, meta in zip(
                found["ids"], found["documents"], found["metadatas"], strict=False
            )
        ]
        if wanted is not None:
            by_id = {d.id: d for d in docs}
            docs = [by_id[i] for i in wanted if i in by_id]
        return docs

    def delete(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remove documents by id and/or filter; with neither, all of the collection."""
        where = to_chroma_where(parse_filter(filters, kwargs.get("where")))
        where_document = kwargs.get("where_document")
        collection = self._open(collection_name, kwargs, create=False)
        wanted = [ids] if isinstance(ids, str) else ids
        try:
            if wanted is None and where is None and where_document is None:
                # Chroma refuses a delete without a selector: name every id.
                wanted = collection.get(include=[])["ids"]
                if not wanted:
                    return
            if wanted is not None and not wanted:
                return
            collection.delete(ids=wanted, where=where, where_document=where_document)
        except Exception as exc:
            raise self._error(exc, f"deleting from collection {collection.name!r}") from exc

    def _query_embedding(
        self,
        embedding: list[float],
        limit: int = 10,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        where = to_chroma_where(parse_filter(filters, kwargs.get("where")))
        collection = self._open(collection_name, kwargs, create=True)
        if limit <= 0:
            return []
        try:
            found = collection.query(
                query_embeddings=[list(embedding)],
                n_results=limit,
                where=where,
                where_document=kwargs.get("where_document"),
                include=["documents", "metadatas", "distances"],
            )
        except Exception as exc:
            raise self._error(exc, f"querying collection {collection.name!r}") from exc
        space = _space(collection)
        return [
            Document(
                id=i,
                content=content or "",
                metadata=dict(meta or {}),
                score=(-dist if space == "l2" else 1.0 - dist) if dist is not None else None,
            )
            for i, content, meta, dist in zip(
                found["ids"][0],
                (found["documents"] or [[]])[0],
                (found["metadatas"] or [[]])[0],
                (found["distances"] or [[]])[0],
                strict=False,
            )
        ]


def _space(collection: Any) -> str:
    """The HNSW distance of ``collection`` (Chroma's default is l2)."""
    config = getattr(collection, "configuration", None) or {}
    space = (config.get("hnsw") or {}).get("space") if isinstance(config, dict) else None
    if space is None:
        space = (collection.metadata or {}).get("hnsw:space", "l2")
    return str(getattr(space, "value", space))
