"""Long-term memory: named memory sets of text items, searchable by meaning, kept across runs
and restarts in a vector store (names and signatures as in Apache Flink Agents).

An action reaches it through ``ctx.long_term_memory``::

    memory_set = ctx.long_term_memory.get_memory_set("preferences")
    ids = await ctx.durable_execute_async(memory_set.add, items="Alice likes green tea.")
    hits = await ctx.durable_execute_async(memory_set.search, query="drinks", limit=3)

Every call is blocking I/O (a model, an embedding model and a vector store): calling it
through ``ctx.durable_execute_async`` runs it on a worker thread, so other keys go on, and
records its result, so a run replayed after a restore does not add the same item twice.

Items are scoped: the job identifier (``AgentConfigOptions.JOB_IDENTIFIER``, key
``job-identifier``), then the key of the input being processed, then the memory set name.
The same set name used under two keys or two job identifiers holds different items.

The backend is mem0 (``pip install flink-agents-py[mem0]``), driven by the agent's own
resources named by :class:`LongTermMemoryOptions` ``.Mem0``: a chat model setup (mem0 asks
it to extract facts and to decide how they change what is stored), an embedding model setup
and a vector store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from flink_agents.api.core_options import ConfigOption, register_options


def _optional_name(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected the name of a resource")
    return value


class LongTermMemoryOptions:
    """Configuration of long-term memory."""

    class Mem0:
        """The mem0 backend: names of the agent's resources it runs on. Long-term memory is
        available when all three are set."""

        CHAT_MODEL_SETUP: ConfigOption[str | None] = ConfigOption(
            key="long-term-memory.mem0.chat-model-setup",
            default=None,
            parse=_optional_name,
            description="Name of the chat model setup mem0 uses to extract and consolidate facts.",
        )
        EMBEDDING_MODEL_SETUP: ConfigOption[str | None] = ConfigOption(
            key="long-term-memory.mem0.embedding-model-setup",
            default=None,
            parse=_optional_name,
            description="Name of the embedding model setup mem0 embeds items and queries with.",
        )
        VECTOR_STORE: ConfigOption[str | None] = ConfigOption(
            key="long-term-memory.mem0.vector-store",
            default=None,
            parse=_optional_name,
            description="Name of the vector store resource (one with collections, e.g. "
            "ChromaVectorStore) that holds the items.",
        )


register_options(LongTermMemoryOptions)


class MemorySetItem(BaseModel):
    """One item of a memory set.

    Attributes:
        memory_set_name: the set it belongs to.
        id: its id.
        value: its text (with mem0's inference: the fact extracted from what was added).
        created_at: when it was created.
        updated_at: when it last changed.
        additional_metadata: the metadata given when it was added (and a search score).
    """

    memory_set_name: str
    id: str
    value: str
    created_at: datetime | None = None
    updated_at: datetime | None = None
    additional_metadata: dict[str, Any] | None = None


class MemorySet(BaseModel):
    """A named set of items in long-term memory; get one with
    ``ctx.long_term_memory.get_memory_set(name)``.

    Attributes:
        name: the set name.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    ltm: Any = Field(default=None, exclude=True, repr=False)

    def add(
        self,
        items: str | list[str],
        metadatas: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> list[str]:
        """Add items (one text or a list); mem0 may merge them with what is stored.

        Args:
            items: the texts.
            metadatas: metadata for every item (one dict) or per item (a list).

        Returns:
            The ids of the items added or changed.
        """
        return self.ltm.add(memory_set=self, memory_items=items, metadatas=metadatas)

    def get(
        self,
        ids: str | list[str] | None = None,
        filters: dict[str, Any] | None = None,
        limit: int = 100,
    ) -> list[MemorySetItem]:
        """Items by id (unknown ids are skipped; ``filters`` and ``limit`` are then
        ignored), or up to ``limit`` items matching the metadata ``filters``."""
        return self.ltm.get(memory_set=self, ids=ids, filters=filters, limit=limit)

    def search(
        self,
        query: str,
        limit: int,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[MemorySetItem]:
        """The ``limit`` items closest in meaning to ``query``, best first.

        Args:
            query: what to look for.
            limit: how many items at most.
            filters: metadata filter (the vector store filter language).
            **kwargs: backend arguments (mem0: ``threshold``, the lowest score kept).
        """
        return self.ltm.search(memory_set=self, query=query, limit=limit, filters=filters, **kwargs)

    def delete(self, ids: str | list[str] | None = None) -> None:
        """Delete items by id (unknown ids are ignored); without ids, every item of the
        set."""
        self.ltm.delete(memory_set=self, ids=ids)


class BaseLongTermMemory(ABC, BaseModel):
    """Long-term memory as an action sees it (``ctx.long_term_memory``): memory sets of
    the current job identifier and key."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @abstractmethod
    def get_memory_set(self, name: str) -> MemorySet:
        """The memory set ``name`` (it exists as soon as an item is added to it)."""

    @abstractmethod
    def delete_memory_set(self, name: str) -> bool:
        """Delete every item of the memory set ``name``; True when done."""

    @abstractmethod
    def add(
        self,
        memory_set: MemorySet,
        memory_items: str | list[str],
        metadatas: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> list[str]:
        """See :meth:`MemorySet.add`."""

    @abstractmethod
    def get(
        self,
        memory_set: MemorySet,
        ids: str | list[str] | None = None,
        filters: dict[str, Any] | None = None,
        limit: int = 100,
    ) -> list[MemorySetItem]:
        """See :meth:`MemorySet.get`."""

    @abstractmethod
    def delete(self, memory_set: MemorySet, ids: str | list[str] | None = None) -> None:
        """See :meth:`MemorySet.delete`."""

    @abstractmethod
    def search(
        self,
        memory_set: MemorySet,
        query: str,
        limit: int,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[MemorySetItem]:
        """See :meth:`MemorySet.search`."""

    @abstractmethod
    def close(self) -> None:
        """Release what this memory holds (the runtime calls it when the job closes)."""
