"""What the vector stores over a database share (private).

- **Dimensions.** Qdrant, Milvus, pgvector, Elasticsearch/OpenSearch and Redis fix a
  collection's vector size when it is created. A collection is created on the first write
  (its vectors give the size) or by ``create_collection_if_not_exists(name, dimension=...)``;
  without a size there, the store's ``dimension`` is used, else the embedding model is asked
  once for the vector of a probe text.
- **Filters.** Each store translates the common filter language
  (``flink_agents.api.vector_stores._filters``) into its own, and every result is checked
  again with :func:`matches`, so stores whose native comparison is looser (``True == 1``,
  ``1 == "1"``) still mean exactly what the language says.
- **Ids.** Our ids are strings; a store that needs other ids (Qdrant: UUIDs) maps them with
  :func:`point_id` and keeps ours in the payload.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from pydantic import Field, PrivateAttr

from flink_agents.api.vector_stores._filters import (
    Condition,
    Junction,
    Node,
    matches,
    parse_filter,
)
from flink_agents.api.vector_stores.vector_store import (
    CollectionManageableVectorStore,
    Document,
)
from flink_agents.errors import VectorStoreError

#: Text embedded to learn an embedding model's vector size.
PROBE_TEXT = "dimension probe"
_NAMESPACE = uuid.UUID("6f1e3f9a-6c3a-4b8e-9a53-3b7f3d1e2a10")
_T = TypeVar("_T")


def point_id(doc_id: str) -> str:
    """A stable UUID for one of our ids (stores whose ids must be UUIDs or integers)."""
    return str(uuid.uuid5(_NAMESPACE, doc_id))


def new_id() -> str:
    """A fresh document id."""
    return uuid.uuid4().hex


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    """``items`` in slices of at most ``size``."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def wanted_ids(ids: str | list[str] | None) -> list[str] | None:
    """``ids`` as a list (None stays None)."""
    if ids is None:
        return None
    return [ids] if isinstance(ids, str) else [str(i) for i in ids]


def in_order(docs: list[Document], wanted: list[str]) -> list[Document]:
    """``docs`` in the order of ``wanted`` (unknown ids skipped)."""
    by_id = {d.id: d for d in docs}
    return [by_id[i] for i in wanted if i in by_id]


def where_of(filters: dict[str, Any] | None, kwargs: dict[str, Any]) -> Node | None:
    """The parsed filter of a call (``filters`` AND ``where=``)."""
    return parse_filter(filters, kwargs.get("where"))


def render_filter(
    node: Node | None,
    leaf: Callable[[Condition], _T],
    junction: Callable[[str, list[_T]], _T],
) -> _T | None:
    """A filter in a database's own syntax (None for no filter).

    The walk is the same for every store; each store says how one condition looks
    (``leaf``) and how the rendered parts of an ``$and`` / ``$or`` join (``junction(op,
    parts)``). Parts are rendered left to right, depth first (stores that collect query
    parameters while rendering rely on that order).

    Args:
        node: the parsed filter (:func:`where_of`), or None.
        leaf: renders one ``field <op> value`` condition.
        junction: joins the rendered parts of ``"$and"`` or ``"$or"``.

    Returns:
        The rendered filter, or None when ``node`` is None.
    """
    if node is None:
        return None

    def walk(part: Node) -> _T:
        if isinstance(part, Junction):
            return junction(part.op, [walk(p) for p in part.parts])
        return leaf(part)

    return walk(node)


def to_document(doc_id: Any, fields: dict[str, Any], score: float | None = None) -> Document:
    """A stored record (``content`` and ``metadata`` in ``fields``) as a :class:`Document`."""
    return Document(
        id=str(doc_id),
        content=str(fields.get("content", "")),
        metadata=dict(fields.get("metadata") or {}),
        score=score,
    )


def kept(docs: list[Document], where: Node | None) -> list[Document]:
    """``docs`` that pass ``where`` by the common semantics."""
    if where is None:
        return docs
    return [d for d in docs if matches(where, d.metadata)]


def check_vectors(documents: list[Document], dimension: int | None, collection: str) -> int:
    """The vector size of ``documents`` (all must have vectors of one size, matching
    ``dimension`` when known).

    Raises:
        VectorStoreError: a document without a vector, or sizes that differ.
    """
    size = dimension
    for doc in documents:
        if doc.embedding is None:
            raise VectorStoreError(f"document {doc.id or doc.content[:40]!r} has no vector")
        if size is None:
            size = len(doc.embedding)
        elif len(doc.embedding) != size:
            raise VectorStoreError(
                f"document {doc.id!r} has {len(doc.embedding)} dimensions, collection "
                f"{collection!r} holds {size}-dimensional vectors (the same embedding model "
                "for both?)"
            )
    if size is None:
        raise VectorStoreError("no documents to write")
    return size


def check_query_dimension(vector: list[float], dimension: int | None, collection: str) -> None:
    """A clear error when a query vector's size differs from the collection's."""
    if dimension is not None and len(vector) != dimension:
        raise VectorStoreError(
            f"the query embedding has {len(vector)} dimensions, collection {collection!r} "
            f"holds {dimension}-dimensional vectors (the same embedding model for both?)"
        )


def missing_collection(name: str, where: str, existing: list[str]) -> VectorStoreError:
    """The error for a collection that does not exist."""
    return VectorStoreError(
        f"collection {name!r} does not exist in {where} (collections: {existing}); create it "
        "with create_collection_if_not_exists or add documents to it"
    )


class DatabaseVectorStore(CollectionManageableVectorStore):
    """Base of the stores over a database whose collections have a fixed vector size.

    Attributes:
        embedding_model: name of the embedding model setup for texts without vectors.
        collection: the collection used when a call names none.
        dimension: the vector size of collections this store creates before it has seen a
            vector (default: asked of the embedding model once).
        auto_create_collection: whether writing to or querying a missing collection creates
            it (else it is a :class:`VectorStoreError`).
    """

    dimension: int | None = Field(default=None, gt=0)
    auto_create_collection: bool = True

    _probed: int | None = PrivateAttr(default=None)

    def _name(self, collection_name: str | None) -> str:
        return collection_name or self.collection or self._default_collection()

    def _default_collection(self) -> str:
        return "flink_agents"

    def _dimension_for_new(self, kwargs: dict[str, Any]) -> int:
        """The vector size of a collection created before any vector was seen."""
        given = kwargs.get("dimension") or self.dimension
        if given:
            return int(given)
        if self._probed is None:
            if self.embedding_model is None:
                raise VectorStoreError(
                    f"{type(self).__name__} cannot create a collection without its vector "
                    "size: pass dimension= (to the store or create_collection_if_not_exists) "
                    "or set embedding_model="
                )
            self._probed = len(self._embed([PROBE_TEXT])[0])
        return self._probed

    @property
    def store_kwargs(self) -> dict[str, Any]:
        return {"auto_create_collection": self.auto_create_collection}
