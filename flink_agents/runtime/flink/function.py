"""The keyed ProcessFunction that runs an agent plan per key (host 2 of the core).

Keyed state of a key:

- ``memory`` (``MapState`` path -> value): committed short-term memory, flattened. With
  ``short-term-memory.ttl`` it expires as a whole that many seconds after the key's last
  memory change (``memory-touched`` ``ValueState``; checked when the key's memory is next
  loaded);
- ``pending`` (``ListState``): inputs accepted and not committed yet, in arrival order
  (a restore re-runs exactly these);
- ``durable`` (``MapState`` ``"<input id>/<call id>"`` -> record): durable calls of runs not
  committed yet, so a restore answers them from state instead of calling again.

Input arrives one record per ``process_element`` call, or (thread mode, the bridge jar's
operator) in batches through :meth:`AgentProcessFunction.process_batch`, which handles each
input as ``process_element`` would, switching the keyed state backend to its key only when
state or timers are used; see ``batch.size``.

Flow: ``process_element`` starts an idle key's run on the slot's loop and waits only until
the run finishes or really waits; a run that finished is committed and emitted right there
(no timer: they cost ~2x per record). A run that waits leaves its input in ``pending`` and
arms a processing-time timer plus an event-time *drain* timer at ``2**62``; later inputs of
the key join its chain (:class:`~flink_agents.runtime.flink.slot.KeyWork`). ``on_timer``
collects finished results, emits them in input order and commits them. At the end of a
bounded input pending processing-time timers are dropped, but the watermark jumps to MAX
and fires the drain timer, which waits for the key's work and commits all of it.

Outputs are emitted as ``(timestamp code, output)`` pairs so the input's timestamp can be
put back on the output downstream (outputs from timers would otherwise carry no timestamp or
the drain timer's): :data:`KEEP_TIMESTAMP` for outputs emitted while their input is processed
(Flink already gave them its timestamp; reading it costs a call per record),
:data:`NO_TIMESTAMP` for an input without one, else the input's timestamp. For the bridge
jar's Java operator a pair is *packed* into one byte string (:func:`pack_output`: the code as
8 bytes, then the pickled output), which crosses into Java as a ``byte[]`` with no per-record
tuple conversion; without the jar it stays a Python tuple for the Python fallback.

When durable records are saved: a durable call completes on the slot's loop thread
(:meth:`~flink_agents.runtime.flink.slot.KeyWork.record`), where no keyed state may be
written, and PyFlink lets a function write only the state of the current key, from
``process_element`` / ``on_timer``. So records are written to ``durable``

- right before every checkpoint barrier, for every key with work in flight, including runs
  that finished but are not committed yet (:meth:`AgentProcessFunction.before_barrier`).
  The environment runs the function in an operator of the bridge jar instead of PyFlink's:
  in thread mode ``org.flinkagents.flink.AgentKeyedProcessOperator``, whose
  ``prepareSnapshotPreBarrier`` calls the hook that :func:`claim_barrier_hook` hands it; in
  process mode ``org.flinkagents.flink.AgentExternalKeyedProcessOperator``, which hands the
  function a timer at :data:`BARRIER_TIMER` in the bundle that the barrier finishes
  (PyFlink's operator runs no Python at a barrier when that bundle is empty). The hook
  switches the keyed state backend (the Java one in thread mode, PyFlink's Python one in
  process mode) to each key and back; the key object is taken from the backend when the key
  first waits, so nothing is added to the synchronous path. A checkpoint therefore holds
  every call completed before its barrier, and a restore from it repeats only calls
  completed after the barrier (or still running);
- at each processing-time timer of the key while its run is in progress. Without the bridge
  jar's operator classes (the environment warns once and uses PyFlink's operators) this is
  all there is: a call completed after the key's last timer before a checkpoint is repeated
  after a restore from it.

Runs that complete without waiting are committed at once and need no record.
"""

