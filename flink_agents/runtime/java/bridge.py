"""The Python half of the Java bridge: finding the JVM, creating Java resources, calling them.

How it works (see ``java-bridge/`` for the Java half):

- Only a Flink Python worker in **thread mode** runs inside the JVM (pemja embeds CPython in
  the TaskManager). There ``pemja.findClass`` exists; in process mode and in the local
  environment it does not, and Java resources fail with a :class:`JavaBridgeError` that says
  which mode is needed.
- ``findClass`` sees only the system classpath, not the jars added with ``env.add_jars``, and
  it works only on the operator thread (other Python threads get ``Invalid JcpThread
  pointer``). So :func:`init_java_bridge`, called on the operator thread, loads our
  ``org.flinkagents.bridge.Bridge`` through the thread's *context* classloader (Flink's
  user-code classloader) and keeps one instance. From then on every call is an instance method
  call on a Java object, which works from any Python thread.
- A missing class is checked through ``Bridge.check`` (which catches everything in Java), never
  through ``findClass``: a ``findClass`` of a missing class raises a ``NoClassDefFoundError``
  that Python cannot catch and the job dies.
- Results cross as strings: ``"0"`` + JSON on success, ``"1"`` + the Java exception text on
  failure, turned into :class:`JavaBridgeError` here.
"""

from __future__ import annotations

import json
import threading
import weakref
from typing import Any

from flink_agents.api._java import MODE_HINT, register_handle_factory
from flink_agents.errors import JavaBridgeError

#: Must match ``Bridge.CONTRACT_VERSION`` of the jar.
CONTRACT_VERSION = "1"

BRIDGE_CLASS = "org.flinkagents.bridge.Bridge"


_lock = threading.Lock()
#: The bridge of the operator opened last in this process (thread mode shares one CPython
#: between all slots and jobs of a TaskManager).
_current: JavaBridge | None = None
#: The bridge of each slot, by the object that owns the slot's resources (its resource cache).
_by_owner: weakref.WeakKeyDictionary[Any, JavaBridge] = weakref.WeakKeyDictionary()


def _find_class() -> Any:
    """``pemja.findClass`` if this interpreter is embedded in a JVM, else None."""
    try:
        from pemja import findClass
    except ImportError:
        return None
    return findClass


def in_jvm() -> bool:
    """Whether this Python runs embedded in a JVM (a Flink thread-mode worker)."""
    return _find_class() is not None


def init_java_bridge(owner: Any = None) -> JavaBridge | None:
    """Connect to the Java side of the current job; call it on the operator thread.

    The Flink host calls it in its function's ``open()``. Each job has its own user-code
    classloader (and the loader of a finished job is closed), so the bridge is bound to the
    operator thread's context classloader, re-created when it changes, and bound to ``owner``
    so that resources created later on other threads use their own job's bridge.

    Args:
        owner: the slot's resource cache (what Java resource wrappers reach through their
            ``get_resource``); optional.

    Returns:
        The bridge, or None if this process has no JVM (process mode, local environment).

    Raises:
        JavaBridgeError: the job lacks the bridge jar, the jar speaks another contract
            version, or this is not the operator thread.
    """
    global _current
    find_class = _find_class()
    if find_class is None:
        return None
    with _lock:
        try:
            loader = find_class("java.lang.Thread").currentThread().getContextClassLoader()
        except Exception as exc:  # pemja raises RuntimeError off the operator thread
            raise JavaBridgeError(
                "the Java bridge must be initialized on the operator thread: call "
                "flink_agents.runtime.java.init_java_bridge() in the function's open() "
                f"({exc})"
            ) from exc
        bridge = _current
        if bridge is None or not bridge.loaded_by(loader):
            bridge = _load_bridge(loader)
        _current = bridge
        if owner is not None:
            _by_owner[owner] = bridge
        return bridge


def _load_bridge(loader: Any) -> JavaBridge:
    resource = BRIDGE_CLASS.replace(".", "/") + ".class"
    if loader.getResource(resource) is None:
        # loadClass of a missing class raises through pemja: ask for the resource first
        raise JavaBridgeError(
            f"the flink-agents bridge jar is not on the job's classpath ({BRIDGE_CLASS} "
            "not found): jobs built with AgentsExecutionEnvironment add it automatically; "
            "for a hand-made job add every path of flink_agents.runtime.java.bridge_jars() "
            "with env.add_jars('file://' + path)"
        )
    try:
        instance = loader.loadClass(BRIDGE_CLASS).newInstance()
    except Exception as exc:  # pemja raises RuntimeError for Java exceptions
        raise JavaBridgeError(f"cannot load the Java bridge: {exc}") from exc
    version = instance.version()
    if version != CONTRACT_VERSION:
        raise JavaBridgeError(
            f"the flink-agents bridge jar speaks contract {version}, this package "
            f"{CONTRACT_VERSION}: rebuild the jar (make java) or drop stale jars from the job"
        )
    return JavaBridge(instance, loader)


def get_bridge(owner: Any = None) -> JavaBridge:
    """The bridge for a resource owned by ``owner`` (see :func:`init_java_bridge`).

    Falls back to the bridge of the operator opened last, then to initializing one (which
    works only on the operator thread).

    Raises:
        JavaBridgeError: outside a thread-mode Flink worker (with :data:`MODE_HINT`), or when
            the bridge could not be initialized.
    """
    if owner is not None:
        bridge = _by_owner.get(owner)
        if bridge is not None:
            return bridge
    if _current is not None:
        return _current
    if not in_jvm():
        raise JavaBridgeError(f"no JVM in this Python process. {MODE_HINT}")
    found = init_java_bridge(owner)
    assert found is not None
    return found


