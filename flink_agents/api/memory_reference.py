"""Pointers into short-term memory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from flink_agents.api.memory_object import MemoryObject


class MemoryRef(BaseModel):
    """A reference to a value in memory, cheap to put into events instead of the value.

    Attributes:
        path: dotted path of the value (``a.b.c``).
    """

    path: str

    @staticmethod
    def create(path: str) -> MemoryRef:
        """A reference to ``path``."""
        return MemoryRef(path=path)

    def resolve(self, memory: MemoryObject) -> Any:
        """The value the reference points to in ``memory``."""
        return memory.get(self)
