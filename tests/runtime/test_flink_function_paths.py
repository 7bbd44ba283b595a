"""The Flink function's per-record shortcuts without a cluster: packed outputs, the check
for keyed state that may hold entries (memory, pending inputs), the commit of a run that
finished without waiting, the lean operation and batches."""

from __future__ import annotations

import logging
import pickle
import struct
import types
from typing import Any

import pytest

pytest.importorskip("pyflink")

from flink_agents.runtime.core import RunResult  # noqa: E402
from flink_agents.runtime.flink import entry  # noqa: E402
from flink_agents.runtime.flink import function as fn  # noqa: E402
from flink_agents.runtime.flink.output import (  # noqa: E402
    KEEP_TIMESTAMP,
    NO_TIMESTAMP,
    pack_output,
)
from flink_agents.runtime.flink.slot import Item, KeyWork  # noqa: E402
from flink_agents.runtime.flink.state import MEMORY, PENDING, KeyedState  # noqa: E402
from flink_agents.runtime.sequencing import Stop  # noqa: E402
from tests.fakes import (  # noqa: E402
    FakeJavaBackend,
    FakeListState,
    FakeMapState,
    FakePythonBackend,
    FakeRuntimeContext,
    FakeValueState,
    install_void_namespace,
)


@pytest.mark.parametrize("code", [KEEP_TIMESTAMP, NO_TIMESTAMP, 0, 1_700_000_000_123, -5])
def test_packed_output_is_the_code_as_8_big_endian_bytes_then_the_pickle(code: int) -> None:
    output = {"answer": [1, 2.5, "x"], "nested": {"k": None}}
    packed = pack_output(code, output)
    # What org.flinkagents.flink.CarriedTimestampOperator reads: a signed big-endian long.
    assert struct.unpack(">q", packed[:8])[0] == code
    assert pickle.loads(packed[8:]) == output


def test_state_may_hold_asks_the_java_backend_and_answers_true_when_it_cannot(
    monkeypatch,
) -> None:
    install_void_namespace(monkeypatch)
    backend = FakeJavaBackend(with_keys={MEMORY})
    state = KeyedState.open(FakeRuntimeContext(backend), ttl=None, keyless=False)
    # Memory may be there: read it; no pending inputs of a restore: skip that read.
    assert state.memory_unused is False and state.check_restored is False
    assert state.probe_problem is None
    assert all(stream.closed for stream in backend.streams)
    # Process mode has no Java backend; a failing backend means "maybe": read per record.
    for backend in (FakePythonBackend(), FakeJavaBackend(fail=True)):
        state = KeyedState.open(FakeRuntimeContext(backend), ttl=None, keyless=False)
        assert state.memory_unused is False and state.check_restored is True
    assert state.probe_problem is not None and "getKeys" in state.probe_problem
    # Nothing anywhere (a fresh start): both reads are skipped.
    fresh = FakeJavaBackend()
    state = KeyedState.open(FakeRuntimeContext(fresh), ttl=None, keyless=False)
    assert state.memory_unused is True and state.check_restored is False
    assert len(fresh.streams) == 3 and all(stream.closed for stream in fresh.streams)
    # Pending inputs of a restore: new inputs look for them.
    state = KeyedState.open(
        FakeRuntimeContext(FakeJavaBackend(with_keys={PENDING})), ttl=None, keyless=False
    )
    assert state.check_restored is True and state.memory_unused is True


def _settled(outcome: Any, *, persist: bool = True) -> KeyWork:
    """A key's work whose chain ran one input to ``outcome`` and stopped."""
    work = KeyWork("k", {}, persist_memory=persist)
    seq = work.seq
    item = Item("i1", KEEP_TIMESTAMP, {"x": 1})
    seq.arrive(item)
    seq.placed()
    seq.next_run()
    assert isinstance(seq.finished(item, outcome), Stop)
    return work


def _function(packed: bool, *, keyless: bool = False) -> fn.AgentProcessFunction:
    function = fn.AgentProcessFunction("{}", {}, packed=packed, keyless=keyless)
    # A fresh start: no key has memory yet.
    function.bind(
        KeyedState(
            memory=FakeValueState(),
            pending=FakeListState(),
            durable=FakeMapState(),
            memory_unused=True,
        )
    )
    return function


def _commit_settled(function: fn.AgentProcessFunction, work: KeyWork) -> list[Any]:
    """What process_element emits for a run that finished without waiting."""
    return list(function._commit(work, work.seq.collect()))


