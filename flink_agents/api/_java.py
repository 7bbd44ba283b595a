"""Shared plumbing of the Java resource wrappers (``JavaTool``, ``JavaChatModelConnection``,
``JavaEmbeddingModelConnection``).

A wrapper holds ``java_clazz`` plus free keyword arguments; the free arguments are the Java
resource's configuration (passed to its ``open(configJson)``). The Java object is created
through the bridge when the wrapper is created on the task side (once per slot, by the
resource cache) and closed with it. The bridge lives in ``flink_agents.runtime.java`` and is
imported only when a Java object is actually needed, so this module (and the API) imports
without Flink or a JVM.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flink_agents.runtime.java.bridge import JavaHandle

#: Class attribute set on every resource class that needs the Java bridge; the plan checks
#: (``flink_agents.runtime.java.check_java_resources``) look for it.
JAVA_MARKER = "uses_java_bridge"


class JavaHandleHolder:
    """Creates the Java object once, closes it once; thread safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handle: JavaHandle | None = None
        self._closed = False

    def get(
        self, java_clazz: str, kind: str, config: dict[str, Any], get_resource: Any = None
    ) -> JavaHandle:
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
                from flink_agents.runtime.java.bridge import create_handle

                self._handle = create_handle(
                    java_clazz, kind, config, getattr(get_resource, "__self__", None)
                )
            return self._handle

    def close(self) -> None:
        """Close the Java object if it was created."""
        with self._lock:
            handle, self._handle, self._closed = self._handle, None, True
        if handle is not None:
            handle.close()