from __future__ import annotations

import logging
import pickle
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from pyflink.common.typeinfo import Types
from pyflink.datastream import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from pyflink.datastream.time_domain import TimeDomain

from flink_agents.api._function import dumps
from flink_agents.api.core_options import AgentExecutionOptions, ShortTermMemoryTtlUpdate
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import DurableRecord, RunResult
from flink_agents.runtime.flink.slot import Item, KeyWork, SlotRuntime

log = logging.getLogger("flink_agents.runtime.flink")

#: Event-time of the drain timer: fired only when the watermark jumps to MAX at the end
#: of a bounded input.
DRAIN_TIME = 2**62

#: Timestamp codes of the output pairs (see the Java ``CarriedTimestampOperator``).
KEEP_TIMESTAMP = -(2**63)
NO_TIMESTAMP = KEEP_TIMESTAMP + 1

#: A packed output's head: its timestamp code, a big-endian signed 64-bit integer.
_CODE = struct.Struct(">q")
_KEEP_HEAD = _CODE.pack(KEEP_TIMESTAMP)


def pack_output(ts: int, output: Any) -> bytes:
    """``(timestamp code, output)`` as one byte string: the code as 8 bytes (big-endian),
    then the pickled output (``org.flinkagents.flink.CarriedTimestampOperator`` splits it)."""
    head = _KEEP_HEAD if ts == KEEP_TIMESTAMP else _CODE.pack(ts)
    try:
        return head + pickle.dumps(output)
    except pickle.PicklingError:  # an object of a job script's class (see dumps)
        return head + dumps(output)


#: Bounds of the processing-time timer delay (ms); the delay follows observed run time.
_MIN_DELAY_MS = 2
_MAX_DELAY_MS = 1000

#: Time of the timer that the process-mode operator hands the function right before each
#: checkpoint barrier (Long.MIN_VALUE; ``AgentExternalKeyedProcessOperator.BARRIER_TIMER``).
BARRIER_TIMER = -(2**63)

#: The function opened last on each thread (thread mode) and not bound to a barrier hook yet,
#: by thread id. One per thread: a keyed function heads its operator, so an operator never
#: holds two; an entry left by PyFlink's plain operator is replaced by the next open().
_UNCLAIMED: dict[int, AgentProcessFunction] = {}
_UNCLAIMED_LOCK = threading.Lock()


class BarrierHook:
    """What the thread-mode operator calls right before each checkpoint barrier."""

    def __init__(self, function: AgentProcessFunction | None) -> None:
        self._function = function

    def before_barrier(self, checkpoint_id: int) -> None:
        """Save the function's durable records (:meth:`AgentProcessFunction.before_barrier`)."""
        if self._function is not None:
            self._function.before_barrier(checkpoint_id)


def claim_barrier_hook() -> BarrierHook:
    """The checkpoint-barrier hook of the function opened last on this thread.

    Called by the Java operator ``org.flinkagents.flink.AgentKeyedProcessOperator`` (thread
    mode) in its Python interpreter right after the function's ``open()``, on the same
    thread. The operator calls the hook's ``before_barrier(checkpoint_id)`` in
    ``prepareSnapshotPreBarrier``, on the task thread.
    """
    with _UNCLAIMED_LOCK:
        function = _UNCLAIMED.pop(threading.get_ident(), None)
    if function is None:
        log.warning("no flink-agents function was opened on this thread: no barrier hook")
    else:
        function.barrier_hook = True
    return BarrierHook(function)


def _key_backend(runtime_context: RuntimeContext) -> tuple[Any, bool]:
    """The keyed state backend whose current key the barrier hook switches, and whether it
    is the Java one (PyFlink internals). Thread mode: the Java ``KeyedStateBackend`` behind
    ``fn_execution.embedded.state_impl.KeyedStateBackend``; process mode: PyFlink's
    ``fn_execution.state_impl.RemoteKeyedStateBackend``. None if neither is found."""
    backend = getattr(runtime_context, "_keyed_state_backend", None)
    j_backend = getattr(backend, "_keyed_state_backend", None)
    if j_backend is not None:
        return j_backend, True
    if hasattr(backend, "set_current_key") and hasattr(backend, "get_current_key"):
        return backend, False
    return None, False


