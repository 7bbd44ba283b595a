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


class _Identity:
    pass


_Identity.__name__ = "IdentityDataConverter"


class _Pickled:
    def to_internal(self, raw: bytes) -> Any:
        return pickle.loads(raw)


class _Echo(fn.AgentProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield (value, ctx)


def _pyflink_operation(function: Any, *, side_outputs: bool = False, chained: bool = False) -> Any:
    """An object shaped like PyFlink's thread-mode ``OneInputFunctionOperation`` of a keyed
    process function (``extract_process_function`` builds the same closures)."""
    function_context = object()
    tag = object()

    if side_outputs:

        def process_func(values: Any) -> Any:
            for value in values:
                if value is not tag:
                    yield value

    else:

        def process_func(values: Any) -> Any:
            yield from values

    process_element = function.process_element

    def process_element_func(value: Any) -> Any:
        yield from process_func(process_element(value[1], function_context))

    operation = types.SimpleNamespace(
        _chained_operations=[object()] if chained else [],
        _output_data_converter=_Identity(),
        _input_data_converter=types.SimpleNamespace(_field_data_converters=[None, _Pickled()]),
        _main_operation=types.SimpleNamespace(
            _process_element_func=process_element_func,
            on_timer=lambda ts: iter([("timer", ts)]),
        ),
        on_timer=lambda ts: iter([("timer", ts)]),
        opened=False,
    )
    operation.open = lambda: setattr(operation, "opened", True)
    operation.close = lambda: None
    operation.context = function_context
    return operation


def test_lean_operation_calls_the_function_with_the_record_and_the_context() -> None:
    operation = _pyflink_operation(_Echo("{}", {}, packed=True))
    lean = fn.lean_operation(operation)
    assert lean is not operation
    record = {"key": "k", "i": 3}
    # Java hands over [row kind, [key, record]], each field as its type's raw form.
    assert list(lean.process_element([0, [b"key", pickle.dumps(record)]])) == [
        (record, operation.context)
    ]
    # What the Java operator calls per record: the outputs as one list.
    assert lean.process_element_list([0, [b"key", pickle.dumps(record)]]) == [
        (record, operation.context)
    ]
    # Timers, open and close stay PyFlink's.
    assert list(lean.on_timer(7)) == [("timer", 7)]
    lean.open()
    assert operation.opened


@pytest.mark.parametrize(
    "case", ["tuple outputs", "side outputs", "chained operators", "another function"]
)
def test_lean_operation_keeps_pyflinks_operation_when_anything_differs(case: str) -> None:
    function: Any = _Echo("{}", {}, packed=case != "tuple outputs")
    if case == "another function":
        function = types.SimpleNamespace(process_element=lambda value, ctx: iter([value]))
    operation = _pyflink_operation(
        function, side_outputs=case == "side outputs", chained=case == "chained operators"
    )
    assert fn.lean_operation(operation) is operation
    # Not PyFlink's shape at all (an upgrade changed it): kept, no error.
    assert fn.lean_operation(object()) is not None


class _Switches:
    """The Java keyed state backend: records the keys it is switched to."""

    def __init__(self) -> None:
        self.keys: list[Any] = []

    def setCurrentKey(self, key: Any) -> None:  # noqa: N802 - Java name
        self.keys.append(key)


class _KeyedMapState(_MapState):
    """A ``MapState`` of the backend's current key."""

    def __init__(self, backend: _Switches) -> None:
        super().__init__()
        self.backend = backend
        self.by_key: dict[Any, dict[str, Any]] = {}

    @property  # type: ignore[override]
    def data(self) -> dict[str, Any]:
        return self.by_key.setdefault(self.backend.keys[-1] if self.backend.keys else None, {})

    @data.setter
    def data(self, value: dict[str, Any]) -> None:
        pass


def _batch_function(agent: Any) -> tuple[fn.AgentProcessFunction, _Switches]:
    from flink_agents.plan.agent_plan import AgentPlan
    from flink_agents.runtime.flink.slot import SlotRuntime

    plan = AgentPlan.from_agent(agent)
    function = fn.AgentProcessFunction(
        plan.model_dump_json(), {}, packed=True, key_of=lambda r: r["key"]
    )
    backend = _Switches()
    function.slot = SlotRuntime(plan)
    function._key_backend, function._java_keys = backend, True
    function.memory = _KeyedMapState(backend)
    function.touched = None
    function._ttl = None
    function._memory_unused = True
    function._check_restored = False
    function._prefix, function._counter = "t-", 0
    return function, backend


def _batch(*records: tuple[str, int, int]) -> list[Any]:
    """``[Java key, input as PyFlink hands it over, timestamp]`` per record."""
    return [
        [f"J{key}", [0, [b"key", pickle.dumps({"key": key, "i": i})]], ts] for key, i, ts in records
    ]


def _record(value: Any) -> Any:
    """The record of an input as PyFlink hands it over (``[row kind, [key, record]]``)."""
    return pickle.loads(value[1][1])


def _unpack(outputs: list[bytes]) -> list[tuple[int, Any]]:
    return [(struct.unpack(">q", o[:8])[0], pickle.loads(o[8:])) for o in outputs]


def test_a_batch_runs_in_order_with_its_timestamps_and_switches_no_key_without_state() -> None:
    from tests.flink import agents

    function, backend = _batch_function(agents.chat_agent())
    try:
        outputs = function.process_batch(
            _batch(("a", 1, 10), ("b", 2, fn.KEEP_TIMESTAMP), ("a", 3, 30)), _record, None
        )
        # Each output carries its input's timestamp code (Long.MIN_VALUE: none).
        assert _unpack(outputs) == [
            (10, {"key": "a", "i": 1}),
            (fn.NO_TIMESTAMP, {"key": "b", "i": 2}),
            (30, {"key": "a", "i": 3}),
        ]
        # Zero-latency runs without memory touch no keyed state: no key switch at all.
        assert backend.keys == []
    finally:
        function.slot.close()


def test_a_batch_switches_to_each_key_whose_memory_it_reads_or_writes() -> None:
    from tests.flink import agents

    function, backend = _batch_function(agents.memory_agent())
    try:
        outputs = function.process_batch(
            _batch(("a", 1, 10), ("b", 2, 20), ("a", 3, 30)), _record, None
        )
        counts = [(out["key"], out["count"]) for _, out in _unpack(outputs)]
        assert counts == [("a", 1), ("b", 1), ("a", 2)]
        # The first run commits memory (the key's first); later inputs read it first.
        assert backend.keys == ["Ja", "Jb", "Ja"]
        assert function.memory.by_key["Ja"]["stats.count"] == 2
        assert function.memory.by_key["Jb"]["stats.count"] == 1
    finally:
        function.slot.close()
