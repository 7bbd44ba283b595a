"""Qdrant as a vector store (``pip install 'flink-agents-py[qdrant]'``): embedded (local
mode: a directory, or memory) or a Qdrant server.

Example::

    # embedded, in a directory (one process at a time; on Flink: thread mode)
    ResourceDescriptor(clazz=QdrantVectorStore, path="/var/lib/agent/qdrant",
                       embedding_model="embedder", collection="docs")
    # a server
    ResourceDescriptor(clazz=QdrantVectorStore, url="https://qdrant.example:6333",
                       embedding_model="embedder", collection="docs")

Collections are Qdrant collections with one unnamed vector (cosine distance: ``score`` is the
cosine similarity). A point's payload holds our id (``doc_id``), the text (``content``) and
the metadata (``metadata``, filtered as ``metadata.<field>``); point ids are UUIDs made from
our ids. The API key (``api_key`` or ``QDRANT_API_KEY``) stays out of the plan and logs.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from pydantic import Field, PrivateAttr, SecretStr

from flink_agents.api.vector_stores._filters import Condition, Node
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.errors import VectorStoreError
from flink_agents.integrations._common import secret_value
from flink_agents.integrations._extras import require
from flink_agents.integrations.vector_stores._base import SizedCollectionStore
from flink_agents.integrations.vector_stores._common import (
    chunks,
    kept,
    point_id,
    render_filter,
    to_document,
)

DEFAULT_COLLECTION = "flink_agents_qdrant_collection"
_BATCH = 256

# Qdrant's local mode allows one client per directory and process: stores of one process
# share it (resources are created per slot; in thread mode the slots share the process).
_LOCAL_CLIENTS: dict[str, Any] = {}
_LOCAL_LOCK = threading.Lock()


class _Serialized:
    """An embedded ``QdrantClient`` whose calls run one at a time.

    Qdrant's local mode keeps its points in in-process arrays and SQLite without any lock:
    concurrent writes from several threads (keys' runs call the store from the pool, e.g.
    long-term memory's ``durable_execute_async``) lost points (1 run in 3 under load). A
    remote client (HTTP/gRPC) is thread-safe and is not wrapped.
    """

    def __init__(self, client: Any) -> None:
        self._wrapped = client
        self._lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._wrapped, name)
        if not callable(attr):
            return attr
        lock = self._lock

        def serialized(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return attr(*args, **kwargs)

        return serialized


@atexit.register
def _close_local_clients() -> None:
    # Closed before the interpreter tears modules down (a client's __del__ then fails).
    with _LOCAL_LOCK:
        clients = list(_LOCAL_CLIENTS.values())
        _LOCAL_CLIENTS.clear()
    for client in clients:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - nothing to do about it at exit
            pass


def _qdrant(user: str) -> Any:
    return require("qdrant_client", extra="qdrant", user=user)


def to_qdrant_filter(node: Node | None, models: Any) -> Any:
    """The filter as a ``qdrant_client.models.Filter`` over ``metadata.<field>`` (None: none).

    Equality of floats is a closed range (Qdrant matches only keywords, integers and bools
    by value); a missing field matches ``$ne`` / ``$nin`` (they are ``must_not``).
    """

    def value_condition(field: str, value: Any) -> Any:
        key = f"metadata.{field}"
        if isinstance(value, float) and not isinstance(value, bool):
            return models.FieldCondition(key=key, range=models.Range(gte=value, lte=value))
        return models.FieldCondition(key=key, match=models.MatchValue(value=value))

    def junction(op: str, parts: list[Any]) -> Any:
        return models.Filter(must=parts) if op == "$and" else models.Filter(should=parts)

    def leaf(cond: Condition) -> Any:
        field, op, value = cond.field, cond.op, cond.value
        if op == "$eq":
            return models.Filter(must=[value_condition(field, value)])
        if op == "$ne":
            return models.Filter(must_not=[value_condition(field, value)])
        if op in ("$in", "$nin"):
            options = models.Filter(should=[value_condition(field, v) for v in value])
            return (
                models.Filter(must=[options]) if op == "$in" else models.Filter(must_not=[options])
            )
        bound = {"$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}[op]
        return models.Filter(
            must=[
                models.FieldCondition(key=f"metadata.{field}", range=models.Range(**{bound: value}))
            ]
        )

    return render_filter(node, leaf, junction)


class QdrantVectorStore(SizedCollectionStore):
    """Qdrant, embedded or as a server.

    Attributes:
        path: a directory for the embedded (local mode) store.
        location: ``":memory:"`` for an embedded store in memory (the default when neither
            ``path`` nor ``url``/``host`` is given), or a URL.
        url: a server's URL (``http://host:6333``).
        host: a server's host (with ``port``).
        port: a server's REST port.
        api_key: a server's API key (default: ``QDRANT_API_KEY``).
        timeout: seconds a server request may take.
        embedding_model: name of the embedding model setup for texts without vectors.
        collection: the default collection.
        dimension: vector size of collections created before a vector was seen.
        auto_create_collection: create missing collections on write and query.
    """

    path: str | None = None
    location: str | None = None
    url: str | None = None
    host: str | None = None
    port: int | None = None
    api_key: SecretStr | None = Field(default=None, repr=False)
    timeout: float | None = Field(default=None, gt=0)
    collection: str | None = DEFAULT_COLLECTION

    _client: Any = PrivateAttr(default=None)

    def _default_collection(self) -> str:
        return DEFAULT_COLLECTION

    def _where(self) -> str:
        return self.path or self.url or self.host or self.location or ":memory:"

    @property
    def client(self) -> Any:
        """The ``QdrantClient`` (made on first use; embedded ones shared per directory)."""
        if self._client is None:
            qdrant = _qdrant(type(self).__name__)
            remote = self.url or self.host or (self.location and self.location != ":memory:")
            try:
                if self.path and not remote:
                    key = os.path.abspath(self.path)
                    with _LOCAL_LOCK:
                        client = _LOCAL_CLIENTS.get(key)
                        if client is None:
                            client = _Serialized(qdrant.QdrantClient(path=key))
                            _LOCAL_CLIENTS[key] = client
                    self._client = client
                elif remote:
                    self._client = qdrant.QdrantClient(
                        url=self.url,
                        host=self.host,
                        port=self.port or 6333,
                        location=self.location,
                        api_key=secret_value(self.api_key) or os.environ.get("QDRANT_API_KEY"),
                        timeout=int(self.timeout) if self.timeout else None,
                    )
                else:
                    self._client = _Serialized(qdrant.QdrantClient(location=":memory:"))
            except Exception as exc:
                raise VectorStoreError(
                    f"cannot open Qdrant at {self._where()}: {type(exc).__name__}: {exc}"
                ) from exc
        return self._client

    @property
    def _models(self) -> Any:
        return _qdrant(type(self).__name__).models

    # -- collections ---------------------------------------------------------------------
    def list_collections(self) -> list[str]:
        """The collection names, sorted."""
        return sorted(c.name for c in self.client.get_collections().collections)

    def _location(self) -> str:
        return f"Qdrant at {self._where()}"

    def _collection_exists(self, name: str) -> bool:
        return bool(self.client.collection_exists(name))

    def _dimension(self, name: str) -> int | None:
        if name in self._dims:
            return self._dims[name]
        if not self.client.collection_exists(name):
            return None
        vectors = self.client.get_collection(name).config.params.vectors
        size = getattr(vectors, "size", None)
        if size is not None:
            self._dims[name] = int(size)
        return size

    def _create(self, name: str, size: int) -> None:
        models = self._models
        try:
            if not self.client.collection_exists(name):
                self.client.create_collection(
                    name,
                    vectors_config=models.VectorParams(size=size, distance=models.Distance.COSINE),
                )
        except Exception as exc:
            if not self.client.collection_exists(name):  # not a lost race: a real failure
                raise VectorStoreError(f"cannot create collection {name!r}: {exc}") from exc
        self._dims[name] = self._dimension(name) or size

    def _drop(self, name: str) -> None:
        self.client.delete_collection(name)

    def close(self) -> None:
        """Forget the client (embedded clients stay open for the process's other stores)."""
        if self._client is not None and (self.url or self.host):
            self._client.close()
        self._client = None

    # -- writing ---------------------------------------------------------------------------
    def _point(self, doc: Document) -> Any:
        doc_id = str(doc.id)
        return self._models.PointStruct(
            id=point_id(doc_id),
            vector=list(doc.embedding or []),
            payload={"doc_id": doc_id, "content": doc.content, "metadata": dict(doc.metadata)},
        )

    def _write(self, name: str, docs: list[Document]) -> None:
        for part in chunks(docs, _BATCH):
            self.client.upsert(name, points=[self._point(d) for d in part])

    def _stored_vectors(self, name: str, ids: list[str]) -> dict[str, list[float]]:
        points = self.client.retrieve(
            name, ids=[point_id(i) for i in ids], with_payload=True, with_vectors=True
        )
        return {p.payload["doc_id"]: list(p.vector) for p in points}

    def _remove(self, name: str, ids: list[str]) -> None:
        for part in chunks([point_id(i) for i in ids], _BATCH):
            self.client.delete(name, points_selector=self._models.PointIdsList(points=list(part)))

    # -- reading ---------------------------------------------------------------------------
    @staticmethod
    def _document(point: Any, score: float | None = None) -> Document:
        payload = point.payload or {}
        return to_document(payload.get("doc_id", point.id), payload, score)

    def _fetch(self, name: str, ids: list[str], where: Node | None) -> list[Document]:
        points = self.client.retrieve(name, ids=[point_id(i) for i in ids], with_payload=True)
        return [self._document(p) for p in points]

    def _page(
        self, name: str, where: Node | None, size: int, cursor: Any
    ) -> tuple[list[Document], Any]:
        points, following = self.client.scroll(
            name,
            scroll_filter=to_qdrant_filter(where, self._models),
            limit=size,
            offset=cursor,
            with_payload=True,
        )
        return [self._document(p) for p in points], following

    def _search(
        self, name: str, embedding: list[float], limit: int, where: Node | None
    ) -> list[Document]:
        found = self.client.query_points(
            name,
            query=list(embedding),
            query_filter=to_qdrant_filter(where, self._models),
            limit=limit,
            with_payload=True,
        ).points
        return kept([self._document(p, float(p.score)) for p in found], where)
