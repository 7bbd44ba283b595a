"""Milvus as a vector store (``pip install 'flink-agents-py[milvus]'``): Milvus Lite (a local
file, no server to run) or a Milvus server / Zilliz Cloud.

Example::

    # Milvus Lite: a file (Linux and macOS)
    ResourceDescriptor(clazz=MilvusVectorStore, uri="/var/lib/agent/milvus.db",
                       embedding_model="embedder", collection="docs")
    # a server
    ResourceDescriptor(clazz=MilvusVectorStore, uri="http://milvus:19530",
                       embedding_model="embedder", collection="docs")

Each collection has the fields ``id`` (our id, the primary key), ``vector`` (float vector,
``AUTOINDEX`` with cosine metric: ``score`` is the cosine similarity), ``content`` and
``metadata`` (JSON); filters become Milvus boolean expressions over ``metadata["field"]``
(``$ne`` / ``$nin`` are checked by the store: see :func:`to_milvus_expr`). The token
(``token`` or ``MILVUS_TOKEN``, e.g. ``user:password``) stays out of the plan and logs.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
from typing import Any

from pydantic import Field, PrivateAttr, SecretStr

from flink_agents.api.vector_stores._filters import Condition, Junction, Node
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.errors import VectorStoreError
from flink_agents.integrations._common import secret_value
from flink_agents.integrations._extras import require
from flink_agents.integrations.vector_stores._base import SizedCollectionStore
from flink_agents.integrations.vector_stores._common import (
    chunks,
    kept,
    render_filter,
    to_document,
)

DEFAULT_COLLECTION = "flink_agents_milvus_collection"
_BATCH = 256
_MAX_TEXT = 65535
_MAX_ID = 512
_ALL = 'id != ""'
_FIELDS = ["id", "content", "metadata"]

# Milvus Lite runs one server per file: clients of one process share it.
_LOCAL_CLIENTS: dict[str, Any] = {}
_LOCAL_LOCK = threading.Lock()


@atexit.register
def _close_local_clients() -> None:
    """Close the Milvus Lite clients of this process (their servers stop with them)."""
    with _LOCAL_LOCK:
        clients = list(_LOCAL_CLIENTS.items())
        _LOCAL_CLIENTS.clear()
    for path, client in clients:
        try:
            client.close()
            from milvus_lite.server_manager import server_manager_instance

            server_manager_instance.release_server(path)  # its server process stops
        except Exception:  # noqa: BLE001 - nothing to do about it at exit
            pass


def _pymilvus(user: str) -> Any:
    return require("pymilvus", extra="milvus", user=user)


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value))


def to_milvus_expr(node: Node | None) -> str | None:
    """The filter as a Milvus boolean expression over ``metadata[...]``, or None for no
    expression.

    ``$ne`` / ``$nin`` are not sent: a missing field must match them, which Milvus' JSON
    comparisons (null, hence false, for a missing key) cannot say without ``exists``, which
    Milvus Lite 2.5 lacks. The expression is then looser than the filter (such a condition
    is dropped from an AND; an OR holding one is dropped whole), and the store checks every
    result against the filter itself (fetching more for a query).
    """

    def junction(op: str, parts: list[str | None]) -> str | None:
        if op == "$or":
            if any(p is None for p in parts):
                return None
            return "(" + " or ".join(str(p) for p in parts) + ")"
        known = [p for p in parts if p is not None]
        return "(" + " and ".join(known) + ")" if known else None

    def leaf(cond: Condition) -> str | None:
        field = f"metadata[{json.dumps(cond.field)}]"
        op, value = cond.op, cond.value
        if op == "$eq":
            return f"({field} == {_literal(value)})"
        if op == "$in":
            return "(" + " or ".join(f"{field} == {_literal(v)}" for v in value) + ")"
        if op in ("$ne", "$nin"):
            return None
        symbol = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
        return f"({field} {symbol} {_literal(value)})"

    return render_filter(node, leaf, junction)


def _exact(node: Node | None) -> bool:
    """Whether :func:`to_milvus_expr` says all of ``node`` (no result is dropped after)."""
    if node is None:
        return True
    if isinstance(node, Junction):
        return all(_exact(p) for p in node.parts)
    return node.op not in ("$ne", "$nin")


class MilvusVectorStore(SizedCollectionStore):
    """Milvus Lite (a file) or a Milvus server.

    Attributes:
        uri: a file path for Milvus Lite (``./milvus.db``), or a server's URL
            (``http://host:19530``).
        token: a server's token (``user:password`` or an API key; default: ``MILVUS_TOKEN``).
        db_name: the database of a server.
        timeout: seconds a request may take.
        embedding_model: name of the embedding model setup for texts without vectors.
        collection: the default collection.
        dimension: vector size of collections created before a vector was seen.
        auto_create_collection: create missing collections on write and query.
    """

    uri: str = "./milvus_flink_agents.db"
    token: SecretStr | None = Field(default=None, repr=False)
    db_name: str | None = None
    timeout: float | None = Field(default=None, gt=0)
    collection: str | None = DEFAULT_COLLECTION

    _client: Any = PrivateAttr(default=None)

    def _default_collection(self) -> str:
        return DEFAULT_COLLECTION

    def _local(self) -> bool:
        return "://" not in self.uri

    @property
    def client(self) -> Any:
        """The ``MilvusClient`` (made on first use; Milvus Lite ones shared per file)."""
        if self._client is None:
            pymilvus = _pymilvus(type(self).__name__)
            try:
                if self._local():
                    key = os.path.abspath(self.uri)
                    with _LOCAL_LOCK:
                        client = _LOCAL_CLIENTS.get(key)
                        if client is None:
                            client = _LOCAL_CLIENTS[key] = pymilvus.MilvusClient(key)
                    self._client = client
                else:
                    kwargs: dict[str, Any] = {"uri": self.uri}
                    token = secret_value(self.token) or os.environ.get("MILVUS_TOKEN")
                    if token:
                        kwargs["token"] = token
                    if self.db_name:
                        kwargs["db_name"] = self.db_name
                    if self.timeout:
                        kwargs["timeout"] = self.timeout
                    self._client = pymilvus.MilvusClient(**kwargs)
            except Exception as exc:
                raise VectorStoreError(
                    f"cannot open Milvus at {self.uri}: {type(exc).__name__}: {exc}"
                ) from exc
        return self._client

    # -- collections ---------------------------------------------------------------------
    def list_collections(self) -> list[str]:
        """The collection names, sorted."""
        return sorted(self.client.list_collections())

    def _location(self) -> str:
        return f"Milvus at {self.uri}"

    def _collection_exists(self, name: str) -> bool:
        return bool(self.client.has_collection(name))

    def _dimension(self, name: str) -> int | None:
        if name in self._dims:
            return self._dims[name]
        if not self.client.has_collection(name):
            return None
        fields = self.client.describe_collection(name)["fields"]
        size = next((f["params"]["dim"] for f in fields if f["name"] == "vector"), None)
        if size is None:
            raise VectorStoreError(
                f"Milvus collection {name!r} was not made by this store (no 'vector' field)"
            )
        self.client.load_collection(name)  # a reopened collection starts released
        self._dims[name] = int(size)
        return int(size)

    def _create(self, name: str, size: int) -> None:
        pymilvus = _pymilvus(type(self).__name__)
        schema = pymilvus.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        types = pymilvus.DataType
        schema.add_field("id", types.VARCHAR, is_primary=True, max_length=_MAX_ID)
        schema.add_field("vector", types.FLOAT_VECTOR, dim=size)
        schema.add_field("content", types.VARCHAR, max_length=_MAX_TEXT)
        schema.add_field("metadata", types.JSON)
        index = self.client.prepare_index_params()
        index.add_index(field_name="vector", index_type="AUTOINDEX", metric_type="COSINE")
        try:
            self.client.create_collection(
                name, schema=schema, index_params=index, consistency_level="Strong"
            )
        except Exception as exc:
            if not self.client.has_collection(name):
                raise VectorStoreError(f"cannot create collection {name!r}: {exc}") from exc
        self._dims[name] = self._dimension(name) or size

    def _drop(self, name: str) -> None:
        self.client.drop_collection(name)

    def close(self) -> None:
        """Forget the client (Milvus Lite clients stay open for the process's other stores)."""
        if self._client is not None and not self._local():
            self._client.close()
        self._client = None

    # -- writing ---------------------------------------------------------------------------
    @staticmethod
    def _row(doc: Document) -> dict[str, Any]:
        if len(str(doc.id)) > _MAX_ID:
            raise VectorStoreError(f"document id {str(doc.id)[:40]!r}... is over {_MAX_ID} chars")
        if len(doc.content.encode()) > _MAX_TEXT:
            raise VectorStoreError(
                f"document {doc.id!r}: content over {_MAX_TEXT} bytes (Milvus' VARCHAR limit); "
                "split it into chunks"
            )
        return {
            "id": str(doc.id),
            "vector": [float(x) for x in doc.embedding or []],
            "content": doc.content,
            "metadata": dict(doc.metadata),
        }

    def _write(self, name: str, docs: list[Document]) -> None:
        for part in chunks(docs, _BATCH):
            self.client.upsert(name, data=[self._row(d) for d in part])

    def _stored_vectors(self, name: str, ids: list[str]) -> dict[str, list[float]]:
        rows = self.client.get(name, ids=ids, output_fields=["vector"])
        return {r["id"]: list(r["vector"]) for r in rows}

    def _remove(self, name: str, ids: list[str]) -> None:
        for part in chunks(ids, _BATCH):
            self.client.delete(name, ids=list(part))

    # -- reading ---------------------------------------------------------------------------
    @staticmethod
    def _document(row: dict[str, Any], score: float | None = None) -> Document:
        entity = row.get("entity", row)
        return to_document(row.get("id", entity.get("id")), entity, score)

    def _fetch(self, name: str, ids: list[str], where: Node | None) -> list[Document]:
        rows = self.client.get(name, ids=ids, output_fields=_FIELDS)
        return [self._document(r) for r in rows]

    def _page(
        self, name: str, where: Node | None, size: int, cursor: Any
    ) -> tuple[list[Document], Any]:
        offset = cursor or 0
        rows = self.client.query(
            name,
            filter=to_milvus_expr(where) or _ALL,
            output_fields=_FIELDS,
            limit=size,
            offset=offset,
        )
        following = offset + len(rows) if len(rows) >= size else None
        return [self._document(r) for r in rows], following

    def _search(
        self, name: str, embedding: list[float], limit: int, where: Node | None
    ) -> list[Document]:
        # A looser expression may let through hits the filter drops: ask for more.
        fetch = limit if _exact(where) else max(limit * 4, 50)
        hits = self.client.search(
            name,
            data=[[float(x) for x in embedding]],
            limit=fetch,
            filter=to_milvus_expr(where) or "",
            output_fields=["content", "metadata"],
            search_params={"metric_type": "COSINE"},
        )[0]
        return kept([self._document(h, float(h["distance"])) for h in hits], where)[:limit]