class JavaBridge:
    """The ``org.flinkagents.bridge.Bridge`` instance of this process."""

    def __init__(self, java_bridge: Any, loader: Any) -> None:
        self._java = java_bridge
        self._loader = loader

    def loaded_by(self, loader: Any) -> bool:
        """Whether this bridge belongs to the job of classloader ``loader``."""
        try:
            return bool(self._loader.equals(loader))
        except Exception:  # noqa: BLE001 - a loader that cannot be compared is another one
            return False

    def check(self, java_clazz: str, kind: str) -> str:
        """Empty if ``java_clazz`` can be created as a ``kind``, else what is wrong."""
        return str(self._java.check(java_clazz, kind))

    def create(self, java_clazz: str, kind: str, config: dict[str, Any]) -> JavaHandle:
        """Create and open a Java resource.

        Args:
            java_clazz: fully qualified Java class name.
            kind: ``"tool"``, ``"chat_model"``, ``"embedding_model"`` or ``"vector_store"``.
            config: passed to the resource's ``open`` as a JSON object.

        Raises:
            JavaBridgeError: the class is missing or of the wrong kind, or ``open`` failed.
        """
        result = self._java.create(java_clazz, kind, json.dumps(config, default=str))
        if isinstance(result, str):
            raise JavaBridgeError(f"cannot create Java {kind} {java_clazz}: {result}")
        return JavaHandle(result, java_clazz, kind)


class JavaHandle:
    """A created Java resource; every call returns decoded JSON or raises JavaBridgeError.

    Attributes:
        java_clazz: the Java class name.
        kind: the resource kind.
    """

    def __init__(self, java_handle: Any, java_clazz: str, kind: str) -> None:
        self._java = java_handle
        self.java_clazz = java_clazz
        self.kind = kind

    def _result(self, what: str, envelope: Any, *, decode: bool = True) -> Any:
        text = str(envelope)
        if text[:1] == "0":
            payload = text[1:]
            if not decode:
                return payload
            try:
                return json.loads(payload)
            except ValueError:
                return payload  # a tool that returned plain text instead of JSON
        raise JavaBridgeError(
            f"Java {self.kind} {self.java_clazz} failed in {what}: {text[1:]}",
        )

    def metadata(self) -> dict[str, Any]:
        """A tool's ``{"name", "description", "args_schema"}``."""
        meta = self._result("metadata()", self._java.metadata())
        if not isinstance(meta, dict):
            raise JavaBridgeError(f"Java tool {self.java_clazz} returned bad metadata {meta!r}")
        return meta

    def call(self, arguments: dict[str, Any]) -> Any:
        """Run a tool; its JSON result decoded."""
        return self._result("call()", self._java.call(json.dumps(arguments, default=str)))

    def call_raw(self, arguments_json: str) -> str:
        """Run a tool with JSON arguments; its JSON result undecoded (for hot paths)."""
        return str(self._result("call()", self._java.call(arguments_json), decode=False))

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], options: dict[str, Any]
    ) -> dict[str, Any]:
        """One chat call; the assistant message as a dict."""
        reply = self._result(
            "chat()",
            self._java.chat(
                json.dumps(messages, default=str),
                json.dumps(tools, default=str),
                json.dumps(options, default=str),
            ),
        )
        if not isinstance(reply, dict):
            raise JavaBridgeError(
                f"Java chat model {self.java_clazz} returned {reply!r}; expected a message "
                "object {'role': 'assistant', 'content': ..., 'tool_calls': [...]}"
            )
        return reply

    def embed(self, texts: list[str], options: dict[str, Any]) -> list[list[float]]:
        """Vectors for ``texts``."""
        vectors = self._result(
            "embed()", self._java.embed(json.dumps(texts), json.dumps(options, default=str))
        )
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            raise JavaBridgeError(
                f"Java embedding model {self.java_clazz} returned {str(vectors)[:200]!r}; "
                f"expected {len(texts)} vector(s)"
            )
        return [[float(x) for x in v] for v in vectors]

    def vector_store(self, operation: str, *args: Any) -> Any:
        """One operation of a Java vector store (``add``, ``query``, ``get``, ``delete``,
        ``update``, ``listCollections``, ``createCollection``, ``deleteCollection``); the
        arguments in the Java interface's order (JSON text or None, numbers); its JSON result
        decoded."""
        return self._result(
            f"{operation}()", self._java.vectorStore(operation, json.dumps(list(args)))
        )

    def close(self) -> None:
        """Close the Java resource (once)."""
        self._result("close()", self._java.close())

    def __repr__(self) -> str:
        return f"JavaHandle({self.kind} {self.java_clazz})"


def create_handle(
    java_clazz: str, kind: str, config: dict[str, Any], owner: Any = None
) -> JavaHandle:
    """Create a Java resource in this worker (see :meth:`JavaBridge.create`).

    Args:
        java_clazz: the Java class.
        kind: ``"tool"``, ``"chat_model"`` or ``"embedding_model"``.
        config: the resource's configuration.
        owner: the resource cache creating it (selects the job's bridge).
    """
    return get_bridge(owner).create(java_clazz, kind, config)


# Java resource wrappers (flink_agents.api) create their Java objects through this module.
register_handle_factory(create_handle)
