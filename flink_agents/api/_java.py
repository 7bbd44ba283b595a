"""Shared plumbing of the Java resource wrappers (``JavaTool``, ``JavaChatModelConnection``,
``JavaEmbeddingModelConnection``).

A wrapper holds ``java_clazz`` plus free keyword arguments; the free arguments are the Java
resource's configuration (passed to its ``open(configJson)``). The Java object is created
through the bridge when the wrapper is created on the task side (once per slot, by the
resource cache) and closed with it. The bridge lives in ``flink_agents.runtime.java``, which
registers its handle factory here when it loads (the API does not import the runtime), so
this module imports without Flink or a JVM.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

MODE_HINT = (
    "Java resources run only in a Flink job with python.execution-mode=thread (the default of "
    "flink-agents): Python then runs inside the TaskManager JVM through pemja. The local "
    "environment and process mode have no JVM to call; use a Flink environment in thread mode "
    "(a MiniCluster or a local standalone cluster is enough for tests)"
)

#: ``(java_clazz, kind, config, owner) -> handle``: set by ``flink_agents.runtime.java`` when
#: the bridge module loads (a thread-mode Flink worker loads it before resources exist).
_handle_factory: Callable[[str, str, dict[str, Any], Any], Any] | None = None


def register_handle_factory(factory: Callable[[str, str, dict[str, Any], Any], Any]) -> None:
    """Let Java resource wrappers create their Java objects through ``factory`` (called by
    the runtime's bridge module)."""
    global _handle_factory
    _handle_factory = factory


#: Class attribute set on every resource class that needs the Java bridge; the plan checks
#: (``flink_agents.runtime.java.check_java_resources``) look for it.
JAVA_MARKER = "uses_java_bridge"


class JavaHandleHolder:
    """Creates the Java object once, closes it once; thread safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handle: Any = None
        self._closed = False

    def get(
        self, java_clazz: str, kind: str, config: dict[str, Any], get_resource: Any = None
    ) -> Any:
        """The handle, created (and the Java resource opened) on first use.

        Args:
            java_clazz: the Java class.
            kind: the resource kind.
            config: the Java resource's configuration.
            get_resource: the resource's ``get_resource``; its owner (the slot's resource
                cache) selects the bridge of the right job when several share the process.
        """
        handle = self._handle
        if handle is not None:
            return handle
        with self._lock:
            if self._closed:
                from flink_agents.errors import JavaBridgeError

                raise JavaBridgeError(f"Java {kind} {java_clazz} is closed")
            if self._handle is None:
                factory = _handle_factory
                if factory is None:  # the runtime's bridge never loaded: no Flink worker
                    from flink_agents.errors import JavaBridgeError

                    raise JavaBridgeError(f"no JVM in this Python process. {MODE_HINT}")
                self._handle = factory(
                    java_clazz, kind, config, getattr(get_resource, "__self__", None)
                )
            return self._handle

    def close(self) -> None:
        """Close the Java object if it was created."""
        with self._lock:
            handle, self._handle, self._closed = self._handle, None, True
        if handle is not None:
            handle.close()
