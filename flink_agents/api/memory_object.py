"""Nested key/value memory seen by actions (``ctx.short_term_memory``, ``ctx.sensory_memory``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from flink_agents.api.memory_reference import MemoryRef


class MemoryObject(ABC):
    """A node of memory: named fields holding JSON-like values or nested objects.

    Paths are dotted (``"order.items.count"``); intermediate objects are created on ``set``.
    Values must be JSON-like (None, bool, int, float, str, lists and dicts of those, or
    pydantic models, stored as their JSON form); anything else raises
    :class:`~flink_agents.errors.MemoryValueError` at ``set``.
    """

    @abstractmethod
    def get(self, path_or_ref: str | MemoryRef) -> Any:
        """The value at the path (a :class:`MemoryObject` for a nested object), or None."""

    @abstractmethod
    def set(self, path: str, value: Any) -> MemoryRef:
        """Store ``value`` at ``path`` and return a reference to it."""

    @abstractmethod
    def new_object(self, path: str, *, overwrite: bool = False) -> MemoryObject:
        """Create an empty nested object at ``path`` and return it."""

    @abstractmethod
    def is_exist(self, path: str) -> bool:
        """Whether something is stored at ``path``."""

    @abstractmethod
    def get_field_names(self) -> list[str]:
        """Names of the direct fields of this object."""

    @abstractmethod
    def get_fields(self) -> dict[str, Any]:
        """Direct fields of this object: values, and nested objects as dicts."""
