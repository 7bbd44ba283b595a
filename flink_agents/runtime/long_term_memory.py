"""Long-term memory in the runtime: ``ctx.long_term_memory`` backed by mem0 on the agent's
own resources (see :mod:`flink_agents.api.memory.long_term_memory` for the user's view).

One :class:`LongTermMemoryService` exists per runner (task slot). ``ctx.long_term_memory``
gives a :class:`Mem0LongTermMemory` bound to the job identifier and the key of the run, so
concurrent runs of different keys never share mutable state: each call makes its own small
mem0 facade (:mod:`flink_agents.runtime.mem0_adapters`) over the slot's resources.

Scoping, as in Apache Flink Agents (and so with the same item payloads in the store): mem0's
``user_id`` is the job identifier, ``agent_id`` the key as text (``str(key)``), ``run_id``
the memory set name.

Durability: the calls are plain blocking functions. Made through
``ctx.durable_execute_async(memory_set.add, ...)`` they run on the runner's worker threads
and their results are recorded in the durable call log (Flink state); a run replayed after a
restore gets the recorded result instead of adding again. A call that completed after the
last checkpoint is made again by the replay (the store is outside Flink's checkpoints):
with mem0's inference the model then sees the fact already stored and answers NONE, so the
item is normally not duplicated. Calls made directly in an action block the run's event
loop (every key of the slot waits); a warning says so once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from pydantic import PrivateAttr

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.memory.long_term_memory import (
    BaseLongTermMemory,
    LongTermMemoryOptions,
    MemorySet,
    MemorySetItem,
)
from flink_agents.api.resource import ResourceType
from flink_agents.errors import ConfigurationError, FlinkAgentsError, ResourceError

log = logging.getLogger("flink_agents.runtime.long_term_memory")

_T = TypeVar("_T")

#: The option key of Apache Flink Agents' ``AgentConfigOptions.JOB_IDENTIFIER``.
JOB_IDENTIFIER_KEY = "job-identifier"
#: Scope of items when no job identifier is configured.
DEFAULT_JOB_IDENTIFIER = "default"

_warned: set[str] = set()
_warn_lock = threading.Lock()


def _warn_once(kind: str, message: str, *args: Any) -> None:
    with _warn_lock:
        if kind in _warned:
            return
        _warned.add(kind)
    log.warning(message, *args)


def _job_identifier(config: AgentConfiguration) -> str:
    try:
        from flink_agents.api.core_options import AgentConfigOptions

        option = getattr(AgentConfigOptions, "JOB_IDENTIFIER", None)
        value = config.get(option) if option is not None else config.get(JOB_IDENTIFIER_KEY)
    except Exception:  # noqa: BLE001 - an unreadable value is treated as unset
        value = None
    if value:
        return str(value)
    _warn_once(
        "job-id",
        "long-term memory: %r is not set; items are stored under job identifier %r, shared "
        "with every job that uses the same vector store collection without one. Set "
        "AgentConfigOptions.JOB_IDENTIFIER to keep jobs apart.",
        JOB_IDENTIFIER_KEY,
        DEFAULT_JOB_IDENTIFIER,
    )
    return DEFAULT_JOB_IDENTIFIER


class LongTermMemoryService:
    """The long-term memory of one runner: configuration, resources, and mem0 (imported on
    first use).

    Args:
        config: the agent configuration.
        get_resource: the runner's resource lookup ``(name, type) -> resource``.
    """

    def __init__(
        self, config: AgentConfiguration, get_resource: Callable[[str, ResourceType], Any]
    ) -> None:
        self._config = config
        self._get_resource = get_resource
        self._names = {
            ResourceType.CHAT_MODEL: config.get(LongTermMemoryOptions.Mem0.CHAT_MODEL_SETUP),
            ResourceType.EMBEDDING_MODEL: config.get(
                LongTermMemoryOptions.Mem0.EMBEDDING_MODEL_SETUP
            ),
            ResourceType.VECTOR_STORE: config.get(LongTermMemoryOptions.Mem0.VECTOR_STORE),
        }
        self._job_id: str | None = None

    @property
    def configured(self) -> bool:
        """Whether the three mem0 options are set."""
        return all(self._names.values())

    def for_key(self, key: Any) -> Mem0LongTermMemory:
        """The long-term memory of ``key``.

        Raises:
            ConfigurationError: the mem0 options are not all set.
        """
        if not self.configured:
            options = {
                ResourceType.CHAT_MODEL: LongTermMemoryOptions.Mem0.CHAT_MODEL_SETUP,
                ResourceType.EMBEDDING_MODEL: LongTermMemoryOptions.Mem0.EMBEDDING_MODEL_SETUP,
                ResourceType.VECTOR_STORE: LongTermMemoryOptions.Mem0.VECTOR_STORE,
            }
            missing = [options[t].key for t, name in self._names.items() if not name]
            raise ConfigurationError(
                f"long-term memory is not configured: set {missing} to the names of the "
                "agent's chat model setup, embedding model setup and vector store "
                "(LongTermMemoryOptions.Mem0.CHAT_MODEL_SETUP, EMBEDDING_MODEL_SETUP, "
                "VECTOR_STORE)"
            )
        if self._job_id is None:
            self._job_id = _job_identifier(self._config)
        memory = Mem0LongTermMemory(job_id=self._job_id, key=str(key))
        memory._service = self
        return memory

    def mem0(self) -> Any:
        """A fresh mem0 facade over the configured resources."""
        try:
            from flink_agents.runtime.mem0_adapters import Mem0Facade
        except ImportError as exc:
            raise ConfigurationError(
                f"long-term memory needs mem0: pip install 'flink-agents-py[mem0]' ({exc})"
            ) from None
        return Mem0Facade(
            self._get_resource(self._names[ResourceType.CHAT_MODEL], ResourceType.CHAT_MODEL),
            self._get_resource(
                self._names[ResourceType.EMBEDDING_MODEL], ResourceType.EMBEDDING_MODEL
            ),
            self._get_resource(self._names[ResourceType.VECTOR_STORE], ResourceType.VECTOR_STORE),
        )

    def close(self) -> None:
        """Nothing is held beyond the resources, which the runner closes."""


def _timestamp(value: Any) -> datetime | None:
    if not value:
        return None
    with contextlib.suppress(TypeError, ValueError):
        return datetime.fromisoformat(str(value))
    return None


def _texts(items: Any) -> list[str]:
    texts = [items] if isinstance(items, str) else items
    if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
        raise TypeError(f"memory items are a str or a list of str, got {items!r}")
    return list(texts)


def _metadatas(metadatas: Any, count: int) -> list[dict[str, Any] | None]:
    if metadatas is None:
        return [None] * count
    if isinstance(metadatas, dict):
        return [metadatas] * count
    if isinstance(metadatas, (list, tuple)) and all(isinstance(m, dict) for m in metadatas):
        if len(metadatas) != count:
            raise ValueError(f"{len(metadatas)} metadata dicts for {count} memory items")
        return list(metadatas)
    raise TypeError(f"metadatas is a dict or a list of dicts, got {metadatas!r}")


class Mem0LongTermMemory(BaseLongTermMemory):
    """``ctx.long_term_memory`` of one key: memory sets scoped to (job identifier, key).

    Attributes:
        job_id: the job identifier (mem0 ``user_id``).
        key: the key as text (mem0 ``agent_id``).
    """

    job_id: str
    key: str

    _service: LongTermMemoryService = PrivateAttr()
    #: Where operations are noted for memory events (None: not noted), and which
    #: (``update``, ``get``, ``search``): set by the runtime's observed action context.
    _observed: list[tuple[Any, ...]] | None = PrivateAttr(default=None)
    _observed_ops: frozenset[str] = PrivateAttr(default=frozenset())

    # -- plumbing ----------------------------------------------------------------------------
    def observe(self, records: list[tuple[Any, ...]], ops: frozenset[str]) -> None:
        """Note the operations ``ops`` of this memory in ``records`` as ``(op, set, item
        id, query, value)`` tuples (memory events; calls may run on worker threads: a list
        append is atomic). A call answered from the durable log is not made, so not noted."""
        self._observed = records
        self._observed_ops = ops

    def _note(
        self,
        kind: str,
        op: str,
        memory_set: str,
        item_id: str | None = None,
        query: str | None = None,
        value: Any = None,
    ) -> None:
        if self._observed is not None and kind in self._observed_ops:
            self._observed.append((op, memory_set, item_id, query, value))

    def _scope(self, memory_set: MemorySet) -> dict[str, str]:
        return {"user_id": self.job_id, "agent_id": self.key, "run_id": memory_set.name}

    def _in_scope(self, entry: dict[str, Any] | None, memory_set: MemorySet) -> bool:
        return entry is not None and all(
            entry.get(k) == v for k, v in self._scope(memory_set).items()
        )

    def _call(self, what: str, fn: Callable[[Any], _T]) -> _T:
        """Run ``fn(mem0)``; failures of mem0's parts (also those mem0 only logs) raise."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            _warn_once(
                "blocking",
                "long-term memory %s was called on the run's event loop: it blocks every key "
                "of this slot while it waits on the model and the store. Call it as "
                "`await ctx.durable_execute_async(memory_set.%s, ...)`.",
                what,
                what,
            )
        mem0 = self._service.mem0()
        try:
            result = fn(mem0)
        except FlinkAgentsError:
            raise
        except Exception as exc:  # noqa: BLE001 - re-raised as ours
            noted = mem0.errors[0] if mem0.errors else exc
            if isinstance(noted, FlinkAgentsError):
                raise noted from (None if noted is exc else exc)
            raise ResourceError(
                f"long-term memory {what} failed: {type(noted).__name__}: {noted}"
            ) from noted
        if mem0.errors:
            first = mem0.errors[0]
            if isinstance(first, FlinkAgentsError):
                raise first
            raise ResourceError(
                f"long-term memory {what} failed: {type(first).__name__}: {first}"
            ) from first
        return result

    @staticmethod
    def _item(memory_set: MemorySet, entry: dict[str, Any]) -> MemorySetItem:
        return MemorySetItem(
            memory_set_name=memory_set.name,
            id=str(entry.get("id", "")),
            value=str(entry.get("memory", "")),
            created_at=_timestamp(entry.get("created_at")),
            updated_at=_timestamp(entry.get("updated_at")),
            additional_metadata=entry.get("metadata") or None,
        )

    # -- the API -----------------------------------------------------------------------------
    def get_memory_set(self, name: str) -> MemorySet:
        """The memory set ``name`` of this job identifier and key."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a memory set name is a non-empty str, got {name!r}")
        return MemorySet(name=name, ltm=self)

    def delete_memory_set(self, name: str) -> bool:
        """Delete every item of the set ``name`` (of this job identifier and key)."""
        memory_set = self.get_memory_set(name)
        self._call("delete_memory_set", lambda m: m.delete_all(**self._scope(memory_set)))
        self._note("update", "DELETE_SET", name)
        return True

    def add(
        self,
        memory_set: MemorySet,
        memory_items: str | list[str],
        metadatas: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> list[str]:
        """Add items through mem0 (which extracts facts and merges them with stored ones);
        the ids of the items added, updated or deleted by mem0, in order."""
        texts = _texts(memory_items)
        metas = _metadatas(metadatas, len(texts))
        ids: list[str] = []
        for text, meta in zip(texts, metas, strict=True):

            def add_one(m: Any, text: str = text, meta: Any = meta) -> dict[str, Any]:
                return m.add(text, metadata=meta, **self._scope(memory_set))

            result = self._call("add", add_one)
            for entry in result.get("results", []):
                if "id" not in entry:
                    continue
                ids.append(str(entry["id"]))
                # mem0 says what it did with each fact: added, updated or deleted an item.
                op = str(entry.get("event") or "ADD").upper()
                if op in ("ADD", "UPDATE", "DELETE"):
                    value = None if op == "DELETE" else entry.get("memory")
                    self._note("update", op, memory_set.name, str(entry["id"]), value=value)
        return ids

    def get(
        self,
        memory_set: MemorySet,
        ids: str | list[str] | None = None,
        filters: dict[str, Any] | None = None,
        limit: int = 100,
    ) -> list[MemorySetItem]:
        """Items by id (only those of this set, job identifier and key), or by filter."""
        if ids is not None:
            wanted = [ids] if isinstance(ids, str) else list(ids)

            def by_id(m: Any) -> list[dict[str, Any]]:
                found = (m.get(i) for i in wanted)
                return [e for e in found if self._in_scope(e, memory_set)]

            items = [self._item(memory_set, e) for e in self._call("get", by_id)]
        else:
            result = self._call(
                "get",
                lambda m: m.get_all(filters=filters, limit=limit, **self._scope(memory_set)),
            )
            items = [self._item(memory_set, e) for e in result.get("results", [])]
        for item in items:
            self._note("get", "GET", memory_set.name, item.id, value=item.value)
        return items

    def delete(self, memory_set: MemorySet, ids: str | list[str] | None = None) -> None:
        """Delete items by id (ids of other sets, keys or jobs are ignored), or all."""
        if ids is None:
            self._call("delete", lambda m: m.delete_all(**self._scope(memory_set)))
            self._note("update", "DELETE_SET", memory_set.name)
            return
        wanted = [ids] if isinstance(ids, str) else list(ids)
        deleted: list[str] = []

        def by_id(m: Any) -> None:
            for memory_id in wanted:
                if self._in_scope(m.get(memory_id), memory_set):
                    m.delete(memory_id)
                    deleted.append(str(memory_id))

        self._call("delete", by_id)
        for memory_id in deleted:
            self._note("update", "DELETE", memory_set.name, memory_id)

    def search(
        self,
        memory_set: MemorySet,
        query: str,
        limit: int,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[MemorySetItem]:
        """The ``limit`` items closest to ``query``, best first."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise ValueError(f"search limit is a positive int, got {limit!r}")

        def search(m: Any) -> dict[str, Any]:
            return m.search(
                query, limit=limit, filters=filters, **kwargs, **self._scope(memory_set)
            )

        result = self._call("search", search)
        entries = result.get("results", [])
        if self._observed is not None:
            hits = [
                {"id": str(e["id"]), "value": e.get("memory"), "score": e.get("score")}
                for e in entries
                if "id" in e
            ]
            self._note("search", "SEARCH", memory_set.name, query=query, value=hits)
        return [self._item(memory_set, e) for e in entries]

    def close(self) -> None:
        """Nothing to release: the service and the resources belong to the runner."""