def test_settled_run_commits_memory_and_reads_memory_from_then_on() -> None:
    function = _function(packed=False)
    state = function.state
    assert state is not None
    result = RunResult(key="k", outputs=["a", "b"], memory_updates={"count": 1})
    assert _commit_settled(function, _settled(result)) == [
        (KEEP_TIMESTAMP, "a"),
        (KEEP_TIMESTAMP, "b"),
    ]
    assert state.memory.value() == {"count": 1}
    # A key has memory now: the next records read it instead of assuming none.
    assert state.memory_unused is False
    assert state.load_memory() == {"count": 1}


def test_settled_run_packs_outputs_and_raises_a_failed_run() -> None:
    function = _function(packed=True)
    assert function.state is not None
    (out,) = _commit_settled(function, _settled(RunResult(key="k", outputs=[{"y": 2}])))
    assert out == pack_output(KEEP_TIMESTAMP, {"y": 2})
    assert function.state.memory_unused is True  # nothing was written
    with pytest.raises(ValueError, match="boom"):
        _commit_settled(function, _settled(ValueError("boom")))


def test_keyless_settled_run_keeps_no_memory() -> None:
    function = _function(packed=False, keyless=True)
    state = function.state
    assert state is not None
    result = RunResult(key=3, outputs=["o"], memory_updates={"count": 1})
    assert _commit_settled(function, _settled(result, persist=False)) == [(KEEP_TIMESTAMP, "o")]
    assert state.memory.value() is None
    assert state.load_memory() == {}


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
    lean = entry.lean_operation(operation)
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
    assert entry.lean_operation(operation) is operation


def test_lean_operation_keeps_an_operation_of_another_shape_and_says_why(caplog) -> None:
    """Not PyFlink's shape at all (an upgrade changed it): kept, no error, a warning."""
    unknown = object()
    with caplog.at_level(logging.WARNING, logger="flink_agents.runtime.flink"):
        assert entry.lean_operation(unknown) is unknown
    [warning] = [r.getMessage() for r in caplog.records]
    assert "lean-operation not engaged" in warning and "another shape" in warning


def _batch_function(agent: Any, monkeypatch) -> tuple[fn.AgentProcessFunction, FakeJavaBackend]:
    from flink_agents.plan.agent_plan import AgentPlan
    from flink_agents.runtime.flink.slot import SlotRuntime

    install_void_namespace(monkeypatch)
    plan = AgentPlan.from_agent(agent)
    function = fn.AgentProcessFunction(
        plan.model_dump_json(), {}, packed=True, key_of=lambda r: r["key"]
    )
    backend = FakeJavaBackend(key=None)
    # A fresh start in thread mode: no memory, no pending inputs of a restore.
    state = KeyedState.open(FakeRuntimeContext(backend), ttl=None, keyless=False)
    assert state.memory_unused and not state.check_restored
    function.bind(state, SlotRuntime(plan), batch_size=32, batch_linger_ms=5)
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


def test_a_batch_runs_in_order_with_its_timestamps_and_switches_no_key_without_state(
    monkeypatch,
) -> None:
    from tests.flink import agents

    function, backend = _batch_function(agents.chat_agent(), monkeypatch)
    assert function.slot is not None
    try:
        outputs = function.process_batch(
            _batch(("a", 1, 10), ("b", 2, KEEP_TIMESTAMP), ("a", 3, 30)), _record, None
        )
        # Each output carries its input's timestamp code (Long.MIN_VALUE: none).
        assert _unpack(outputs) == [
            (10, {"key": "a", "i": 1}),
            (NO_TIMESTAMP, {"key": "b", "i": 2}),
            (30, {"key": "a", "i": 3}),
        ]
        # Zero-latency runs without memory touch no keyed state: no key switch at all.
        assert backend.switches == []
    finally:
        function.slot.close()


def test_a_batch_switches_to_each_key_whose_memory_it_reads_or_writes(monkeypatch) -> None:
    from tests.flink import agents

    function, backend = _batch_function(agents.memory_agent(), monkeypatch)
    assert function.slot is not None and function.state is not None
    try:
        outputs = function.process_batch(
            _batch(("a", 1, 10), ("b", 2, 20), ("a", 3, 30)), _record, None
        )
        counts = [(out["key"], out["count"]) for _, out in _unpack(outputs)]
        assert counts == [("a", 1), ("b", 1), ("a", 2)]
        # The first run commits memory (the key's first); later inputs read it first.
        assert backend.switches == ["Ja", "Jb", "Ja"]
        assert function.state.memory.by_key["Ja"][0]["stats.count"] == 2
        assert function.state.memory.by_key["Jb"][0]["stats.count"] == 1
    finally:
        function.slot.close()
