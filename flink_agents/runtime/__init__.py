"""The execution core, independent of any host (local or Flink).

``AgentRunner``, ``RunResult`` and ``ResourceCache`` are loaded on first use (PEP 562): the
event log's writer process imports ``flink_agents.runtime.observability`` modules only, and
importing the core with them cost it ~0.25 s of CPU at every start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flink_agents.runtime.core import AgentRunner, RunResult
    from flink_agents.runtime.resources import ResourceCache

__all__ = ["AgentRunner", "ResourceCache", "RunResult"]

_LAZY = {
    "AgentRunner": "flink_agents.runtime.core",
    "RunResult": "flink_agents.runtime.core",
    "ResourceCache": "flink_agents.runtime.resources",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
