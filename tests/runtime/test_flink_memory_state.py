"""The Flink function's short-term memory in keyed state (layout 2) without a cluster: a
run reads its key's memory with one point lookup and a run that changed it writes it once,
never iterating a map (an iteration is a RocksDB iterator seek per run, whose cost grew
with the state: docs/benchmarks.md, state at scale); memory of layout 1 is moved to layout
2 the first time its key is met. Structural (counted state calls), not timed."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyflink")

from pyflink.datastream.time_domain import TimeDomain  # noqa: E402

from flink_agents.plan.agent_plan import AgentPlan  # noqa: E402
from flink_agents.runtime.flink import function as fn  # noqa: E402
from flink_agents.runtime.flink._pyflink_internals import RESTORED_PARAMETER  # noqa: E402
from flink_agents.runtime.flink.entry import BARRIER_TIMER  # noqa: E402
from flink_agents.runtime.flink.function import DRAIN_TIME  # noqa: E402
from flink_agents.runtime.flink.output import KEEP_TIMESTAMP  # noqa: E402
from flink_agents.runtime.flink.slot import Item, SlotRuntime  # noqa: E402
from flink_agents.runtime.flink.state import MEMORY, MEMORY_V1, KeyedState  # noqa: E402
from flink_agents.runtime.memory import OBJECT  # noqa: E402
from tests.fakes import (  # noqa: E402
    FakeJavaBackend,
    FakePythonBackend,
    FakeRuntimeContext,
    install_void_namespace,
)
from tests.flink import agents  # noqa: E402
from tests.runtime.test_flink_approval_paths import _Ctx  # noqa: E402

KEYS = 4
ROUNDS = 3


class _JavaCtx(_Ctx):
    """The function's context over the Java (thread-mode) fake backend."""

    def get_current_key(self) -> Any:
        return self.backend.getCurrentKey()


def _function(context: FakeRuntimeContext) -> tuple[fn.AgentProcessFunction, SlotRuntime]:
    plan = AgentPlan.from_agent(agents.memory_agent(), {})  # a zero-latency model
    function = fn.AgentProcessFunction(plan.model_dump_json(), {}, key_of=lambda r: r["key"])
    slot = SlotRuntime(plan)
    function.bind(KeyedState.open(context, ttl=None, keyless=False), slot)
    return function, slot


def _send(function: fn.AgentProcessFunction, backend: Any, ctx: Any, i: int) -> Any:
    """Input ``i`` of key ``u{i % KEYS}``; its output (the run finishes at once)."""
    key = f"u{i % KEYS}"
    if isinstance(backend, FakeJavaBackend):
        backend.setCurrentKey(key)
    else:
        backend.set_current_key(key)
    (out,) = [o for _, o in function.process_element({"key": key, "i": i}, ctx)]
    return out