def _timestamp(ctx: KeyedProcessFunction.Context) -> int:
    ts = ctx.timestamp()
    # Flink says "no timestamp" with None or Long.MIN_VALUE (after a Python operator).
    return NO_TIMESTAMP if ts is None or ts == KEEP_TIMESTAMP else ts


def _may_hold(java_backend: Any, state_name: str) -> bool:
    """False when no key has an entry in the keyed state ``state_name`` (a fresh start, or a
    restore from a checkpoint without any); True when some key may.

    Thread mode asks the Java keyed state backend (see :func:`_key_backend`) for the keys of
    the state (PyFlink internals, so any failure answers True); process mode
    (``java_backend`` None) cannot ask and answers True.
    """
    if java_backend is None:
        return True
    try:
        from pyflink.fn_execution.embedded.state_impl import JVoidNamespace_INSTANCE

        keys = java_backend.getKeys(state_name, JVoidNamespace_INSTANCE)
        try:
            return bool(keys.findAny().isPresent())
        finally:
            keys.close()
    except Exception:  # noqa: BLE001 - PyFlink changed: check per record
        return True


class AgentProcessFunction(KeyedProcessFunction):
    """Runs ``plan_json`` per key; emits ``(timestamp code, output)`` pairs.

    Args:
        plan_json: the plan as JSON (what travels to the task side).
        secrets: the plan's secret arguments, kept out of the JSON (pickled with this
            function, never written to state or logs).
        keyless: True when the input had no key selector: each record is its own run and
            short-term memory lives for that run only.
        packed: emit each pair packed into bytes (:func:`pack_output`) instead of a tuple.
        key_of: the user's key selector (``KeySelector.get_key``), to compute a record's key
            again instead of asking Flink for it: a selector must be deterministic, and
            ``ctx.get_current_key()`` costs a call into Java and an unpickling per record.
            None (keyless input, whose round-robin key is not) asks Flink.
    """

    #: Whether each run restarts the memory TTL (set in ``open``).
    _ttl_on_read = False

    def __init__(
        self,
        plan_json: str,
        secrets: dict[str, Any],
        *,
        keyless: bool = False,
        packed: bool = False,
        key_of: Callable[[Any], Any] | None = None,
    ):
        self._plan_json = plan_json
        self._key_of = key_of
        self._secrets = secrets
        self._keyless = keyless
        self._packed = packed
        self.slot: SlotRuntime | None = None
        self._active: dict[Any, KeyWork] = {}
        self._key_backend: Any = None
        self._java_keys = False
        self._barrier_failed = False
        self._memory_unused = False
        #: The Java key of the batch input being processed, until the backend is switched to
        #: it (:meth:`process_batch`).
        self._batch_key: Any = None
        self.batch_size = 1
        self.batch_linger_ms = 0
        #: Whether an operator may call :meth:`before_barrier`, so keys going async keep
        #: their state key (thread mode: once claim_barrier_hook bound the function).
        self.barrier_hook = False

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["slot"] = None
        state["_active"] = {}
        state["_key_backend"] = None
        state["barrier_hook"] = False
        return state

    # -- lifecycle -------------------------------------------------------------------------------
    def open(self, runtime_context: RuntimeContext) -> None:
        plan = AgentPlan.model_validate_json(self._plan_json).with_secrets(self._secrets)
        config = plan.get_config()
        self.slot = SlotRuntime(plan)
        # Java resources: bind the pemja bridge to this job's classloader. Must run on the
        # operator thread (pemja's findClass fails on other Python threads); a no-op in
        # process mode. Plans without Java resources do not need the bridge jar.
        from flink_agents.runtime.java import init_java_bridge, java_resources

        if java_resources(plan):
            init_java_bridge(self.slot.runner.resources)
        self._active = {}
        self._prefix = f"{uuid.uuid4().hex[:12]}-"
        self._counter = 0

        self.memory = runtime_context.get_map_state(
            MapStateDescriptor("fa-memory", Types.STRING(), Types.PICKLED_BYTE_ARRAY())
        )
        # Short-term memory TTL is ours, for the key's memory as a whole (Flink's per-entry
        # state TTL would expire single paths, and did not expire entries in a test through
        # PyFlink): the time of the key's last memory change, checked when memory is loaded.
        self._ttl = config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_TTL)
        # ON_READ_AND_WRITE (upstream's default): a run of the key reads its memory, so the
        # TTL starts again after every run, not only after a change.
        self._ttl_on_read = (
            bool(self._ttl)
            and config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE)
            is ShortTermMemoryTtlUpdate.ON_READ_AND_WRITE
        )
        #: Inputs per Python call and the longest wait for a batch to fill (ms), for the
        #: bridge jar's thread-mode operator (see process_batch).
        self.batch_size = config.get(AgentExecutionOptions.BATCH_SIZE)
        self.batch_linger_ms = config.get(AgentExecutionOptions.BATCH_LINGER_MS)
        self.touched = (
            runtime_context.get_state(ValueStateDescriptor("fa-memory-touched", Types.DOUBLE()))
            if self._ttl
            else None
        )
        self.pending = runtime_context.get_list_state(
            ListStateDescriptor("fa-pending", Types.PICKLED_BYTE_ARRAY())
        )
        self.durable = runtime_context.get_map_state(
            MapStateDescriptor("fa-durable", Types.STRING(), Types.PICKLED_BYTE_ARRAY())
        )
        self._barrier_failed = False
        self._key_backend, self._java_keys = _key_backend(runtime_context)
        # Whether a new input must look for inputs left in pending state by a restore: a
        # state read per record, skipped when keyed state certainly holds none.
        java_backend = self._key_backend if self._java_keys else None
        self._check_restored = _may_hold(java_backend, "fa-pending")
        if self._check_restored:
            log.info("keyed state may hold pending inputs from before a restore")
        # Whether a key may have short-term memory: until a run of this instance commits
        # some, a fresh start (or a restore without any) skips the memory read per record.
        self._memory_unused = not self._keyless and not _may_hold(java_backend, "fa-memory")
        # Process mode: a barrier timer (BARRIER_TIMER) may come, from the bridge jar's
        # operator. Thread mode: the operator binds the function right after open() returns
        # (claim_barrier_hook); until then there is no hook.
        self.barrier_hook = self._key_backend is not None and not self._java_keys
        if self._java_keys:
            with _UNCLAIMED_LOCK:
                _UNCLAIMED[threading.get_ident()] = self

    def close(self) -> None:
        # Not a shutdown: in thread mode close() comes before the last timers fire, so the
        # slot closes itself when its last run ends (see SlotRuntime.close).
        with _UNCLAIMED_LOCK:
            for thread_id, function in list(_UNCLAIMED.items()):
                if function is self:
                    del _UNCLAIMED[thread_id]
        if self.slot is not None:
            self.slot.close()

    # -- elements -------------------------------------------------------------------------------
    def _next_id(self) -> str:
        self._counter += 1
        return f"{self._prefix}{self._counter}"

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterator[Any]:
        return self._process(value, ctx, None)

    def process_batch(self, batch: Any, convert: Any, ctx: Any) -> list[Any]:
        """The outputs of a batch of inputs, processed in order as process_element would
        (thread mode, the bridge jar's operator: :class:`_LeanOperation`).

        ``batch`` holds ``[Java key, input as PyFlink hands it over, timestamp]`` per input
        (``Long.MIN_VALUE``: none); ``convert`` turns such an input into the record. The
        keyed state backend is switched to an input's key only when its state
        or timers are used (most zero-latency runs touch neither), and every output carries
        its input's timestamp code: the batch leaves after its inputs' calls.
        """
        outputs: list[Any] = []
        try:
            for key, value, ts in batch:
                self._batch_key = key
                if self._key_of is None:
                    self._use_key()  # keyless input: the round-robin key comes from Flink
                code = NO_TIMESTAMP if ts == KEEP_TIMESTAMP else ts
                outputs.extend(self._process(convert(value), ctx, code))
        finally:
            self._batch_key = None
        return outputs

    def _use_key(self) -> None:
        """Switch the keyed state backend to the current batch input's key (if not yet)."""
        key = self._batch_key
        if key is not None:
            self._batch_key = None
            self._set_state_key(key)

    def _process(self, value: Any, ctx: Any, ts: int | None) -> Iterator[Any]:
        """``ts``: the input's timestamp code when known (batches), else None (ask ``ctx``
        when needed; outputs emitted during the call keep Flink's timestamp)."""
        slot = self.slot
        assert slot is not None
        key = ctx.get_current_key() if self._key_of is None else self._key_of(value)
        item = Item(self._next_id(), KEEP_TIMESTAMP if ts is None else ts, value)
        slot.acquire()
        work = self._active.get(key)
        if work is not None:
            self._use_key()
            item.ts = _timestamp(ctx) if ts is None else ts
            self.pending.add(item.to_state())
            self._enqueue(work, item)
            self._arm(work, ctx)
            return
        if self._check_restored:
            self._use_key()
        restored = self._restored_pending() if self._check_restored else None
        if restored:
            # Inputs left from before a restore: they go first, in their order.
            item.ts = _timestamp(ctx) if ts is None else ts
            work = self._resume(key, restored, ctx)
            self.pending.add(item.to_state())
            self._enqueue(work, item)
            return
        work = KeyWork(key, self._load_memory(), persist_memory=not self._keyless)
        work.queue.append(item)
        work.running = True
        if slot.start_and_settle(work):
            slot.stats["sync"] += 1
            yield from self._commit_settled(work)
            return
        slot.stats["async"] += 1
        self._use_key()
        self._active[key] = work
        if ts is None:
            item.ts = _timestamp(ctx)  # before any timer can emit the item's outputs
        if self.barrier_hook:
            # For before_barrier. Only here and in _resume: not per record.
            work.state_key = self._state_key()
        self.pending.add(item.to_state())
        work.stored = True
        self._arm(work, ctx)

    def _enqueue(self, work: KeyWork, item: Item) -> None:
        slot = self.slot
        assert slot is not None
        started = work.enqueue(item)
        if started is None:
            # The key's chain failed; its error fails the job at the key's next timer. The
            # input stays in pending state (a restart runs it); give its place back.
            slot.release_unstarted(1)
        elif started:
            slot.start(work)

    def _load_memory(self) -> dict[str, Any]:
        """The current key's committed memory; cleared first when its TTL has passed."""
        if self._keyless or self._memory_unused:
            return {}
        self._use_key()
        if self.touched is not None:
            last = self.touched.value()
            if last is not None and time.time() - last > self._ttl:
                self.memory.clear()
                self.touched.clear()
                return {}
        return dict(self.memory.items())

    def _restored_pending(self) -> list[Item]:
        raw = self.pending.get()
        return [Item.from_state(r) for r in raw] if raw is not None else []

    def _resume(self, key: Any, items: list[Item], ctx: Any) -> KeyWork:
        """Restart a key's uncommitted inputs after a restore, with their durable records."""
        slot = self.slot
        assert slot is not None
        durable: dict[str, dict[str, DurableRecord]] = {}
        for name, raw in self.durable.items():
            item_id, _, call_id = name.rpartition("/")
            durable.setdefault(item_id, {})[call_id] = pickle.loads(raw)
        work = KeyWork(key, self._load_memory(), persist_memory=not self._keyless, durable=durable)
        work.stored = True
        work.persisted = {(i, c) for i, calls in durable.items() for c in calls}
        for item_id, calls in durable.items():
            work.live[item_id] = dict(calls)
        log.info("resuming %d pending input(s) of key %r after a restore", len(items), key)
        # Restored inputs were accepted before the restore: they take in-flight places too.
        for _ in items:
            slot.acquire()
        work.queue.extend(items)
        work.running = True
        self._active[key] = work
        if self.barrier_hook:
            work.state_key = self._state_key()
        slot.start(work)
        self._arm(work, ctx)
        return work

    def _arm(self, work: KeyWork, ctx: Any) -> None:
        """Arm the key's processing-time timer (once) and its drain timer."""
        if work.timer_at is not None:
            return
        slot = self.slot
        assert slot is not None
        service = ctx.timer_service()
        delay = int(min(max(slot.run_seconds * 1000, _MIN_DELAY_MS), _MAX_DELAY_MS))
        work.timer_at = service.current_processing_time() + delay
        service.register_processing_time_timer(work.timer_at)
        service.register_event_time_timer(DRAIN_TIME)

    # -- timers ---------------------------------------------------------------------------------
    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterator[Any]:
        if timestamp == BARRIER_TIMER:
            self.before_barrier(None)  # process mode: the operator's barrier timer
            return
        slot = self.slot
        assert slot is not None
        key = ctx.get_current_key()
        drain = ctx.time_domain() == TimeDomain.EVENT_TIME
        work = self._active.get(key)
        if work is None:
            restored = self._restored_pending()
            if not restored:
                return  # a stale timer: the key has gone idle since
            work = self._resume(key, restored, ctx)
        if drain:
            work.wait_idle()
        elif timestamp == work.timer_at:
            work.timer_at = None
        slot.stats["timer_wakeups"] += 1
        emitted = False
        for out in self._commit(work):
            emitted = True
            yield out
        if not emitted:
            slot.stats["empty_wakeups"] += 1
        service = ctx.timer_service()
        if work.is_done():
            del self._active[key]
            if work.timer_at is not None:
                service.delete_processing_time_timer(work.timer_at)
            if not drain:
                service.delete_event_time_timer(DRAIN_TIME)
            return
        self._save_durable(work, work.unpersisted())
        self._arm(work, ctx)

    # -- durable records ----------------------------------------------------------------------
    def _save_durable(self, work: KeyWork, records: list[tuple[str, str, Any]]) -> None:
        """Write ``records`` of ``work``'s key (the current key of the state backend)."""
        for item_id, call_id, rec in records:
            try:
                self.durable.put(f"{item_id}/{call_id}", dumps(rec))
            except Exception as exc:  # noqa: BLE001 - an unpicklable error result
                log.warning("durable call %s of key %r not saved: %s", call_id, work.key, exc)
            work.mark_persisted(item_id, call_id, rec)

    def _state_key(self) -> Any:
        """The current key as the keyed state backend holds it (the Java backend: a Row
        that PyFlink's key selector makes for each record, never reused)."""
        backend = self._key_backend
        return backend.getCurrentKey() if self._java_keys else backend.get_current_key()

    def _set_state_key(self, key: Any) -> None:
        if self._java_keys:
            self._key_backend.setCurrentKey(key)
        else:
            self._key_backend.set_current_key(key)

    def before_barrier(self, checkpoint_id: int | None) -> None:
        """Save the durable records that keyed state does not hold yet, of every key with
        work in flight (runs in progress and runs finished but not committed).

        Called by the operator right before it emits a checkpoint barrier, on the thread
        that runs the function, between two of its calls (``checkpoint_id`` is None in
        process mode, where it comes as a timer). Switches the keyed state backend to each
        such key and then back. An error is logged, not raised: it would fail the
        checkpoint and the task, and the records are still saved at the keys' timers.
        """
        if self.slot is None or self._key_backend is None:
            return
        try:
            saved = self._save_before_barrier()
        except Exception:
            log.log(
                logging.DEBUG if self._barrier_failed else logging.ERROR,
                "saving durable call records before the barrier of checkpoint %s failed; "
                "they are saved at the keys' timers",
                checkpoint_id,
                exc_info=True,
            )
            self._barrier_failed = True
            return
        stats = self.slot.stats
        stats["barriers"] = stats.get("barriers", 0) + 1
        if saved:
            stats["barrier_saves"] = stats.get("barrier_saves", 0) + saved
            log.debug(
                "checkpoint %s: saved %d durable call record(s) before the barrier",
                checkpoint_id,
                saved,
            )

    def _save_before_barrier(self) -> int:
        previous: Any = None
        switched = False
        saved = 0
        try:
            for work in self._active.values():
                if work.state_key is None:
                    continue
                records = work.unpersisted()
                if not records:
                    continue
                if not switched:
                    previous = self._state_key()
                    switched = True
                self._set_state_key(work.state_key)
                self._save_durable(work, records)
                saved += len(records)
        finally:
            if switched and previous is not None:
                self._set_state_key(previous)
        return saved

    # -- committing -------------------------------------------------------------------------------
    def _commit_settled(self, work: KeyWork) -> Iterator[Any]:
        """Emit and commit the one run of a key that finished without waiting (the
        synchronous path of process_element: nothing of it is in keyed state but memory,
        its chain has stopped and the work is dropped, so no lock and no bookkeeping)."""
        item, outcome = work.results[0]
        if not isinstance(outcome, RunResult):
            raise outcome
        if work.persist_memory and (outcome.memory_updates or outcome.memory_deletes):
            self._commit_memory(outcome)
        elif self._ttl_on_read and work.persist_memory and not self._memory_unused:
            self._touch_memory()
        if self._packed:
            for output in outcome.outputs:
                yield pack_output(item.ts, output)
        else:
            for output in outcome.outputs:
                yield (item.ts, output)

    def _commit_memory(self, outcome: RunResult) -> None:
        """Write a run's memory changes to the current key's ``MapState``."""
        self._use_key()
        if outcome.memory_updates:
            self._memory_unused = False
        for path in outcome.memory_deletes:
            self.memory.remove(path)
        for path, value in outcome.memory_updates.items():
            self.memory.put(path, value)
        if self.touched is not None:
            self.touched.update(time.time())

    def _touch_memory(self) -> None:
        """Start the current key's memory TTL again (a run read it)."""
        self._use_key()
        if self.touched is not None:
            self.touched.update(time.time())

    def _commit(self, work: KeyWork) -> Iterator[Any]:
        """Emit and commit the key's finished runs, in input order."""
        done = work.take_results()
        if not done:
            return
        committed: set[str] = set()
        packed = self._packed
        for item, outcome in done:
            if not isinstance(outcome, RunResult):
                raise outcome
            if work.persist_memory and (outcome.memory_updates or outcome.memory_deletes):
                self._commit_memory(outcome)
            elif self._ttl_on_read and work.persist_memory and not self._memory_unused:
                self._touch_memory()
            for output in outcome.outputs:
                yield pack_output(item.ts, output) if packed else (item.ts, output)
            committed.add(item.id)
        if work.persisted:
            with work.lock:
                for item_id in committed:
                    work.live.pop(item_id, None)
            gone = {pc for pc in work.persisted if pc[0] in committed}
            for item_id, call_id in gone:
                self.durable.remove(f"{item_id}/{call_id}")
            work.persisted -= gone
        elif work.live:
            with work.lock:
                for item_id in committed:
                    work.live.pop(item_id, None)
        if work.stored:
            if work.is_done():
                self.pending.clear()
            else:
                left = [r for r in self.pending.get() if r[0] not in committed]
                self.pending.update(left)


