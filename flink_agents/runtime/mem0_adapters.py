"""mem0 on this package's resources: our chat model, embedding model and vector store behind
mem0's LLM, embedder and vector store interfaces (imported only when long-term memory is
used; needs ``pip install flink-agents-py[mem0]``).

mem0's ``Memory`` builds its parts from provider names through factories (and would make
OpenAI clients); :class:`Mem0Facade` is a ``Memory`` whose parts are handed in instead, so
nothing is registered in mem0's process-wide tables and nothing reaches a network: the LLM
is the agent's chat model, vectors come from the agent's embedding model, items live in the
agent's vector store, mem0's change history is not kept (our API does not read it), and
mem0's telemetry is switched off before mem0 is imported.

mem0 swallows some failures of its parts (a failing model call during fact extraction
leaves "no facts"; a store error while applying a decision is logged). The adapters note
every failure in the ``errors`` list of the facade, so the caller can raise it instead of
silently storing nothing.
"""

from __future__ import annotations

import builtins
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

# mem0 reads these when imported: no telemetry, and its config folder (it writes an
# anonymous id there at import) in a temporary directory unless the user chose one.
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("MEM0_DIR", os.path.join(tempfile.gettempdir(), "flink-agents-mem0"))

import mem0.memory.main as _mem0_main
import mem0.memory.telemetry as _mem0_telemetry
from mem0.embeddings.base import EmbeddingBase
from mem0.llms.base import LLMBase
from mem0.memory.utils import extract_json, remove_code_blocks
from mem0.vector_stores.base import VectorStoreBase

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.vector_stores.vector_store import (
    BaseVectorStore,
    CollectionManageableVectorStore,
    Document,
)
from flink_agents.errors import ModelCallError

# Even when mem0 was imported earlier with telemetry on, nothing is sent from here on.
_mem0_telemetry.MEM0_TELEMETRY = False
_mem0_main.MEM0_TELEMETRY = False

#: Collection of the items when the vector store names none.
DEFAULT_COLLECTION = "flink_agents_mem0_ltm"

