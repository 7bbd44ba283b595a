"""Ingestion for RAG: a job that embeds documents and upserts them into a vector store,
exactly once per document id.

::

    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(10_000)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env)
    docs = env.from_source(FileSource..., ...).map(json.loads)  # a bounded source
    ingested = ingest_documents(agents_env, docs, vector_store=store, embedding=embedder)
    ingested.sink_to(...)            # one {"id", "collection"} record per document
    agents_env.execute("ingest")

Every record becomes a :class:`~flink_agents.api.vector_stores.vector_store.Document`
(:func:`document_of`: a ``Document``, a text, or a dict / pydantic model / Row with
``content`` and optional ``id`` and ``metadata`` fields); one without an id gets the hash
of its content (:func:`content_id`), so the same text always has the same id. The stream
is keyed by that id, and each document is written with the store's ``add``, which replaces
a document of the same id: an upsert. So when a restore replays documents written after
the last checkpoint, they are written again over themselves, and the store ends with each
id once: the effect is exactly once per document id, with any of our vector stores. (A
write is a durable call too: a restore during a document's run does not repeat a write
that was recorded before the checkpoint.)

The same agent runs on the local environment with a list (``ingest_documents(local_env,
[...], ...)``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.errors import InputSchemaError

__all__ = [
    "DocumentIngestionAgent",
    "DocumentKey",
    "content_id",
    "document_of",
    "ingest_documents",
]

_STORE = "_ingest_vector_store"
_EMBEDDING = "_ingest_embedding"


def content_id(text: str) -> str:
    """The id of a document that has none: 32 hex digits of the SHA-256 of its text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _fields(record: Any) -> dict[str, Any] | None:
    if isinstance(record, dict):
        return record
    if isinstance(record, BaseModel):
        return record.model_dump()
    as_dict = getattr(record, "as_dict", None)  # a pyflink Row
    return as_dict() if callable(as_dict) else None


def document_of(
    record: Any,
    *,
    id_field: str = "id",
    content_field: str = "content",
    metadata_fields: tuple[str, ...] | list[str] | None = None,
) -> Document:
    """The document a record stands for, with its id (see the module docstring).

    Args:
        record: a ``Document``, a text, or a dict / pydantic model / Row.
        id_field: the field with the document's id (missing or empty: the content's hash).
        content_field: the field with its text.
        metadata_fields: further fields copied into the metadata (besides a ``metadata``
            dict field, which is taken as it is).

    Raises:
        InputSchemaError: the record has no text to store.
    """
    if isinstance(record, Document):
        if record.id:
            return record
        return record.model_copy(update={"id": content_id(record.content)})
    if isinstance(record, str):
        return Document(content=record, id=content_id(record))
    fields = _fields(record)
    content = fields.get(content_field) if fields is not None else None
    if not isinstance(content, str):
        raise InputSchemaError(
            f"a document needs its text: a string, a Document, or a record with a text "
            f"field {content_field!r} (content_field=); got {record!r}"[:600],
            action="ingest_document_action",
        )
    assert fields is not None
    metadata = dict(fields.get("metadata") or {})
    for name in metadata_fields or ():
        if name in fields:
            metadata[name] = fields[name]
    own = fields.get(id_field)
    doc_id = str(own) if own not in (None, "") else content_id(content)
    embedding = fields.get("embedding")
    return Document(
        content=content,
        id=doc_id,
        metadata=metadata,
        embedding=list(embedding) if embedding is not None else None,
    )


class DocumentKey:
    """A key selector: a record's document id (picklable, so a Flink job can ship it)."""

    def __init__(self, id_field: str = "id", content_field: str = "content") -> None:
        self.id_field = id_field
        self.content_field = content_field

    def __call__(self, record: Any) -> str:
        doc = document_of(record, id_field=self.id_field, content_field=self.content_field)
        return str(doc.id)


async def ingest_document_action(event: InputEvent, ctx: RunnerContext) -> None:
    """Embed the input's document (unless it has a vector) and upsert it by id."""
    fields = ctx.get_action_config_value("metadata_fields")
    doc = document_of(
        event.input,
        id_field=ctx.get_action_config_value("id_field"),
        content_field=ctx.get_action_config_value("content_field"),
        metadata_fields=tuple(fields) if fields else None,
    )
    store = ctx.get_resource(ctx.get_action_config_value("vector_store"), ResourceType.VECTOR_STORE)
    collection = ctx.get_action_config_value("collection")
    # The store's add replaces a document of the same id: writing one again is harmless.
    await ctx.durable_execute_async(store.add, [doc], collection)  # type: ignore[attr-defined]
    written = collection or getattr(store, "collection", None)
    ctx.send_event(OutputEvent(output={"id": doc.id, "collection": written}))


