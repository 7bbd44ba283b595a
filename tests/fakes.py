"""Fakes of PyFlink's keyed state for the Flink host's tests without a cluster.

:class:`FakeRuntimeContext` stands for the runtime context a function gets in ``open()``:
it makes keyed states (dicts per current key of a fake backend) and holds the backend where
PyFlink keeps it, so ``KeyedState.open`` and the internals that find the backend run as in a
job. PyFlink cannot run its embedded (thread-mode) classes outside the JVM, so these stand in.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest


class FakeJavaBackend:
    """The Java keyed state backend (thread mode) as Python sees it through pemja.

    Args:
        key: the current key.
        with_keys: names of the states some key has an entry in (``getKeys``).
        fail: ``getKeys`` raises (PyFlink changed).

    Attributes:
        switches: the keys it was switched to, in order.
        broken: ``setCurrentKey`` raises.
    """

    java = True

    def __init__(self, key: Any = "current", with_keys: set[str] | None = None, fail: bool = False):
        self.key = key
        self.with_keys = with_keys or set()
        self.fail = fail
        self.broken = False
        self.switches: list[Any] = []
        self.streams: list[_KeyStream] = []

    def getCurrentKey(self) -> Any:  # noqa: N802 - Java name
        return self.key

    def setCurrentKey(self, key: Any) -> None:  # noqa: N802 - Java name
        if self.broken:
            raise RuntimeError("backend gone")
        self.switches.append(key)
        self.key = key

    def getKeys(self, name: str, namespace: Any) -> _KeyStream:  # noqa: N802 - Java name
        if self.fail:
            raise RuntimeError("PyFlink changed")
        stream = _KeyStream(name in self.with_keys)
        self.streams.append(stream)
        return stream


class _KeyStream:
    """A Java ``Stream`` of keys: only ``findAny().isPresent()`` and ``close()``."""

    def __init__(self, present: bool) -> None:
        self.present = present
        self.closed = False

    def findAny(self) -> Any:  # noqa: N802 - Java name
        return types.SimpleNamespace(isPresent=lambda: self.present)

    def close(self) -> None:
        self.closed = True


class FakePythonBackend:
    """PyFlink's process-mode keyed state backend (``RemoteKeyedStateBackend``)."""

    java = False

    def __init__(self, key: Any = "current") -> None:
        self.key = key
        self.switches: list[Any] = []

    def get_current_key(self) -> Any:
        return self.key

    def set_current_key(self, key: Any) -> None:
        self.switches.append(key)
        self.key = key


Backend = FakeJavaBackend | FakePythonBackend


class _KeyedFake:
    """One value per current key of ``backend`` (one value in all without a backend)."""

    def __init__(self, backend: Backend | None, empty: Any) -> None:
        self.backend = backend
        self.by_key: dict[Any, Any] = {}
        self._empty = empty

    def _current(self) -> Any:
        key = self.backend.key if self.backend is not None else None
        if key not in self.by_key:
            self.by_key[key] = self._empty()
        return self.by_key[key]


class FakeMapState(_KeyedFake):
    """A keyed ``MapState``."""

    def __init__(self, backend: Backend | None = None) -> None:
        super().__init__(backend, dict)

    @property
    def data(self) -> dict[str, Any]:
        """The current key's entries."""
        return self._current()  # type: ignore[no-any-return]

    def put(self, key: str, value: Any) -> None:
        self.data[key] = value

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def remove(self, key: str) -> None:
        self.data.pop(key, None)

    def items(self) -> Any:
        return list(self.data.items())

    def clear(self) -> None:
        self.data.clear()


class FakeListState(_KeyedFake):
    """A keyed ``ListState``."""

    def __init__(self, backend: Backend | None = None) -> None:
        super().__init__(backend, list)

    def add(self, value: Any) -> None:
        self._current().append(value)

    def get(self) -> list[Any]:
        return list(self._current())

    def update(self, values: list[Any]) -> None:
        self._current()[:] = values

    def clear(self) -> None:
        self._current().clear()


class FakeValueState(_KeyedFake):
    """A keyed ``ValueState``."""

    def __init__(self, backend: Backend | None = None) -> None:
        super().__init__(backend, lambda: [None])

    def value(self) -> Any:
        return self._current()[0]

    def update(self, value: Any) -> None:
        self._current()[0] = value

    def clear(self) -> None:
        self._current()[0] = None


class FakeRuntimeContext:
    """The runtime context of a keyed function: its states by name, and ``backend`` where
    PyFlink keeps it (thread mode: the Java backend inside an embedded wrapper).

    Args:
        backend: the keyed state backend; None: a context without one (PyFlink changed).
        job_parameters: what ``get_job_parameter`` answers (process mode: the bridge jar's
            operator sets some).
    """

    def __init__(
        self, backend: Backend | None = None, job_parameters: dict[str, str] | None = None
    ) -> None:
        self.backend = backend
        self.job_parameters = dict(job_parameters or {})
        self.states: dict[str, Any] = {}
        if isinstance(backend, FakeJavaBackend):
            self._keyed_state_backend: Any = types.SimpleNamespace(_keyed_state_backend=backend)
        elif backend is not None:
            self._keyed_state_backend = backend

    def get_job_parameter(self, key: str, default_value: Any) -> Any:
        return self.job_parameters.get(key, default_value)

    def _state(self, descriptor: Any, make: Any) -> Any:
        if descriptor.name not in self.states:
            self.states[descriptor.name] = make(self.backend)
        return self.states[descriptor.name]

    def get_map_state(self, descriptor: Any) -> FakeMapState:
        return self._state(descriptor, FakeMapState)  # type: ignore[no-any-return]

    def get_list_state(self, descriptor: Any) -> FakeListState:
        return self._state(descriptor, FakeListState)  # type: ignore[no-any-return]

    def get_state(self, descriptor: Any) -> FakeValueState:
        return self._state(descriptor, FakeValueState)  # type: ignore[no-any-return]


def install_void_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyFlink's embedded state module needs the JVM (pemja); the internals take only the
    void namespace from it, which this puts in its place."""
    module = types.ModuleType("pyflink.fn_execution.embedded.state_impl")
    module.JVoidNamespace_INSTANCE = object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