class _LeanOperation:
    """Stands in for PyFlink's thread-mode operation object of an agent function: the same
    calls, with the per-record path cut to what the function needs.

    PyFlink's operation turns each input into a ``Row`` (unpickling the key the function
    does not use), then passes it and each output through three generator layers: ~4 us
    of Python per record (~8 us inside the TaskManager). Here the record field is converted
    with PyFlink's own converter and the function's generator goes back as it is; timers,
    ``open`` and ``close`` are PyFlink's.
    """

    def __init__(self, operation: Any, process_element: Any, ctx: Any, convert: Any) -> None:
        self._operation = operation
        self._process_element = process_element
        self._function: AgentProcessFunction = process_element.__self__
        self._ctx = ctx
        self._convert = convert

    def batch_settings(self) -> list[int]:
        """``[inputs per call, longest wait in ms]``: batches only where the function's
        keyed state backend can be switched per input (the Java one, thread mode)."""
        function = self._function
        if not function._java_keys or function.batch_size <= 1:
            return [1, 0]
        return [function.batch_size, function.batch_linger_ms]

    def _record(self, value: Any) -> Any:
        # ``value``: ``[row kind, [key, record]]``, the keyed input as PyFlink's Java side
        # hands it over.
        return self._convert(value[1][1])

    def process_batch(self, batch: Any) -> list[Any]:
        """The outputs of a batch of inputs (:meth:`AgentProcessFunction.process_batch`)."""
        return self._function.process_batch(batch, self._record, self._ctx)

    def process_element(self, value: Any) -> Any:
        return self._process_element(self._record(value), self._ctx)

    def process_element_list(self, value: Any) -> list[Any]:
        """The outputs of one input, as a list: what the Java operator calls per record
        (one call into Python instead of PyFlink's iterator protocol)."""
        return list(self.process_element(value))

    def on_timer(self, timestamp: int) -> Any:
        return self._operation.on_timer(timestamp)

    def open(self) -> None:
        self._operation.open()

    def close(self) -> None:
        self._operation.close()


