"""The Flink function's checkpoint-barrier hook without a cluster: records of every key with
work in flight are saved under that key, and the state backend's key is put back (thread
mode: the Java backend; process mode: PyFlink's Python backend, reached by a timer)."""

from __future__ import annotations

import logging
import pickle
import threading
from typing import Any

import pytest

pytest.importorskip("pyflink")

from flink_agents.runtime.core import DurableRecord  # noqa: E402
from flink_agents.runtime.flink import function as fn  # noqa: E402
from flink_agents.runtime.flink.slot import Item, KeyWork  # noqa: E402


class _Backend:
    """The Java keyed state backend as the function sees it (pemja proxies in a job)."""

    def __init__(self) -> None:
        self.key: Any = "current"
        self.switches: list[Any] = []

    def getCurrentKey(self) -> Any:  # noqa: N802 - Java name
        return self.key

    def setCurrentKey(self, key: Any) -> None:  # noqa: N802 - Java name
        self.switches.append(key)
        self.key = key


class _PythonBackend(_Backend):
    """PyFlink's process-mode keyed state backend."""

    def get_current_key(self) -> Any:
        return self.key

    def set_current_key(self, key: Any) -> None:
        self.setCurrentKey(key)


class _MapState:
    """A keyed ``MapState``: one dict per current key of ``backend``."""

    def __init__(self, backend: _Backend) -> None:
        self.backend = backend
        self.by_key: dict[Any, dict[str, bytes]] = {}

    def put(self, name: str, value: bytes) -> None:
        self.by_key.setdefault(self.backend.key, {})[name] = value


class _Slot:
    """Stands for the function's slot runtime (the function is open)."""


def _function(java: bool = True) -> tuple[fn.AgentProcessFunction, _Backend, _MapState]:
    function = fn.AgentProcessFunction("{}", {})
    backend = _Backend() if java else _PythonBackend()
    durable = _MapState(backend)
    function.slot = _Slot()  # type: ignore[assignment]
    function._key_backend, function._java_keys = backend, java
    function.durable = durable
    function.barrier_hook = True
    return function, backend, durable


def _work(key: str, state_key: Any) -> KeyWork:
    work = KeyWork(key, {})
    work.state_key = state_key
    return work


@pytest.mark.parametrize("java", [True, False], ids=["thread", "process"])
def test_records_are_saved_under_their_keys_and_the_key_is_put_back(java: bool) -> None:
    function, backend, durable = _function(java)
    a, b, idle = _work("a", "ja"), _work("b", "jb"), _work("c", "jc")
    a.record("i1", "1", DurableRecord("f", result=1))
    a.record("i1", "2", DurableRecord("f", result=2))
    # b's run has finished but is not committed yet: its record is saved too.
    b.record("i2", "1", DurableRecord("g", result="x"))
    b.results.append((Item("i2", None, {}), RuntimeError("not collected yet")))
    function._active = {"a": a, "b": b, "c": idle}

    if java:
        function.before_barrier(7)
    else:  # the process-mode operator's barrier timer
        assert list(function.on_timer(fn.BARRIER_TIMER, None)) == []  # type: ignore[arg-type]

    assert {k: sorted(v) for k, v in durable.by_key.items()} == {
        "ja": ["i1/1", "i1/2"],
        "jb": ["i2/1"],
    }
    assert pickle.loads(durable.by_key["ja"]["i1/2"]).result == 2
    assert backend.switches == ["ja", "jb", "current"] and backend.key == "current"
    assert a.persisted == {("i1", "1"), ("i1", "2")} and b.persisted == {("i2", "1")}

    # Nothing new: no key switch at the next barrier; a new record: only its key.
    backend.switches.clear()
    function.before_barrier(8)
    assert backend.switches == []
    a.record("i3", "1", DurableRecord("f", result=3))
    function.before_barrier(9)
    assert backend.switches == ["ja", "current"] and sorted(durable.by_key["ja"]) == [
        "i1/1",
        "i1/2",
        "i3/1",
    ]
    assert sum(len(records) for records in durable.by_key.values()) == 4


def test_the_hook_binds_the_function_opened_on_its_thread_and_logs_errors(caplog) -> None:
    function, backend, _ = _function()
    function.barrier_hook = False
    with fn._UNCLAIMED_LOCK:
        fn._UNCLAIMED[threading.get_ident()] = function
    hook = fn.claim_barrier_hook()
    assert function.barrier_hook and threading.get_ident() not in fn._UNCLAIMED

    work = _work("a", "ja")
    work.record("i1", "1", DurableRecord("f", result=1))
    function._active = {"a": work}

    def broken(key: Any) -> None:
        raise RuntimeError("backend gone")

    backend.setCurrentKey = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.DEBUG, logger="flink_agents.runtime.flink"):
        hook.before_barrier(1)  # logged, not raised: the checkpoint goes on
        hook.before_barrier(2)
    levels = [r.levelno for r in caplog.records if "before the barrier" in r.getMessage()]
    assert levels == [logging.ERROR, logging.DEBUG]
    assert work.persisted == set()  # saved at the key's next timer instead

    # No function opened on this thread (e.g. not ours): a hook that does nothing.
    with caplog.at_level(logging.WARNING, logger="flink_agents.runtime.flink"):
        fn.claim_barrier_hook().before_barrier(3)
    assert any("no barrier hook" in r.getMessage() for r in caplog.records)