class DocumentIngestionAgent(Agent):
    """Upserts each input document into a vector store (see the module docstring).

    Args:
        vector_store: descriptor of the vector store, or the name of one added to the
            environment; a descriptor without ``embedding_model`` gets ``embedding``.
        embedding: descriptor (or name) of the embedding model setup that embeds the
            documents; None when the store names its own (or documents bring vectors).
        collection: the collection written (default: the store's).
        id_field: the records' id field.
        content_field: the records' text field.
        metadata_fields: fields copied into each document's metadata.
        name: the agent's name.

    Raises:
        TypeError: an argument of the wrong type.
        ValueError: ``embedding`` given for a store that names another one, or for a
            store of the environment.
    """

    def __init__(
        self,
        vector_store: ResourceDescriptor | str,
        embedding: ResourceDescriptor | str | None = None,
        *,
        collection: str | None = None,
        id_field: str = "id",
        content_field: str = "content",
        metadata_fields: list[str] | tuple[str, ...] | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.name = name
        self.id_field = id_field
        self.content_field = content_field
        embedding_name: str | None
        if embedding is None or isinstance(embedding, str):
            embedding_name = embedding
        elif isinstance(embedding, ResourceDescriptor):
            self.add_resource(_EMBEDDING, ResourceType.EMBEDDING_MODEL, embedding)
            embedding_name = _EMBEDDING
        else:
            raise TypeError(f"embedding must be a ResourceDescriptor or a name, got {embedding!r}")
        if isinstance(vector_store, str):
            if embedding_name is not None:
                raise ValueError(
                    f"vector_store {vector_store!r} is a resource of the environment: set its "
                    "embedding_model there and leave embedding= out"
                )
            store_name = vector_store
        elif isinstance(vector_store, ResourceDescriptor):
            if embedding_name is not None:
                own = vector_store.arguments.get("embedding_model")
                if own is not None and own != embedding_name:
                    raise ValueError(
                        f"the vector store names embedding_model={own!r} and embedding= is "
                        "given too: pass one of them"
                    )
                vector_store = _with_argument(vector_store, "embedding_model", embedding_name)
            self.add_resource(_STORE, ResourceType.VECTOR_STORE, vector_store)
            store_name = _STORE
        else:
            raise TypeError(
                f"vector_store must be a ResourceDescriptor or a name, got {vector_store!r}"
            )
        self.add_action(
            "ingest_document_action",
            [InputEvent],
            ingest_document_action,
            vector_store=store_name,
            collection=collection,
            id_field=id_field,
            content_field=content_field,
            metadata_fields=list(metadata_fields) if metadata_fields else None,
        )


def _with_argument(descriptor: ResourceDescriptor, name: str, value: Any) -> ResourceDescriptor:
    import copy

    changed = copy.copy(descriptor)  # the class object kept (a job script's travels by value)
    changed.arguments = {**descriptor.arguments, name: value}
    return changed


def ingest_documents(
    agents_env: Any,
    documents: Any,
    vector_store: ResourceDescriptor | str,
    embedding: ResourceDescriptor | str | None = None,
    **options: Any,
) -> Any:
    """Build the ingestion: ``documents`` keyed by document id through a
    :class:`DocumentIngestionAgent`.

    Args:
        agents_env: an ``AgentsExecutionEnvironment`` (Flink, or local).
        documents: a DataStream of records (Flink), or a list of them (local).
        vector_store: see :class:`DocumentIngestionAgent`.
        embedding: see :class:`DocumentIngestionAgent`.
        **options: the agent's keyword options (``collection``, ``id_field``,
            ``content_field``, ``metadata_fields``, ``name``).

    Returns:
        Flink: the DataStream of ``{"id", "collection"}`` records, one per document (give
        it a sink: a job runs only what reaches one); local: the list ``execute()`` fills.
    """
    agent = DocumentIngestionAgent(vector_store, embedding, **options)
    key = DocumentKey(agent.id_field, agent.content_field)
    if isinstance(documents, (list, tuple)):
        items = [{"key": key(d), "value": d} for d in documents]
        return agents_env.from_list(items).apply(agent).to_list()
    return agents_env.from_datastream(documents, key_selector=key).apply(agent).to_datastream()