def lean_operation(operation: Any) -> Any:
    """``operation`` (PyFlink's ``OneInputFunctionOperation``, thread mode), or a
    :class:`_LeanOperation` for it when it runs exactly an :class:`AgentProcessFunction`
    that emits packed outputs: no chained Python operators, no side outputs, a keyed
    ``(key, record)`` input and outputs that PyFlink passes on unchanged.

    Called by ``org.flinkagents.flink.AgentKeyedProcessOperator`` after PyFlink made and
    opened the operation. It reads PyFlink internals (the closure of its per-record
    function); anything unexpected keeps PyFlink's operation.
    """
    try:
        if operation._chained_operations:
            return operation
        if type(operation._output_data_converter).__name__ != "IdentityDataConverter":
            return operation
        fields = operation._input_data_converter._field_data_converters
        func = operation._main_operation._process_element_func
        cells = dict(
            zip(
                func.__code__.co_freevars,
                (c.cell_contents for c in func.__closure__ or ()),
                strict=True,
            )
        )
        process_element, ctx = cells["process_element"], cells["function_context"]
        if cells["process_func"].__code__.co_freevars:
            return operation  # it routes side outputs
        function = getattr(process_element, "__self__", None)
        if len(fields) != 2 or not isinstance(function, AgentProcessFunction):
            return operation
        if not function._packed:
            return operation
        return _LeanOperation(operation, process_element, ctx, fields[1].to_internal)
    except Exception:  # PyFlink changed: keep its operation
        log.debug("PyFlink's operation kept (no lean per-record path)", exc_info=True)
        return operation