def test_a_run_reads_memory_with_one_lookup_and_writes_it_once(monkeypatch) -> None:
    install_void_namespace(monkeypatch)
    # Thread mode after a restore of layout 2: some key may have memory, none of layout 1.
    backend = FakeJavaBackend(with_keys={MEMORY})
    context = FakeRuntimeContext(backend)
    function, slot = _function(context)
    state = function.state
    assert state is not None and state.legacy_memory is None and not state.memory_unused
    counts = state.count_accesses()
    ctx = _JavaCtx(backend)
    try:
        outputs = [_send(function, backend, ctx, i) for i in range(KEYS * ROUNDS)]
    finally:
        slot.close()
    assert [o["count"] for o in outputs] == [i // KEYS + 1 for i in range(KEYS * ROUNDS)]
    assert outputs[-1]["seen"] == list(range(KEYS - 1, KEYS * ROUNDS, KEYS))
    runs = KEYS * ROUNDS
    # No run iterates a map: a point lookup when the run starts and one when it commits
    # (the memory its changes apply to), one write.
    assert counts == {"memory.value": 2 * runs, "memory.update": runs}
    assert context.states[MEMORY].by_key["u0"] == [
        {"stats": OBJECT, "stats.count": ROUNDS, "seen": list(range(0, KEYS * ROUNDS, KEYS))}
    ]


def test_a_batch_run_reads_memory_once_and_commits_onto_what_it_read(monkeypatch) -> None:
    """Thread mode's batches: the commit applies a run's changes to the memory its input
    read (no second lookup: on RocksDB at 100,000 keys it was 40 % of the operator thread),
    never to another input's, also with keys interleaved in one batch."""
    install_void_namespace(monkeypatch)
    backend = FakeJavaBackend(with_keys={MEMORY})
    context = FakeRuntimeContext(backend)
    function, slot = _function(context)
    state = function.state
    assert state is not None and not state.memory_unused
    counts = state.count_accesses()
    ctx = _JavaCtx(backend)
    runs = KEYS * ROUNDS
    batch = [[f"u{i % KEYS}", {"key": f"u{i % KEYS}", "i": i}, KEEP_TIMESTAMP] for i in range(runs)]
    try:
        outputs = [o for _, o in function.process_batch(batch[:-2], lambda v: v, ctx)]
        assert state._known is None  # forgotten after the batch
        # Between batches memory changes elsewhere (e.g. a timer's commit): read again.
        context.states[MEMORY].by_key["u3"][0]["seen"] = ["elsewhere"]
        outputs += [o for _, o in function.process_batch(batch[-2:], lambda v: v, ctx)]
    finally:
        slot.close()
    assert [o["count"] for o in outputs] == [i // KEYS + 1 for i in range(runs)]
    assert outputs[-3]["seen"] == list(range(1, runs - 2, KEYS))
    assert outputs[-1]["seen"] == ["elsewhere", runs - 1]
    assert counts == {"memory.value": runs, "memory.update": runs}
    assert context.states[MEMORY].by_key["u0"] == [
        {"stats": OBJECT, "stats.count": ROUNDS, "seen": list(range(0, runs, KEYS))}
    ]


def test_memory_of_layout_1_moves_to_layout_2_when_its_key_is_first_met() -> None:
    # Process mode cannot ask the backend: layout 1's memory may be there for any key.
    backend = FakePythonBackend("u1")
    context = FakeRuntimeContext(backend)
    function, slot = _function(context)
    state = function.state
    assert state is not None and state.legacy_memory is not None
    legacy = context.states[MEMORY_V1]
    legacy.data.update({"stats": OBJECT, "stats.count": 2, "seen": [-7, -3]})
    counts = state.count_accesses()
    ctx = _Ctx(backend)
    try:
        first = _send(function, backend, ctx, 1)  # u1: moved, then its run
        assert (first["count"], first["seen"]) == (3, [-7, -3, 1])
        assert legacy.by_key["u1"] == {}
        assert context.states[MEMORY].by_key["u1"] == [
            {"stats": OBJECT, "stats.count": 3, "seen": [-7, -3, 1]}
        ]
        # (and one look at pending inputs of a restore: process mode cannot tell)
        assert counts == {
            "pending.get": 1,
            "memory.value": 2,
            "legacy_memory.items": 1,
            "legacy_memory.clear": 1,
            "memory.update": 2,  # moved, then the run's changes
        }
        counts.clear()
        again = _send(function, backend, ctx, 1 + KEYS)  # u1 has layout 2's paths now
        assert (again["count"], again["seen"]) == (4, [-7, -3, 1, 1 + KEYS])
        assert "legacy_memory.items" not in counts and counts["memory.value"] == 2
        counts.clear()
        # A key without memory in either layout: looked up there once.
        assert _send(function, backend, ctx, 2)["count"] == 1
        assert counts["legacy_memory.items"] == 1 and "legacy_memory.clear" not in counts
        counts.clear()
        assert _send(function, backend, ctx, 2 + KEYS)["count"] == 2
        assert "legacy_memory.items" not in counts
    finally:
        slot.close()


def test_a_key_that_never_writes_memory_is_looked_up_in_layout_1_once() -> None:
    # Process mode, the chat agent (no memory): layout 1 is looked at once per key, not per
    # run (each look a request to the JVM: most of process mode's cost per record).
    backend = FakePythonBackend("u1")
    context = FakeRuntimeContext(backend)
    plan = AgentPlan.from_agent(agents.chat_agent(), {})
    function = fn.AgentProcessFunction(plan.model_dump_json(), {}, key_of=lambda r: r["key"])
    slot = SlotRuntime(plan)
    function.bind(KeyedState.open(context, ttl=None, keyless=False), slot)
    state = function.state
    assert state is not None and state.legacy_memory is not None
    counts = state.count_accesses()
    ctx = _Ctx(backend)
    try:
        for i in range(KEYS * ROUNDS):
            _send(function, backend, ctx, i)  # one output each
    finally:
        slot.close()
    assert counts["legacy_memory.items"] == KEYS
    assert counts["memory.value"] == KEYS * ROUNDS


def test_thread_mode_looks_for_layout_1_memory_only_when_the_backend_holds_some(
    monkeypatch,
) -> None:
    install_void_namespace(monkeypatch)
    fresh = KeyedState.open(FakeRuntimeContext(FakeJavaBackend()), ttl=None, keyless=False)
    assert fresh.legacy_memory is None and fresh.memory_unused
    old = FakeJavaBackend(with_keys={MEMORY_V1})
    restored = KeyedState.open(FakeRuntimeContext(old), ttl=None, keyless=False)
    assert restored.legacy_memory is not None and not restored.memory_unused
    keyless = KeyedState.open(FakeRuntimeContext(old), ttl=None, keyless=True)
    assert keyless.legacy_memory is None and keyless.memory_unused


def test_deletes_and_ttl(monkeypatch) -> None:
    install_void_namespace(monkeypatch)
    backend = FakeJavaBackend(key="k")
    context = FakeRuntimeContext(backend)
    state = KeyedState.open(context, ttl=60.0, keyless=False)
    state.commit_memory({"a": 1, "b": 2, "c": 3}, [])
    assert state.load_memory() == {"a": 1, "b": 2, "c": 3}
    state.commit_memory({"d": 4}, ["b"])
    assert context.states[MEMORY].value() == {"a": 1, "c": 3, "d": 4}
    state.commit_memory({}, ["a", "c", "d"])
    assert context.states[MEMORY].value() is None and state.load_memory() == {}
    state.commit_memory({"e": 5}, [])
    # The memory's TTL passed: it is gone, read as empty.
    context.states["fa-memory-touched"].update(1.0)
    assert state.load_memory() == {}
    assert context.states[MEMORY].value() is None
    assert context.states["fa-memory-touched"].value() is None


def _process_mode(restored: str | None, agent: Any) -> tuple[Any, ...]:
    """A process-mode function whose operator said ``restored`` (None: nothing, as PyFlink's
    own operator), with its state's calls counted."""
    backend = FakePythonBackend("u0")
    parameters = {} if restored is None else {RESTORED_PARAMETER: restored}
    context = FakeRuntimeContext(backend, job_parameters=parameters)
    plan = AgentPlan.from_agent(agent, {})
    function = fn.AgentProcessFunction(plan.model_dump_json(), {}, key_of=lambda r: r["key"])
    slot = SlotRuntime(plan)
    function.bind(KeyedState.open(context, ttl=None, keyless=False), slot)
    state = function.state
    assert state is not None
    return function, slot, state, backend, context


def test_a_fresh_process_mode_operator_reads_no_state_for_new_keys() -> None:
    """Process mode's backend cannot be asked what it holds: the bridge jar's operator says
    it started without state (``isRestored()``), and no key's pending inputs, memory or
    layout-1 memory is read (each a blocking request to the JVM per key otherwise)."""
    function, slot, state, backend, context = _process_mode("false", agents.chat_agent())
    assert state.started_fresh and not state.check_restored and state.memory_unused
    assert state.legacy_memory is None
    # Each state is registered when first used (PyFlink's process-mode backend works for
    # every registered state at every key switch): none yet.
    assert context.states == {}
    counts = state.count_accesses()
    ctx = _Ctx(backend)
    try:
        for i in range(KEYS * ROUNDS):
            _send(function, backend, ctx, i)  # one output each
    finally:
        slot.close()
    assert counts == {} and context.states == {}


def test_a_fresh_process_mode_operator_reads_memory_once_some_key_has_it() -> None:
    function, slot, state, backend, context = _process_mode("false", agents.memory_agent())
    counts = state.count_accesses()
    ctx = _Ctx(backend)
    try:
        first = _send(function, backend, ctx, 0)  # u0: nothing read, its memory written
        assert counts == {"memory.update": 1} and not state.memory_unused
        assert set(context.states) == {MEMORY}  # registered when first written
        outputs = [first] + [_send(function, backend, ctx, i) for i in range(1, KEYS * ROUNDS)]
    finally:
        slot.close()
    assert [o["count"] for o in outputs] == [i // KEYS + 1 for i in range(KEYS * ROUNDS)]
    assert context.states[MEMORY].by_key["u1"][0]["seen"] == list(range(1, KEYS * ROUNDS, KEYS))
    assert "pending.get" not in counts and "legacy_memory.items" not in counts


@pytest.mark.parametrize("restored", ["true", None, "something else"])
def test_a_restored_or_unknown_process_mode_operator_looks_for_state_of_each_key(
    restored: str | None,
) -> None:
    """After a restore (of any version, layout 1 too), or when nothing says (PyFlink's own
    operator, a jar of an older contract), each new key is looked up as before."""
    function, slot, state, backend, context = _process_mode(restored, agents.memory_agent())
    assert not state.started_fresh and state.check_restored and not state.memory_unused
    assert state.legacy_memory is not None
    context.states[MEMORY_V1].by_key["u1"] = {"stats": OBJECT, "stats.count": 2, "seen": [-1]}
    ctx = _Ctx(backend)
    # u2's input left pending by the restore: it runs first, before the new one.
    backend.set_current_key("u2")
    function.state.add_pending(Item("before", KEEP_TIMESTAMP, {"key": "u2", "i": -2}))
    counts = state.count_accesses()
    try:
        moved = _send(function, backend, ctx, 1)
        assert (moved["count"], moved["seen"]) == (3, [-1, 1])
        backend.set_current_key("u2")
        resumed = list(function.process_element({"key": "u2", "i": 2}, ctx))
        assert resumed == []  # the restored input and the new one wait for the key's timer
        assert "u2" in function._active and ctx.timers
    finally:
        slot.close()
    assert counts["pending.get"] == 2 and counts["legacy_memory.items"] == 2


class _DeletingCtx(_Ctx):
    """:class:`_Ctx` that notes the timers deleted, with the backend's key then."""

    def __init__(self, backend: FakePythonBackend) -> None:
        super().__init__(backend)
        self.deleted: list[tuple[str, Any]] = []

    def delete_processing_time_timer(self, at: int) -> None:
        self.deleted.append(("processing", self.backend.key))

    def delete_event_time_timer(self, at: int) -> None:
        self.deleted.append(("event", self.backend.key))


def test_process_mode_inputs_commit_other_keys_finished_runs() -> None:
    """A run that waited is committed by a later input of another key, under its own key
    (outputs, pending inputs cleared, its timers deleted), not at its timer: in process mode
    that timer reaches the JVM with the worker's next output flush and fires back in a later
    bundle (1-2 s). PyFlink's own operator (no barrier timers): inputs are stored at once."""
    function, slot, state, backend, context = _process_mode(None, agents.chat_agent(0.05))
    ctx = _DeletingCtx(backend)
    try:
        backend.set_current_key("a")
        assert list(function.process_element({"key": "a", "i": 0}, ctx)) == []  # waits
        assert context.states["fa-pending"].by_key["a"] != []
        work = function._active["a"]
        assert work.wait_idle(5.0)
        backend.set_current_key("b")
        function._sweep_at = 0.0  # (the sweep runs at most every _SWEEP_INTERVAL)
        outputs = [o for _, o in function.process_element({"key": "b", "i": 1}, ctx)]
        assert [o["i"] for o in outputs] == [0]  # a's output; b's own run waits
        assert "a" not in function._active and "b" in function._active
        assert context.states["fa-pending"].by_key["a"] == []
        assert ("processing", "a") in ctx.deleted and ("event", "a") in ctx.deleted
        assert backend.key == "b"  # put back
    finally:
        slot.close()


class _TimerCtx(_DeletingCtx):
    """:class:`_DeletingCtx` that notes the timers registered too, with the backend's key."""

    def __init__(self, backend: FakePythonBackend) -> None:
        super().__init__(backend)
        self.registered: list[tuple[str, Any]] = []

    def register_processing_time_timer(self, at: int) -> None:
        super().register_processing_time_timer(at)
        self.registered.append(("processing", self.backend.key))

    def register_event_time_timer(self, at: int) -> None:
        self.registered.append(("event", self.backend.key))


def _input(function: Any, backend: Any, ctx: Any, key: str, i: int) -> list[Any]:
    backend.set_current_key(key)
    return [o["i"] for _, o in function.process_element({"key": key, "i": i}, ctx)]


def _timer(function: Any, backend: Any, ctx: Any, key: str, at: int, domain: Any) -> list[Any]:
    backend.set_current_key(key)
    ctx.domain = domain
    try:
        return [o["i"] for _, o in function.on_timer(at, ctx)]
    finally:
        ctx.domain = TimeDomain.PROCESSING_TIME


def test_fresh_process_mode_keeps_inputs_out_of_state_until_a_barrier() -> None:
    """With the bridge jar's operator (a barrier timer before every checkpoint barrier),
    inputs of runs that wait are held in the function, not written to keyed state, and one
    shared processing-time timer and one drain timer stand in for two timers per key: a
    run committed before the next barrier costs no state request and no timer (each a
    request to the JVM, or work at the bundle's end). Committed by later inputs, or by
    the shared timer."""
    function, slot, state, backend, context = _process_mode("false", agents.chat_agent(0.05))
    ctx = _TimerCtx(backend)
    try:
        assert _input(function, backend, ctx, "a", 0) == []  # waits
        assert _input(function, backend, ctx, "b", 1) == []
        assert context.states == {}  # nothing written, nothing registered
        assert ctx.registered == [("processing", "a"), ("event", "a")]  # shared, once
        assert function._active["a"].wait_idle(5.0) and function._active["b"].wait_idle(5.0)
        function._sweep_at = 0.0
        assert sorted(_input(function, backend, ctx, "c", 2)) == [0, 1]  # a's and b's
        assert backend.key == "c" and set(function._active) == {"c"}
        assert function._active["c"].wait_idle(5.0)
        # The shared timer (under a) commits c's run; no key is left: not armed again.
        sweep = function._sweep_timer
        assert _timer(function, backend, ctx, "a", sweep, TimeDomain.PROCESSING_TIME) == [2]
        assert function._active == {} and function._sweep_timer is None
        assert ctx.registered == [("processing", "a"), ("event", "a")]
        assert ctx.deleted == [] and context.states == {}
    finally:
        slot.close()


def test_a_barrier_stores_held_inputs_with_their_timers_and_the_drain_commits_the_rest() -> None:
    """The barrier timer writes the held inputs of every key with work in flight, under its
    key, and arms the key's own timers (a restore runs them again and resumes the key); a
    stored key is committed and forgotten as before. At the end of input the shared drain
    timer waits for and commits every key still held."""
    function, slot, state, backend, context = _process_mode("false", agents.chat_agent(0.2))
    ctx = _TimerCtx(backend)
    try:
        assert _input(function, backend, ctx, "a", 0) == []
        assert _input(function, backend, ctx, "a", 1) == []  # a's second input, held too
        assert context.states == {}
        ctx.registered.clear()
        assert _timer(function, backend, ctx, "z", BARRIER_TIMER, TimeDomain.PROCESSING_TIME) == []
        pending = context.states["fa-pending"].by_key
        assert [r[2]["i"] for r in pending["a"]] == [0, 1]  # in arrival order
        assert ctx.registered == [("processing", "a"), ("event", "a")] and backend.key == "z"
        assert function._active["a"].stored and function._unstored == {}
        assert _input(function, backend, ctx, "b", 2) == []  # a new key: held
        assert "b" not in pending
        # The drain (under any key) commits b, then a's own drain timer commits a.
        assert _timer(function, backend, ctx, "a", DRAIN_TIME, TimeDomain.EVENT_TIME) == [
            2,
            0,
            1,
        ]
        assert function._active == {} and pending["a"] == [] and "b" not in pending
        assert backend.key == "a"
    finally:
        slot.close()
