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

from flink_agents.errors import JavaBridgeError  # noqa: E402
from flink_agents.runtime.core import DurableRecord  # noqa: E402
from flink_agents.runtime.flink import entry  # noqa: E402
from flink_agents.runtime.flink import function as fn  # noqa: E402
from flink_agents.runtime.flink.slot import Item, KeyWork  # noqa: E402
from flink_agents.runtime.flink.state import KeyedState  # noqa: E402
from flink_agents.runtime.sequencing import Run  # noqa: E402
from tests.fakes import (  # noqa: E402
    FakeJavaBackend,
    FakeMapState,
    FakePythonBackend,
    FakeRuntimeContext,
    install_void_namespace,
)


@pytest.fixture(autouse=True)
def _void_namespace(monkeypatch) -> None:
    install_void_namespace(monkeypatch)


def _function(
    java: bool = True,
) -> tuple[fn.AgentProcessFunction, FakeJavaBackend | FakePythonBackend, FakeMapState]:
    function = fn.AgentProcessFunction("{}", {})
    backend = FakeJavaBackend() if java else FakePythonBackend()
    state = KeyedState.open(FakeRuntimeContext(backend), ttl=None, keyless=False)
    function.bind(state)
    # Process mode: bound at once (a barrier timer may come); thread mode: when the
    # operator claims the hook.
    assert function.barrier_hook is not java
    function.barrier_hook = True
    return function, backend, state.durable


def _work(key: str, state_key: Any) -> KeyWork:
    work = KeyWork(key, {})
    work.state_key = state_key
    return work


def _finished(work: KeyWork, item: Item, outcome: Any) -> None:
    """``item``'s run ended with ``outcome`` on ``work``'s chain, not collected yet."""
    seq = work.seq
    seq.arrive(item)
    seq.placed()
    step = seq.next_run()
    assert isinstance(step, Run) and step.item is item
    seq.finished(item, outcome)


@pytest.mark.parametrize("java", [True, False], ids=["thread", "process"])
def test_records_are_saved_under_their_keys_and_the_key_is_put_back(java: bool) -> None:
    function, backend, durable = _function(java)
    a, b, idle = _work("a", "ja"), _work("b", "jb"), _work("c", "jc")
    a.record("i1", "1", DurableRecord("f", result=1))
    a.record("i1", "2", DurableRecord("f", result=2))
    # b's run has finished but is not committed yet: its record is saved too.
    b.record("i2", "1", DurableRecord("g", result="x"))
    _finished(b, Item("i2", 0, {}), RuntimeError("not collected yet"))
    function._active = {"a": a, "b": b, "c": idle}

    if java:
        function.before_barrier(7)
    else:  # the process-mode operator's barrier timer
        assert list(function.on_timer(entry.BARRIER_TIMER, None)) == []  # type: ignore[arg-type]

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
    entry.offer(function)
    hook = entry.claim_barrier_hook(entry.CONTRACT_VERSION)
    assert function.barrier_hook and threading.get_ident() not in entry._UNCLAIMED

    work = _work("a", "ja")
    work.record("i1", "1", DurableRecord("f", result=1))
    function._active = {"a": work}

    backend.broken = True  # type: ignore[union-attr]
    with caplog.at_level(logging.DEBUG, logger="flink_agents.runtime.flink"):
        hook.before_barrier(1)  # logged, not raised: the checkpoint goes on
        hook.before_barrier(2)
    levels = [r.levelno for r in caplog.records if "before the barrier" in r.getMessage()]
    assert levels == [logging.ERROR, logging.DEBUG]
    assert work.persisted == set()  # saved at the key's next timer instead

    # No function opened on this thread (e.g. not ours): a hook that does nothing.
    with caplog.at_level(logging.WARNING, logger="flink_agents.runtime.flink"):
        entry.claim_barrier_hook(entry.CONTRACT_VERSION).before_barrier(3)
    assert any("no barrier hook" in r.getMessage() for r in caplog.records)


def test_an_operator_of_another_contract_version_is_refused(caplog) -> None:
    function, _, _ = _function()
    function.barrier_hook = False
    entry.offer(function)
    with (
        caplog.at_level(logging.WARNING, logger="flink_agents.runtime.flink"),
        pytest.raises(
            JavaBridgeError,
            match=rf"speaks contract 0, this package {entry.CONTRACT_VERSION}: reinstall",
        ),
    ):
        entry.claim_barrier_hook("0")
    assert not function.barrier_hook
    warned = {r.getMessage().split(":")[0] for r in caplog.records}
    assert warned == {"fast path barrier-hook not engaged", "fast path lean-operation not engaged"}