#: mem0's own operator names (from its AND/OR filters) -> ours.
_BARE_OPERATORS = {op: f"${op}" for op in ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin")}


def from_mem0_filters(filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """mem0's filter dict in the vector store language (``{"n": {"gte": 3}}`` ->
    ``{"n": {"$gte": 3}}``); ``$``-operators pass unchanged."""
    if filters is None:
        return None
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if key in ("$and", "$or") and isinstance(value, list):
            out[key] = [from_mem0_filters(v) if isinstance(v, Mapping) else v for v in value]
        elif isinstance(value, Mapping):
            out[key] = {_BARE_OPERATORS.get(op, op): v for op, v in value.items()}
        else:
            out[key] = value
    return out


def _noted(errors: list[BaseException], exc: BaseException) -> BaseException:
    errors.append(exc)
    return exc


def _is_json(text: str) -> bool:
    """Whether mem0 can read ``text`` (mem0's own two attempts)."""
    for candidate in (remove_code_blocks(text), extract_json(text)):
        try:
            json.loads(candidate, strict=False)
            return True
        except (TypeError, ValueError):
            continue
    return False


class ChatModelLlm(LLMBase):
    """mem0's LLM: the agent's chat model setup."""

    def __init__(self, chat_model: Any, errors: list[BaseException]) -> None:
        # LLMBase.__init__ only keeps and checks a config; mem0 reads none of it here.
        self.config = SimpleNamespace(model=getattr(chat_model, "model", None))
        self._chat_model = chat_model
        self._errors = errors

    def generate_response(
        self,
        messages: list[dict[str, str]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str = "auto",
        **kwargs: Any,
    ) -> str:
        """Ask the chat model; mem0 parses the JSON in the reply."""
        try:
            reply = self._chat_model.chat(
                [ChatMessage(role=MessageRole(m["role"]), content=m["content"]) for m in messages]
            )
        except Exception as exc:  # noqa: BLE001 - noted and raised on
            raise _noted(self._errors, exc) from None
        text = reply.content or ""
        if text.strip() and kwargs.get("response_format") and not _is_json(text):
            raise _noted(
                self._errors,
                ModelCallError(
                    "long-term memory: the chat model answered mem0 with text that is not "
                    f"JSON: {text[:200]!r}",
                    model=getattr(self._chat_model, "model", None),
                ),
            )
        return text


class EmbeddingModelEmbedder(EmbeddingBase):
    """mem0's embedder: the agent's embedding model setup."""

    def __init__(self, embedding_model: Any, errors: list[BaseException]) -> None:
        self.config = SimpleNamespace(embedding_dims=None)
        self._embedding_model = embedding_model
        self._errors = errors

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        """The vector of ``text``."""
        try:
            return [float(x) for x in self._embedding_model.embed(text)]
        except Exception as exc:  # noqa: BLE001 - noted and raised on
            raise _noted(self._errors, exc) from None


@dataclass
class OutputData:
    """A stored item as mem0 reads it from a vector store."""

    id: str | None
    score: float | None
    payload: dict[str, Any]


def _output(doc: Document) -> OutputData:
    payload = dict(doc.metadata)
    payload.setdefault("data", doc.content)
    return OutputData(id=doc.id, score=doc.score, payload=payload)


class VectorStoreAdapter(VectorStoreBase):
    """mem0's vector store: one collection of the agent's vector store. mem0 always passes
    vectors, so the store's vector-level methods are used; an item is a document whose
    content is the memory text and whose metadata is mem0's payload."""

    def __init__(self, store: BaseVectorStore, errors: list[BaseException]) -> None:
        self._store = store
        self._errors = errors
        self.collection_name = store.collection or DEFAULT_COLLECTION

    def _do(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - noted and raised on
            raise _noted(self._errors, exc) from None

    def create_col(self, name: str, vector_size: int | None = None, distance: Any = None) -> None:
        """Use (and create) collection ``name``."""
        self.collection_name = name
        if isinstance(self._store, CollectionManageableVectorStore):
            self._do(self._store.create_collection_if_not_exists, name)

    def insert(
        self,
        vectors: list[list[float]],
        payloads: list[dict[str, Any]] | None = None,
        ids: list[str] | None = None,
    ) -> None:
        """Store items."""
        payloads = payloads or [{} for _ in vectors]
        docs = [
            Document(
                id=ids[i] if ids else None,
                content=str(payload.get("data", "")),
                metadata=payload,
                embedding=list(vector),
            )
            for i, (vector, payload) in enumerate(zip(vectors, payloads, strict=True))
        ]
        self._do(
            self._store._add_embedding,
            documents=docs,
            collection_name=self.collection_name,
            **self._store.store_kwargs,
        )

    def search(
        self,
        query: str,
        vectors: list[float],
        limit: int = 5,
        filters: dict[str, Any] | None = None,
    ) -> list[OutputData]:
        """The items closest to ``vectors`` among those passing ``filters``."""
        docs = self._do(
            self._store._query_embedding,
            list(vectors),
            limit=limit,
            collection_name=self.collection_name,
            filters=from_mem0_filters(filters),
            **self._store.store_kwargs,
        )
        return [_output(d) for d in docs]

    def delete(self, vector_id: str) -> None:
        """Remove one item."""
        self._do(self._store.delete, ids=[vector_id], collection_name=self.collection_name)

    def update(
        self,
        vector_id: str,
        vector: list[float] | None = None,
        payload: dict[str, Any] | None = None,
    ) -> None:
        """Replace an item's payload and/or vector (what is not given is kept)."""
        if payload is None:
            stored = self.get(vector_id)
            if stored is None:
                raise _noted(self._errors, KeyError(f"no item {vector_id!r} to update"))
            payload = stored.payload
        doc = Document(
            id=vector_id,
            content=str(payload.get("data", "")),
            metadata=payload,
            embedding=list(vector) if vector is not None else None,
        )
        self._do(
            self._store._update_embedding,
            documents=[doc],
            collection_name=self.collection_name,
            **self._store.store_kwargs,
        )

    def get(self, vector_id: str) -> OutputData | None:
        """One item, or None."""
        docs = self._do(self._store.get, ids=[vector_id], collection_name=self.collection_name)
        return _output(docs[0]) if docs else None

    def list(
        self, filters: dict[str, Any] | None = None, limit: int | None = None
    ) -> builtins.list[builtins.list[OutputData]]:
        """Items passing ``filters`` (mem0 expects them wrapped in one more list)."""
        docs = self._do(
            self._store.get,
            collection_name=self.collection_name,
            filters=from_mem0_filters(filters),
            limit=limit,
        )
        return [[_output(d) for d in docs]]

    def list_cols(self) -> builtins.list[str]:
        """The store's collections."""
        if isinstance(self._store, CollectionManageableVectorStore):
            return self._do(self._store.list_collections)
        return [self.collection_name]

    def delete_col(self) -> None:
        """Delete the collection."""
        if isinstance(self._store, CollectionManageableVectorStore):
            self._do(self._store.delete_collection, self.collection_name)

    def col_info(self) -> dict[str, Any]:
        """The collection name."""
        return {"name": self.collection_name}

    def reset(self) -> None:
        """Empty the collection."""
        self._do(self._store.delete, collection_name=self.collection_name)


class _NoHistory:
    """Stands for mem0's SQLite change history, which would grow with every change and
    which our API does not read."""

    connection = None

    def add_history(self, *args: Any, **kwargs: Any) -> None:
        return None

    def get_history(self, memory_id: str) -> list[Any]:
        return []

    def close(self) -> None:
        return None


class Mem0Facade(_mem0_main.Memory):
    """A mem0 ``Memory`` over the agent's chat model, embedding model and vector store.

    Cheap to make (it only wires the adapters): the long-term memory makes one per call,
    so the failures its adapters note belong to that call alone.

    Args:
        chat_model: the chat model setup resource.
        embedding_model: the embedding model setup resource.
        vector_store: the vector store resource.
    """

    def __init__(self, chat_model: Any, embedding_model: Any, vector_store: Any) -> None:
        # Memory.__init__ would create its parts from mem0's provider factories.
        self.errors: list[BaseException] = []
        self.config = SimpleNamespace(
            llm=SimpleNamespace(config={}),
            custom_fact_extraction_prompt=None,
            custom_update_memory_prompt=None,
            graph_store=SimpleNamespace(config=None),
            version="v1.1",
        )
        self.custom_fact_extraction_prompt = None
        self.custom_update_memory_prompt = None
        self.llm = ChatModelLlm(chat_model, self.errors)
        self.embedding_model = EmbeddingModelEmbedder(embedding_model, self.errors)
        self.vector_store = VectorStoreAdapter(vector_store, self.errors)
        self.db = _NoHistory()
        self.collection_name = self.vector_store.collection_name
        self.api_version = "v1.1"
        self.reranker = None
        self.enable_graph = False
        self.graph = None

    def close(self) -> None:
        """Nothing to release (the resources belong to the agent)."""
