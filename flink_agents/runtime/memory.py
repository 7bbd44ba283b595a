"""Memory as flattened paths over a read-only snapshot, with tracked changes.

A run works against a snapshot of the key's memory (``path -> value``, objects marked by
:data:`OBJECT`); what it changes is collected as updates and deletes, which the host commits
to its store (a dict locally, a Flink ``MapState`` on Flink) when the run finishes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from flink_agents.api.memory_object import MemoryObject
from flink_agents.api.memory_reference import MemoryRef
from flink_agents.errors import MemoryValueError

#: Value stored at the path of a nested object.
OBJECT: dict[str, int] = {"__memory_object__": 1}

#: The first part of memory paths the runtime keeps for itself (a key's token budget:
#: ``runtime/governance.py``); actions cannot write there.
RESERVED_PREFIX = "__flink_agents__"


def _is_object(value: Any) -> bool:
    return isinstance(value, dict) and value == OBJECT


def check_value(value: Any, path: str) -> Any:
    """The JSON-like form of ``value``, or :class:`MemoryValueError` naming what is wrong."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise MemoryValueError(f"memory value at {path!r} is {value}, which JSON cannot hold")
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [check_value(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise MemoryValueError(
                    f"memory value at {path!r} has a non-string dict key {k!r}; "
                    "memory holds JSON-like values"
                )
            out[k] = check_value(v, f"{path}.{k}")
        return out
    raise MemoryValueError(
        f"cannot store {type(value).__name__} at memory path {path!r}: memory holds JSON-like "
        "values (None, bool, int, float, str, lists, dicts with str keys, pydantic models); "
        "convert it first (e.g. to a dict) or store a MemoryRef"
    )


def _check_path(path: str) -> str:
    if not isinstance(path, str) or not path or any(not p for p in path.split(".")):
        raise MemoryValueError(f"invalid memory path {path!r}: use dotted names like 'a.b.c'")
    return path


def _check_writable(path: str) -> None:
    if path.split(".", 1)[0] == RESERVED_PREFIX:
        raise MemoryValueError(
            f"memory path {path!r} is reserved: flink-agents keeps its own data under "
            f"{RESERVED_PREFIX!r}; use another name"
        )


class MemoryStore:
    """A snapshot plus the changes of the current run."""

    def __init__(self, snapshot: Mapping[str, Any] | None = None) -> None:
        self._base: Mapping[str, Any] = snapshot or {}
        self.updates: dict[str, Any] = {}
        self.deletes: set[str] = set()

    # -- raw access ----------------------------------------------------------------------
    def _raw(self, path: str) -> Any:
        if path in self.updates:
            return self.updates[path]
        if path in self.deletes:
            return None
        return self._base.get(path)

    def _exists(self, path: str) -> bool:
        if path in self.updates:
            return True
        return path not in self.deletes and path in self._base

    def _paths(self) -> set[str]:
        return (set(self._base) - self.deletes) | set(self.updates)

    def _put(self, path: str, value: Any) -> None:
        self.updates[path] = value
        self.deletes.discard(path)

    def _delete_tree(self, path: str) -> None:
        prefix = path + "."
        for p in [p for p in self._paths() if p == path or p.startswith(prefix)]:
            self.updates.pop(p, None)
            if p in self._base:
                self.deletes.add(p)

    # -- checkpoints for retried actions ----------------------------------------------------
    def mark(self) -> tuple[dict[str, Any], set[str]] | None:
        """A restore point (the changes so far; None when there are none, the usual case
        before an action: nothing to copy)."""
        if not self.updates and not self.deletes:
            return None
        return dict(self.updates), set(self.deletes)

    def reset(self, mark: tuple[dict[str, Any], set[str]] | None) -> None:
        """Undo changes made after ``mark``."""
        if mark is None:
            self.updates, self.deletes = {}, set()
        else:
            self.updates, self.deletes = dict(mark[0]), set(mark[1])

    # -- object operations -----------------------------------------------------------------
    def set(self, path: str, value: Any) -> None:
        _check_path(path)
        _check_writable(path)
        value = check_value(value, path)
        parts = path.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if not self._exists(parent):
                self._put(parent, OBJECT)
            elif not _is_object(self._raw(parent)):
                raise MemoryValueError(
                    f"cannot set {path!r}: {parent!r} holds a value, not an object"
                )
        if _is_object(self._raw(path)):
            self._delete_tree(path)
        self._put(path, value)

    def new_object(self, path: str, overwrite: bool) -> None:
        _check_path(path)
        _check_writable(path)
        if self._exists(path):
            if _is_object(self._raw(path)) and not overwrite:
                return
            if not overwrite:
                raise MemoryValueError(
                    f"cannot create object at {path!r}: it holds a value (pass overwrite=True)"
                )
            self._delete_tree(path)
        self.set(path, None)
        self._put(path, OBJECT)

    def children(self, prefix: str) -> list[str]:
        depth = prefix.count(".") + 1 if prefix else 0
        start = prefix + "." if prefix else ""
        names = [
            p[len(start) :] for p in self._paths() if p.startswith(start) and p.count(".") == depth
        ]
        return sorted(names)

    def to_dict(self, prefix: str = "") -> dict[str, Any]:
        result = {}
        for name in self.children(prefix):
            full = f"{prefix}.{name}" if prefix else name
            value = self._raw(full)
            result[name] = self.to_dict(full) if _is_object(value) else value
        return result

    def snapshot(self) -> dict[str, Any]:
        """The full memory after the changes (flattened)."""
        return {p: self._raw(p) for p in self._paths()}


class StoredMemoryObject(MemoryObject):
    """A :class:`MemoryObject` view of a :class:`MemoryStore` at a path prefix."""

    def __init__(self, store: MemoryStore, prefix: str = "") -> None:
        self._store = store
        self._prefix = prefix

    def _full(self, path: str | MemoryRef) -> str:
        if isinstance(path, MemoryRef):
            return _check_path(path.path)  # references are absolute
        _check_path(path)
        return f"{self._prefix}.{path}" if self._prefix else path

    def get(self, path_or_ref: str | MemoryRef) -> Any:
        full = self._full(path_or_ref)
        value = self._store._raw(full)
        if _is_object(value):
            return StoredMemoryObject(self._store, full)
        return value

    def set(self, path: str, value: Any) -> MemoryRef:
        full = self._full(path)
        self._store.set(full, value)
        return MemoryRef(path=full)

    def new_object(self, path: str, *, overwrite: bool = False) -> MemoryObject:
        full = self._full(path)
        self._store.new_object(full, overwrite)
        return StoredMemoryObject(self._store, full)

    def is_exist(self, path: str) -> bool:
        return self._store._exists(self._full(path))

    def get_field_names(self) -> list[str]:
        return self._store.children(self._prefix)

    def get_fields(self) -> dict[str, Any]:
        return self._store.to_dict(self._prefix)

    def __repr__(self) -> str:
        return f"MemoryObject({self._prefix or '<root>'}: {self.get_fields()!r})"


class ObservedMemoryObject(StoredMemoryObject):
    """A :class:`StoredMemoryObject` that notes writes and reads for memory events.

    ``writes`` / ``reads`` (either may be None: not noted) map full dotted paths to the last
    value written or read; ``new_object`` writes None (as upstream records it). Only the
    runtime's observed contexts make these: a plain context keeps :class:`StoredMemoryObject`,
    whose methods carry no observation code.
    """

    def __init__(
        self,
        store: MemoryStore,
        prefix: str = "",
        writes: dict[str, Any] | None = None,
        reads: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(store, prefix)
        self._writes = writes
        self._reads = reads

    def get(self, path_or_ref: str | MemoryRef) -> Any:
        full = self._full(path_or_ref)
        store = self._store
        value = store._raw(full)
        if _is_object(value):
            return ObservedMemoryObject(store, full, self._writes, self._reads)
        if self._reads is not None and store._exists(full):
            self._reads[full] = value
        return value

    def set(self, path: str, value: Any) -> MemoryRef:
        ref = super().set(path, value)
        if self._writes is not None:
            self._writes[ref.path] = self._store._raw(ref.path)
        return ref

    def new_object(self, path: str, *, overwrite: bool = False) -> MemoryObject:
        full = self._full(path)
        self._store.new_object(full, overwrite)
        if self._writes is not None:
            self._writes[full] = None
        return ObservedMemoryObject(self._store, full, self._writes, self._reads)

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        if self._reads is not None:
            prefix = f"{self._prefix}." if self._prefix else ""
            for name, value in fields.items():
                if not isinstance(value, dict) or not _is_object(self._store._raw(prefix + name)):
                    self._reads[prefix + name] = value
        return fields
