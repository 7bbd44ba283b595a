"""The Flink function's per-record shortcuts without a cluster: packed outputs, the check
for keyed state that may hold entries (memory, pending inputs) and the commit of a run that
finished without waiting."""

from __future__ import annotations

import pickle
import struct
import sys
import types
from typing import Any

import pytest

pytest.importorskip("pyflink")

from flink_agents.runtime.core import RunResult  # noqa: E402
from flink_agents.runtime.flink import function as fn  # noqa: E402
from flink_agents.runtime.flink.slot import Item, KeyWork  # noqa: E402


@pytest.mark.parametrize("code", [fn.KEEP_TIMESTAMP, fn.NO_TIMESTAMP, 0, 1_700_000_000_123, -5])
def test_packed_output_is_the_code_as_8_big_endian_bytes_then_the_pickle(code: int) -> None:
    output = {"answer": [1, 2.5, "x"], "nested": {"k": None}}
    packed = fn.pack_output(code, output)
    # What org.flinkagents.flink.CarriedTimestampOperator reads: a signed big-endian long.
    assert struct.unpack(">q", packed[:8])[0] == code
    assert pickle.loads(packed[8:]) == output


class _Keys:
    def __init__(self, present: bool) -> None:
        self.present = present
        self.closed = False

    def findAny(self) -> Any:  # noqa: N802 - Java name
        present = self.present

        class _Optional:
            def isPresent(self) -> bool:  # noqa: N802 - Java name
                return present

        return _Optional()

    def close(self) -> None:
        self.closed = True


class _Backend:
    def __init__(self, keys: dict[str, bool], fail: bool = False) -> None:
        self.keys = keys
        self.fail = fail
        self.streams: list[_Keys] = []

    def getKeys(self, name: str, namespace: Any) -> _Keys:  # noqa: N802 - Java name
        if self.fail:
            raise RuntimeError("PyFlink changed")
        stream = _Keys(self.keys.get(name, False))
        self.streams.append(stream)
        return stream


def test_state_may_hold_asks_the_java_backend_and_answers_true_when_it_cannot(
    monkeypatch,
) -> None:
    # PyFlink's embedded state module needs the JVM (pemja); the function takes only the
    # void namespace from it.
    embedded = types.ModuleType("pyflink.fn_execution.embedded.state_impl")
    embedded.JVoidNamespace_INSTANCE = object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, embedded.__name__, embedded)
    backend = _Backend({"fa-memory": True})
    assert fn._may_hold(backend, "fa-memory") is True
    assert fn._may_hold(backend, "fa-pending") is False
    assert all(stream.closed for stream in backend.streams)
    # Process mode has no Java backend; a failing backend means "maybe": read per record.
    assert fn._may_hold(None, "fa-memory") is True
    assert fn._may_hold(_Backend({}, fail=True), "fa-memory") is True


class _MapState:
    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def put(self, key: str, value: Any) -> None:
        self.data[key] = value

    def remove(self, key: str) -> None:
        self.data.pop(key, None)

    def items(self) -> Any:
        return self.data.items()


def _settled(outcome: Any, *, persist: bool = True) -> KeyWork:
    work = KeyWork("k", {}, persist_memory=persist)
    work.results.append((Item("i1", fn.KEEP_TIMESTAMP, {"x": 1}), outcome))
    return work


def _function(packed: bool) -> fn.AgentProcessFunction:
    function = fn.AgentProcessFunction("{}", {}, packed=packed)
    function.memory = _MapState()
    function.touched = None
    function._memory_unused = True
    return function


def test_settled_run_commits_memory_and_reads_memory_from_then_on() -> None:
    function = _function(packed=False)
    result = RunResult(key="k", outputs=["a", "b"], memory_updates={"count": 1})
    assert list(function._commit_settled(_settled(result))) == [
        (fn.KEEP_TIMESTAMP, "a"),
        (fn.KEEP_TIMESTAMP, "b"),
    ]
    assert function.memory.data == {"count": 1}
    # A key has memory now: the next records read it instead of assuming none.
    assert function._memory_unused is False
    assert function._load_memory() == {"count": 1}


def test_settled_run_packs_outputs_and_raises_a_failed_run() -> None:
    function = _function(packed=True)
    (out,) = function._commit_settled(_settled(RunResult(key="k", outputs=[{"y": 2}])))
    assert out == fn.pack_output(fn.KEEP_TIMESTAMP, {"y": 2})
    assert function._memory_unused is True  # nothing was written
    with pytest.raises(ValueError, match="boom"):
        list(function._commit_settled(_settled(ValueError("boom"))))


def test_keyless_settled_run_keeps_no_memory() -> None:
    function = _function(packed=False)
    function._keyless = True
    result = RunResult(key=3, outputs=["o"], memory_updates={"count": 1})
    assert list(function._commit_settled(_settled(result, persist=False))) == [
        (fn.KEEP_TIMESTAMP, "o")
    ]
    assert function.memory.data == {}
    assert function._load_memory() == {}
