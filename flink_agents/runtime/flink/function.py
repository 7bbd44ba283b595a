"""The keyed ProcessFunction that runs an agent plan per key (host 2 of the core).

An idle key's input runs at once on the slot's loop and, when it finishes without a real
wait, is committed and emitted right there; a run that waits leaves its input in keyed state
and arms a processing-time timer plus an event-time drain timer, and later inputs of the key
join its chain. ``on_timer`` commits finished runs in input order (process mode: inputs
also commit other keys' finished runs, ``_sweep``). What runs when, what is
held and what is committed is decided by each key's
:class:`~flink_agents.runtime.sequencing.KeySequencer`; this module stores, emits and
schedules what it says. State access is in
:mod:`~flink_agents.runtime.flink.state`, what the Java operators call in
:mod:`~flink_agents.runtime.flink.entry`; the whole path of a record is in
docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pyflink.datastream import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.time_domain import TimeDomain

from flink_agents.api.approval import ApprovalResponse
from flink_agents.api.core_options import AgentExecutionOptions, ShortTermMemoryTtlUpdate
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.approval import drop_response
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.runtime.flink import entry, fast_paths, heap
from flink_agents.runtime.flink.metric_publisher import FlinkMetrics, FlinkMetricsOptions
from flink_agents.runtime.flink.output import (
    DEAD_LETTER,
    KEEP_TIMESTAMP,
    NO_TIMESTAMP,
    pack_output,
    timestamp_code,
)
from flink_agents.runtime.flink.slot import Item, KeyWork, SlotRuntime
from flink_agents.runtime.flink.state import KeyedState
from flink_agents.runtime.observability.event_log import attach_event_log
from flink_agents.runtime.observability.otel_options import attach_otel
from flink_agents.runtime.sequencing import (
    JOINED,
    STARTED,
    Arrival,
    Commit,
    Decision,
    Drop,
    Fail,
    KeySequencer,
    Pause,
    Resume,
    SaveDecision,
)

log = logging.getLogger("flink_agents.runtime.flink")

#: Event-time of the drain timer: fired only when the watermark jumps to MAX at the end
#: of a bounded input.
DRAIN_TIME = 2**62

#: How much earlier than a request's deadline a timer may find it expired (seconds): a
#: timer at the deadline fires at a processing time that may read a little earlier here.
_EXPIRY_SLACK = 0.005

#: Longest time close() waits for the runs of a cancelled task to stop (seconds).
_CANCEL_WAIT = 5.0

#: Bounds of the processing-time timer delay (ms); the delay follows observed run time.
_MIN_DELAY_MS = 2
_MAX_DELAY_MS = 1000

#: Process mode: how often (seconds, at most) an input also commits other keys' finished
#: runs instead of leaving them to their timers: a timer the Python worker sets reaches the
#: JVM with the worker's next output flush (PyFlink flushes at most once a second, or at
#: the bundle's end) and fires back in a later bundle, so a finished run waited 1-2 s for its
#: commit, and a burst of keys for the end-of-input drain (docs/benchmarks.md).
_SWEEP_INTERVAL = 0.01

#: Delay (ms) of process mode's shared processing-time timer (``_arm_shared``).
_SWEEP_TIMER_MS = 10

#: ``_drain_anchor`` before a shared drain timer is registered.
_NO_ANCHOR = object()


def _java_interrupt_check() -> Callable[[], bool] | None:
    """Thread mode: a check of the Java task thread's interrupt flag, which Flink sets when
    it cancels the task (the operator thread is that thread); None in process mode, where
    a cancelled task's Python worker process is stopped by Flink."""
    try:
        from pemja import findClass
    except ImportError:
        return None
    thread = findClass("java.lang.Thread")
    return lambda: bool(thread.currentThread().isInterrupted())


class AgentProcessFunction(KeyedProcessFunction):
    """Runs ``plan_json`` per key; emits ``(timestamp code, output)`` pairs.

    Args:
        plan_json: the plan as JSON (what travels to the task side).
        secrets: the plan's secret arguments, kept out of the JSON (pickled with this
            function, never written to state or logs).
        keyless: True when the input had no key selector: each record is its own run and
            short-term memory lives for that run only.
        packed: emit each pair packed into bytes (``output.pack_output``) instead of a tuple.
        key_of: the user's key selector (``KeySelector.get_key``), to compute a record's key
            again instead of asking Flink for it: a selector must be deterministic, and
            ``ctx.get_current_key()`` costs a call into Java and an unpickling per record.
            None (keyless input, whose round-robin key is not) asks Flink.
    """

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
        self.packed = packed
        #: Names this function in fast-path notes: one per job (its subtasks and restarts
        #: share it, the function is pickled once).
        self.job_id = uuid.uuid4().hex[:12]
        self.slot: SlotRuntime | None = None
        self.state: KeyedState | None = None
        self._active: dict[Any, KeyWork] = {}
        self._barrier_failed = False
        self._thread_mode = False
        self._report_file: str | None = None
        self.batch_size = 1
        self.batch_linger_ms = 0
        #: Publishes the agent metrics to Flink (set in open()).
        self.metrics: FlinkMetrics | None = None
        #: Whether an operator may call :meth:`before_barrier`, so keys going async keep
        #: their state key (thread mode: once claim_barrier_hook bound the function).
        self.barrier_hook = False

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["slot"] = None
        state["state"] = None
        state["_active"] = {}
        state["barrier_hook"] = False
        state["metrics"] = None
        return state

    # -- lifecycle -------------------------------------------------------------------------------
    def open(self, runtime_context: RuntimeContext) -> None:
        internals.check_version()
        plan = AgentPlan.model_validate_json(self._plan_json).with_secrets(self._secrets)
        config = plan.get_config()
        slot = SlotRuntime(plan, cancelled=_java_interrupt_check())
        # Connections pace at their share of job-wide limits (limit / parallelism).
        slot.runner.resources.place(**internals.placement(runtime_context))
        # Java resources: bind the pemja bridge to this job's classloader. Must run on the
        # operator thread (pemja's findClass fails on other Python threads); a no-op in
        # process mode. Plans without Java resources do not need the bridge jar.
        from flink_agents.runtime.java import in_jvm, init_java_bridge, java_resources

        if java_resources(plan):
            init_java_bridge(slot.runner.resources)
        self._open_observability(runtime_context, slot)
        ttl = config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_TTL)
        state = KeyedState.open(
            runtime_context,
            ttl=ttl,
            # ON_READ_AND_WRITE (upstream's default): a run of the key reads its memory,
            # so the TTL starts again after every run, not only after a change.
            ttl_on_read=bool(ttl)
            and config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE)
            is ShortTermMemoryTtlUpdate.ON_READ_AND_WRITE,
            keyless=self._keyless,
        )
        self._thread_mode = in_jvm()
        self._report_file = config.get(fast_paths.REPORT_FILE)
        if not self._thread_mode:
            # Bundle ends otherwise wait up to 200 ms for Beam's sampler thread.
            sampling = internals.shorten_state_sampling()
            if sampling:
                self.note_fast_path(
                    fast_paths.STATE_SAMPLING,
                    True,
                    f"Beam's state sampler every {internals.STATE_SAMPLING_MS} ms",
                )
            elif sampling is False:  # (None: not in a Beam worker's bundle processor)
                self.note_fast_path(
                    fast_paths.STATE_SAMPLING,
                    False,
                    "Beam's worker code is not what PyFlink 1.20-2.3 ship: every bundle's end "
                    "may wait up to 200 ms for its state sampler (process mode's throughput "
                    "and concurrency drop)",
                )
        self.bind(
            state,
            slot,
            batch_size=config.get(AgentExecutionOptions.BATCH_SIZE),
            batch_linger_ms=config.get(AgentExecutionOptions.BATCH_LINGER_MS),
        )
        self._note_open()
        self._freeze_heap(config.get(AgentExecutionOptions.PYTHON_GC_FREEZE))
        if self._thread_mode and state.keys is not None and state.keys.java:
            # The thread-mode operator binds the function right after open() returns
            # (entry.claim_barrier_hook); until then there is no hook.
            entry.offer(self)

    def _freeze_heap(self, enabled: bool) -> None:
        """Keep full garbage collections off what start-up loaded (see ``heap``)."""
        if not enabled:
            self.note_fast_path(
                fast_paths.HEAP_FREEZE,
                False,
                "python.gc-freeze is off: full garbage collections walk every module and "
                "plan object too (a pause of every run each time)",
                warn=False,
            )
            return
        count, now = heap.freeze_startup_heap()
        self.note_fast_path(
            fast_paths.HEAP_FREEZE,
            True,
            f"{count} objects alive at the first operator's open in this Python process are "
            "out of full garbage collections" + ("" if now else " (frozen by an earlier open)"),
        )

    def _open_observability(self, runtime_context: RuntimeContext, slot: SlotRuntime) -> None:
        """Metrics to Flink's metric group, the event log (when enabled) to its file."""
        from flink_agents.runtime.java import in_jvm

        runner = slot.runner
        if runner.agent_metrics is not None:
            runner.agent_metrics.set_pending_source(slot.pending_inputs)
        interval = runner.config.get(FlinkMetricsOptions.PUBLISH_INTERVAL_MS) / 1000.0
        group = getattr(runtime_context, "get_metrics_group", None)  # absent in unit fakes
        if group is not None:
            jvm = in_jvm()
            self.metrics = FlinkMetrics(
                runner.metrics, group(), interval if jvm else 0, gauges_by_value=jvm
            )
        task, subtask = internals.task_identity(runtime_context)
        job_id = internals.flink_job_id(runtime_context) or self.job_id
        attach_event_log(runner, job_id=job_id, task_name=task, subtask=subtask, flink=True)
        attach_otel(runner, job_id=job_id, task_name=task, subtask=subtask)

    def bind(
        self,
        state: KeyedState,
        slot: SlotRuntime | None = None,
        *,
        batch_size: int = 1,
        batch_linger_ms: int = 0,
    ) -> None:
        """Attach the function to its keyed state and slot runtime (``open()`` does it;
        tests pass a state of fake state objects).

        Args:
            state: the keyed state.
            slot: the slot runtime that runs the agent.
            batch_size: inputs per Python call for the thread-mode operator.
            batch_linger_ms: the longest wait for a batch to fill (ms).
        """
        self.state = state
        self.slot = slot
        self._active = {}
        self._prefix = f"{uuid.uuid4().hex[:12]}-"
        self._counter = 0
        self._barrier_failed = False
        self.batch_size = batch_size
        self.batch_linger_ms = batch_linger_ms
        # Process mode: a barrier timer (entry.BARRIER_TIMER) may come, from the bridge
        # jar's operator.
        self.barrier_hook = state.keys is not None and not state.keys.java
        # Process mode: inputs commit other keys' finished runs (_sweep), which needs the
        # backend's key of each (noted with the barrier hook).
        self._sweep_at: float | None = 0.0 if self.barrier_hook else None
        # Process mode with the bridge jar's operator (a barrier timer before every
        # checkpoint barrier): a key's inputs go to keyed state, and its own timers are
        # armed, only when a barrier finds them uncommitted (_store); until then they are
        # held here (``_unstored``) and one shared timer of each kind (_arm_shared) stands in
        # for the keys' own. See docs/benchmarks.md, process mode.
        self._defer = self.barrier_hook and state.barriers
        self._unstored: dict[Any, list[Item]] = {}
        self._sweep_timer: int | None = None
        self._drain_anchor: Any = _NO_ANCHOR

    def close(self) -> None:
        if self.metrics is not None:
            self.metrics.publish()
        # Not a shutdown: in thread mode close() comes before the last timers fire, so the
        # slot closes itself when its last run ends (see SlotRuntime.close).
        if entry.withdraw(self):
            self.note_fast_path(
                fast_paths.BARRIER_HOOK,
                False,
                "no operator of the bridge jar claimed the function: PyFlink's operator ran "
                "it (see the warning when the job was built, or the TaskManager log), so "
                "durable call records were saved at timers only",
            )
        self.task_closed()

    def task_closed(self) -> None:
        """Close the slot, or stop its runs when keys still have uncommitted work: the task
        is stopped (a savepoint stop, a cancel, a failover), not drained (the drain timer
        commits every key at the end of input). Nothing of those runs will be committed and
        a restore runs them again, so they are stopped now: a call finishing after the last
        barrier would only be made twice. Thread mode's operator calls this from its
        ``close()``, which Flink calls also when the task failed or was cancelled (PyFlink
        calls :meth:`close` only at the end of input)."""
        slot = self.slot
        if slot is None:
            return
        if not self._active:
            slot.close()
            return
        log.info("closing with work of %d key(s) in flight: stopping its runs", len(self._active))
        slot.cancel()
        # Until the runs are stopped (their model calls' HTTP requests closed): a call
        # completing after the task ended would be made again too. Bounded: an action
        # blocking the loop must not hold the task's end up.
        if not slot.wait_stopped(_CANCEL_WAIT):
            log.warning(
                "the runs of the stopped task did not end within %.0f s (an action blocks "
                "the event loop or ignores its cancellation); they end on their own and "
                "nothing of them is committed",
                _CANCEL_WAIT,
            )

    # -- fast paths ------------------------------------------------------------------------------
    def note_fast_path(self, path: str, engaged: bool, detail: str, *, warn: bool = True) -> None:
        """Note once per job whether the fast path ``path`` engaged (see ``fast_paths``)."""
        fast_paths.note(
            self.job_id, path, engaged, detail, report_file=self._report_file, warn=warn
        )

    def _note_open(self) -> None:
        state, slot = self.state, self.slot
        assert state is not None and slot is not None
        note = self.note_fast_path
        note(
            fast_paths.TIMESTAMP_OPERATOR,
            self.packed,
            "outputs are unwrapped by org.flinkagents.flink.CarriedTimestampOperator"
            if self.packed
            else "the bridge jar's CarriedTimestampOperator was missing when the job was "
            "built: outputs go through two more Python operators",
        )
        note(
            fast_paths.BORROWED_LOOP,
            slot.borrows_loop,
            "the operator thread runs a run's first steps on the slot's loop"
            if slot.borrows_loop
            else "this Python's asyncio lacks what gated_loop relies on: each run is handed "
            "to the loop thread and waited for",
        )
        if state.keys is None:
            why = f"the keyed state backend was not found ({state.keys_problem})"
            note(fast_paths.BARRIER_HOOK, False, why + ": durable records saved at timers only")
            if self._thread_mode:
                note(fast_paths.BATCHES, False, why + ": one Python call per input")
        if self._thread_mode and state.keys is not None:
            if state.probe_problem is None:
                note(fast_paths.STATE_PROBE, True, "keyed state asked which states hold keys")
            else:
                note(
                    fast_paths.STATE_PROBE,
                    False,
                    f"{state.probe_problem}: pending inputs and memory are read per record",
                )
        elif state.keys is not None:
            # Process mode: the bridge jar's operator says whether it was restored.
            if state.started_fresh:
                note(
                    fast_paths.STATE_PROBE,
                    True,
                    "the operator started without state: no key's state is read before "
                    "it holds something",
                )
            else:
                note(
                    fast_paths.STATE_PROBE,
                    False,
                    "the operator was restored (or is PyFlink's own): each new key's pending "
                    "inputs and memory are read from the JVM once",
                    warn=False,
                )

    def bind_barrier_hook(self) -> None:
        """Let the thread-mode operator call :meth:`before_barrier` (entry.claim_barrier_hook)."""
        self.barrier_hook = True
        self.note_fast_path(
            fast_paths.BARRIER_HOOK, True, "durable records are saved before each barrier"
        )

    def batch_settings(self) -> tuple[int, int]:
        """``(inputs per call, longest wait in ms)`` for the thread-mode operator: batches
        only where the keyed state backend can be switched per input (the Java one)."""
        keys = self.state.keys if self.state is not None else None
        if keys is None or not keys.java:
            self.note_fast_path(
                fast_paths.BATCHES,
                False,
                "the Java keyed state backend was not found: one Python call per input",
            )
            return 1, 0
        if self.batch_size <= 1:
            self.note_fast_path(fast_paths.BATCHES, False, "batch.size is 1", warn=False)
            return 1, 0
        self.note_fast_path(
            fast_paths.BATCHES,
            True,
            f"batch.size {self.batch_size}, batch.linger-ms {self.batch_linger_ms}",
        )
        return self.batch_size, self.batch_linger_ms

    # -- elements -------------------------------------------------------------------------------
    def _next_id(self) -> str:
        self._counter += 1
        return f"{self._prefix}{self._counter}"

    def process_element(self, value: Any, ctx: KeyedProcessFunction.Context) -> Iterator[Any]:
        yield from self._process(value, ctx, None)
        sweep_at = self._sweep_at
        if sweep_at is not None and time.monotonic() >= sweep_at:
            yield from self._sweep(ctx)
        if self.metrics is not None:
            self.metrics.maybe_publish()

    def process_batch(self, batch: Any, convert: Any, ctx: Any) -> list[Any]:
        """The outputs of a batch of inputs, processed in order as process_element would
        (thread mode, the bridge jar's operator: ``entry._LeanOperation``).

        ``batch`` holds ``[Java key, input as PyFlink hands it over, timestamp]`` per input
        (``Long.MIN_VALUE``: none); ``convert`` turns such an input into the record. The
        keyed state backend is switched to an input's key only when its state or timers are
        used (most zero-latency runs touch neither), and every output carries its input's
        timestamp code: the batch leaves after its inputs' calls.
        """
        state = self.state
        assert state is not None
        outputs: list[Any] = []
        try:
            for key, value, ts in batch:
                state.batch_key = key
                if self._key_of is None:
                    state.use_key()  # keyless input: the round-robin key comes from Flink
                code = NO_TIMESTAMP if ts == KEEP_TIMESTAMP else ts
                outputs.extend(self._process(convert(value), ctx, code))
        finally:
            state.batch_key = None
        if self.metrics is not None:
            self.metrics.maybe_publish()
        return outputs

    def _process(self, value: Any, ctx: Any, ts: int | None) -> Iterator[Any]:
        """``ts``: the input's timestamp code when known (batches), else None (ask ``ctx``
        when needed; outputs emitted during the call keep Flink's timestamp)."""
        slot, state = self.slot, self.state
        assert slot is not None and state is not None
        key = ctx.get_current_key() if self._key_of is None else self._key_of(value)
        if isinstance(value, ApprovalResponse):  # subclasses too, as the local host
            yield from self._respond(key, value, ctx)
            return
        item = Item(self._next_id(), KEEP_TIMESTAMP if ts is None else ts, value)
        work = self._active.get(key)
        if work is None:
            restored = state.restored_pending() if state.check_restored else None
            if restored:
                # Inputs left from before a restore: they go first, in their order.
                work = self._resume(key, restored, ctx)
            elif not slot.try_acquire():
                # No free place, and the operator admits whole batches: the input queues
                # for one in the slot (below, as a key's later input does), its key's work
                # is kept like a running key's.
                work = KeyWork(key, state.load_memory(key), persist_memory=not self._keyless)
                self._keep(work)
            else:
                # A key without work: its input takes a place and starts the key's chain.
                work = KeyWork(
                    key, state.load_memory(key), persist_memory=not self._keyless, first=item
                )
                if slot.start_and_settle(work):
                    # The synchronous path: the chain has stopped, what it finished is
                    # committed and emitted now (read without the lock: the work is not
                    # shared); nothing of it is in keyed state (unless it paused for
                    # approval: _pause keeps it), and the work is dropped after: nothing
                    # of a committed input to forget.
                    yield from self._commit(work, work.seq.collect(), ctx, kept=False)
                    return
                self._keep_first(work, item, ctx)
                self._arm(work, ctx)
                return
        item.ts = timestamp_code(ctx.timestamp()) if ts is None else ts
        self._hold(work, item)
        with work.lock:
            arrival = work.seq.arrive(item)
        if arrival is Arrival.PLACE:
            self._place(work)
        if arrival is not Arrival.HOLD:
            self._arm(work, ctx)  # a held input waits for its run's response or deadline

    def _sweep(self, ctx: Any) -> Iterator[Any]:
        """Process mode: commit the finished runs of every key whose chain has stopped and
        waits for its timer, each under its own key (the backend is switched to it and back),
        as its timer would (the timer then finds nothing, or is deleted in time)."""
        self._sweep_at = time.monotonic() + _SWEEP_INTERVAL
        ready = [
            w for w in self._active.values() if w.idle and (w.timer_at is not None or not w.stored)
        ]
        if not ready:
            return
        with self._key_put_back() as switch:
            for work in ready:
                if work.state_key is None or self._active.get(work.key) is not work:
                    continue
                switch(work.state_key)
                yield from self._settle(work, ctx, drain=False)

    @contextlib.contextmanager
    def _key_put_back(self) -> Iterator[Callable[[Any], None]]:
        """Process mode: the keyed state backend's ``switch`` (to a key noted in a work's
        ``state_key``) for work on other keys than the current one (the sweep, the barrier
        timer, the shared drain); the current key is put back after, also on an error."""
        keys = self.state.keys if self.state is not None else None
        assert keys is not None  # (set with the barrier hook, which these need)
        previous = keys.current()
        try:
            yield keys.switch
        finally:
            keys.switch(previous)

    def _keep(self, work: KeyWork, *, stored: bool | None = None) -> None:
        """Keep ``work`` as its key's work until the key goes idle; its inputs are (or go
        now) in keyed state, or (process mode with barrier timers, ``stored`` not True) are
        held until a barrier finds them uncommitted. The backend's key object is noted for
        before_barrier (here, once per key's work: not per record)."""
        self._active[work.key] = work
        if self.barrier_hook:
            assert self.state is not None
            work.state_key = self.state.current_key()
        work.stored = not self._defer if stored is None else stored

    def _hold(self, work: KeyWork, item: Item) -> None:
        """Keep ``item``, an input of ``work``'s key, until it is committed: in keyed state,
        or here until a barrier (``_store``) when the key's inputs are not stored."""
        if work.stored:
            assert self.state is not None
            self.state.add_pending(item)
        else:
            held = self._unstored.get(work.key)
            if held is None:
                self._unstored[work.key] = [item]
            else:
                held.append(item)

    def _store(self, work: KeyWork, ctx: Any) -> None:
        """Write the held inputs of ``work``'s key (the backend's current key) to keyed
        state, in arrival order, and arm the key's own timers: from now on it is kept as
        without barrier timers."""
        state = self.state
        assert state is not None
        for item in self._unstored.pop(work.key, ()):
            state.add_pending(item)
        work.stored = True
        self._arm(work, ctx)

    def _store_unstored(self, ctx: Any) -> None:
        """Process mode, the barrier timer: every key whose inputs are held uncommitted
        (not in keyed state) gets them written, and its timers armed, under its own key (the
        backend is switched to it and back). Errors are raised: the checkpoint must not
        complete without them."""
        works = [w for w in self._active.values() if not w.stored]
        if not works:
            return
        with self._key_put_back() as switch:
            for work in works:
                switch(work.state_key)
                self._store(work, ctx)

    def _keep_first(self, work: KeyWork, item: Item, ctx: Any) -> None:
        """Keep the work of a key whose first input, ``item``, started in the synchronous
        path, with ``item`` in keyed state (its timestamp taken now if it came without one:
        before a timer can emit)."""
        if item.ts == KEEP_TIMESTAMP:
            item.ts = timestamp_code(ctx.timestamp())
        self._keep(work)
        self._hold(work, item)

    def _place(self, work: KeyWork) -> None:
        """Take an in-flight place for the key's next input waiting for one (blocking while
        the slot is full: the backpressure; or queued in the slot when the operator admits
        whole batches) and do what the key's protocol says once it has it."""
        slot = self.slot
        assert slot is not None
        slot.admit(functools.partial(self._placed, work))

    def _placed(self, work: KeyWork) -> None:
        """The key's next input waiting for a place has one (any thread)."""
        slot = self.slot
        assert slot is not None
        with work.lock:
            placement = work.seq.placed()
            action = placement.action
            if placement.extra:
                # Before a running chain can take them: their runs give the places back.
                slot.take_places(placement.extra)
            if action is STARTED:
                work.set_busy()
        if action is STARTED:
            slot.start(work)
        elif action is not JOINED:
            # Held behind a run that paused meanwhile, or refused after a failure (the input
            # stays in pending state; the failure fails the task at the key's next timer).
            slot.release_unstarted(1)

    def _resume(self, key: Any, items: list[Item], ctx: Any) -> KeyWork:
        """Restart a key's uncommitted inputs after a restore, with their durable records."""
        slot, state = self.slot, self.state
        assert slot is not None and state is not None
        durable = state.load_durable()
        work = KeyWork(key, state.load_memory(key), persist_memory=not self._keyless)
        work.persisted = {(i, c) for i, calls in durable.items() for c in calls}
        for item_id, calls in durable.items():
            work.live[item_id] = dict(calls)
        restored = work.seq.restore(items, durable, state.emitted_request())
        if restored.clear_request:
            # The decision came before the failure (saved early): the run replays past the
            # request and does not pause again.
            state.clear_request()
        log.info("resuming %d pending input(s) of key %r after a restore", len(items), key)
        self._keep(work, stored=True)
        # Restored inputs were accepted before the restore: they take in-flight places too,
        # one after another (the first starts the chain, which frees places as it goes).
        for _ in range(restored.places):
            self._place(work)
        self._arm(work, ctx)
        return work

    def _arm(self, work: KeyWork, ctx: Any) -> None:
        """Arm the key's processing-time timer (once) and its drain timer; a key whose
        inputs are not stored relies on the shared timers instead (``_arm_shared``)."""
        if work.timer_at is not None:
            return
        service = ctx.timer_service()
        if not work.stored:
            self._arm_shared(work, service)
            return
        work.timer_at = service.current_processing_time() + self._timer_delay()
        service.register_processing_time_timer(work.timer_at)
        service.register_event_time_timer(DRAIN_TIME)

    def _timer_delay(self) -> int:
        """Delay (ms) of a processing-time timer: follows observed run time."""
        slot = self.slot
        assert slot is not None
        return int(min(max(slot.run_seconds * 1000, _MIN_DELAY_MS), _MAX_DELAY_MS))

    def _arm_shared(self, work: KeyWork, service: Any) -> None:
        """Process mode, keys whose inputs are not stored: one processing-time timer at a
        time (the sweep timer, under whichever key is current: it commits every key's
        finished runs, ``_sweep``) and one drain timer for the whole function (under the
        first such key, never deleted: it drains every such key at the end of input),
        instead of two timers per key. Neither needs to survive a restore: the keys they
        serve have nothing in keyed state (a barrier stores them with their own timers)."""
        if self._sweep_timer is None:
            # Short: the timer reaches the JVM with the worker's next output flush, which is
            # when it matters (it then fires at once instead of a run time later).
            self._sweep_timer = service.current_processing_time() + _SWEEP_TIMER_MS
            service.register_processing_time_timer(self._sweep_timer)
        if self._drain_anchor is _NO_ANCHOR:
            self._drain_anchor = work.key
            service.register_event_time_timer(DRAIN_TIME)

    # -- timers ---------------------------------------------------------------------------------
    def on_timer(self, timestamp: int, ctx: KeyedProcessFunction.OnTimerContext) -> Iterator[Any]:
        if timestamp == entry.BARRIER_TIMER:
            # Process mode: the operator's barrier timer.
            self.note_fast_path(
                fast_paths.BARRIER_HOOK, True, "durable records are saved before each barrier"
            )
            if self._defer:
                self._store_unstored(ctx)
            self.before_barrier(None)
            return
        if self.metrics is not None:
            # Runs finished on the loop thread are counted; hand them to Flink when the
            # interval has passed (not at every timer: with a timer per finished run, a
            # publication each, walking every metric and calling into Java for each change,
            # cost the operator thread more than the commit) and when the last key's work
            # ends (below); the drain timer publishes while it waits.
            self.metrics.maybe_publish()
        slot, state = self.slot, self.state
        assert slot is not None and state is not None
        drain = ctx.time_domain() == TimeDomain.EVENT_TIME
        if self._defer:
            if drain:
                yield from self._drain_unstored(ctx)
            elif timestamp == self._sweep_timer:
                self._sweep_timer = None
                yield from self._sweep(ctx)
                for other in self._active.values():
                    if not other.stored:
                        self._arm_shared(other, ctx.timer_service())
                        break
        key = ctx.get_current_key()
        work = self._active.get(key)
        if work is None:
            # (Only a restore leaves pending inputs of a key without work.)
            restored = state.restored_pending() if state.check_restored else None
            if not restored:
                return  # a stale timer: the key has gone idle since
            work = self._resume(key, restored, ctx)
        if drain:
            self._wait_drained(work)
        elif timestamp == work.timer_at:
            work.timer_at = None
        yield from self._settle(work, ctx, drain)

    def _wait_drained(self, work: KeyWork) -> None:
        """The drain: wait for the last run of ``work``'s key (the end of input)."""
        slot = self.slot
        assert slot is not None
        metrics = self.metrics
        if metrics is None:
            slot.wait_for(work.wait_idle, "the key's runs to finish (drain)")
            return
        # The operator thread waits here for the key's last run: runs of other keys that
        # end meanwhile still reach Flink's metrics.
        interval = metrics.interval or 0.5

        def idle(timeout: float) -> bool:
            if work.wait_idle(min(timeout, interval)):
                return True
            metrics.publish()
            return False

        slot.wait_for(idle, "the key's runs to finish (drain)")

    def _drain_unstored(self, ctx: Any) -> Iterator[Any]:
        """The shared drain timer (or any drain timer): wait for and commit every key whose
        inputs are not stored, each under its own key (the backend is switched to it and
        back); they have no drain timer of their own."""
        works = [w for w in self._active.values() if not w.stored]
        if not works:
            return
        with self._key_put_back() as switch:
            for work in works:
                if self._active.get(work.key) is not work:
                    continue
                self._wait_drained(work)
                switch(work.state_key)
                yield from self._settle(work, ctx, drain=True)

    def _settle(self, work: KeyWork, ctx: Any, drain: bool) -> Iterator[Any]:
        """Commit what ``work``'s key finished, expire what passed its deadline, and forget
        the key (its timers deleted) when nothing is left, else arm its timer again
        (the backend's current key is the key's)."""
        state = self.state
        assert state is not None
        with work.lock:
            decisions = work.seq.collect()
        if decisions:
            yield from self._commit(work, decisions, ctx)
            held = self._unstored.get(work.key) if not work.stored else None
            if held:
                committed = {d.item.id for d in decisions if type(d) is Commit}
                held[:] = [item for item in held if item.id not in committed]
        with work.lock:
            expired = work.seq.expire(time.time() + _EXPIRY_SLACK)
        if expired is not None:
            self._apply(work, expired, ctx)
        service = ctx.timer_service()
        with work.lock:
            done, waits = work.seq.done, work.seq.waits_for_decision
        if done:
            del self._active[work.key]
            if not self._active and self.metrics is not None:
                self.metrics.publish()  # no run is left: the counts are final for now
            if not work.stored:
                # Held here only, no timers of its own (a barrier would have stored it).
                self._unstored.pop(work.key, None)
                return
            if work.timer_at is not None and work.timer_at != self._sweep_timer:
                service.delete_processing_time_timer(work.timer_at)
            if not drain and work.key != self._drain_anchor:
                service.delete_event_time_timer(DRAIN_TIME)
            return
        if work.stored:
            # (Not stored: the barrier saves its records, with its inputs.)
            state.save_durable(work, work.unpersisted())
        if not waits:
            self._arm(work, ctx)  # a paused key waits for its response or deadline timer

    # -- durable records ----------------------------------------------------------------------
    def before_barrier(self, checkpoint_id: int | None) -> None:
        """Save the durable records that keyed state does not hold yet, of every key with
        work in flight (runs in progress and runs finished but not committed).

        Called by the operator right before it emits a checkpoint barrier, on the thread
        that runs the function, between two of its calls (``checkpoint_id`` is None in
        process mode, where it comes as a timer). An error is logged, not raised: it would
        fail the checkpoint and the task, and the records are still saved at the keys'
        timers.
        """
        state = self.state
        if state is None:
            return
        try:
            saved = state.save_before_barrier(self._active.values())
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
        if saved:
            log.debug(
                "checkpoint %s: saved %d durable call record(s) before the barrier",
                checkpoint_id,
                saved,
            )

    # -- committing -------------------------------------------------------------------------------
    def _commit(
        self, work: KeyWork, decisions: Sequence[Decision], ctx: Any = None, kept: bool = True
    ) -> Iterator[Any]:
        """Do what the key's protocol decided about its finished runs, in input order: emit
        and commit, pause, fail (``ctx``: the function's context, for timers). ``kept``:
        False when ``work`` is dropped after (the synchronous path): what it holds of the
        committed inputs needs no forgetting."""
        state = self.state
        assert state is not None
        packed = self.packed
        for decision in decisions:
            if type(decision) is Commit:
                item, result = decision
                if result.dead_letter is not None:
                    # A failed run set aside: nothing of it but the letter (side output).
                    letter = result.dead_letter
                    yield pack_output(DEAD_LETTER, letter) if packed else (DEAD_LETTER, letter)
                    continue
                if work.persist_memory and (result.memory_updates or result.memory_deletes):
                    state.commit_memory(result.memory_updates, result.memory_deletes)
                elif work.persist_memory and state.ttl_on_read:
                    state.touch_memory()
                if packed:
                    for output in result.outputs:
                        yield pack_output(item.ts, output)
                else:
                    for output in result.outputs:
                        yield (item.ts, output)
            elif isinstance(decision, Pause):
                yield from self._pause(work, decision, ctx)
            elif isinstance(decision, Fail):
                raise decision.error
            else:
                self._apply(work, decision, ctx)
        if work.stored or work.persisted or (kept and work.live):
            committed = {d.item.id for d in decisions if type(d) is Commit}
            if committed:
                self._forget(work, committed)

    def _apply(self, work: KeyWork, decision: Decision, ctx: Any) -> None:
        """Do what the key's protocol decided about an approval response or a deadline."""
        slot, state = self.slot, self.state
        assert slot is not None and state is not None
        if isinstance(decision, Resume):
            self._resume_paused(work, decision, ctx)
        elif isinstance(decision, Drop):
            drop_response(work.key, decision.response, decision.reason, slot.runner.metrics)
        elif isinstance(decision, SaveDecision):
            state.use_key()
            state.save_durable(work, [(decision.item_id, decision.call_id, decision.record)])
        else:
            raise TypeError(f"the Flink host does not know the decision {decision!r}")

    def _forget(self, work: KeyWork, committed: set[str]) -> None:
        """Drop what keyed state and ``work`` keep for the committed inputs."""
        state = self.state
        assert state is not None
        if work.live:
            with work.lock:
                for item_id in committed:
                    work.live.pop(item_id, None)
        if work.persisted:
            gone = {pc for pc in work.persisted if pc[0] in committed}
            state.remove_durable(gone)
            work.persisted -= gone
        if work.stored:
            with work.lock:
                done = work.seq.done
            if done:
                state.clear_pending()
            else:
                state.remove_pending(committed)

    # -- approval -------------------------------------------------------------------------------
    def _pause(self, work: KeyWork, pause: Pause, ctx: Any) -> Iterator[Any]:
        """Keep the paused run of ``pause.item`` in keyed state and emit its request (unless
        the protocol says it was emitted before a restore)."""
        state = self.state
        assert state is not None
        item, request = pause.item, pause.request
        state.use_key()
        if self._active.get(work.key) is not work:
            # Paused in the synchronous path: nothing of the key is in keyed state yet.
            self._keep_first(work, item, ctx)
        if not work.stored:
            # A paused run may wait long: its key is kept as without barrier timers.
            self._store(work, ctx)
        # The request's record and the calls before the pause go to keyed state now: a
        # checkpoint must hold them with the pending input.
        state.save_durable(work, work.unpersisted())
        if request.expires_at is not None:
            ctx.timer_service().register_processing_time_timer(_deadline_ms(request))
        if pause.emit:
            state.note_request(request.request_id)
            if self.packed:
                yield pack_output(item.ts, request)
            else:
                yield (item.ts, request)

    def _respond(self, key: Any, response: ApprovalResponse, ctx: Any) -> Iterator[Any]:
        """An approval response arrived under ``key``: the key's protocol resumes its paused
        run, keeps the response for a run re-running after a restore, or drops it."""
        slot, state = self.slot, self.state
        assert slot is not None and state is not None
        work = self._active.get(key)
        if work is None and state.check_restored:
            restored = state.restored_pending()
            if restored:
                work = self._resume(key, restored, ctx)  # pauses again, then matches
        if work is None:
            for decision in KeySequencer(key).respond(response):
                assert isinstance(decision, Drop)  # a key without work resumes nothing
                drop_response(key, response, decision.reason, slot.runner.metrics)
            return
        with work.lock:
            decisions = work.seq.respond(response)
        for decision in decisions:
            self._apply(work, decision, ctx)
        return
        yield  # a generator, like _process

    def _resume_paused(self, work: KeyWork, resume: Resume, ctx: Any) -> None:
        """Record the decision of ``work``'s paused run and run its input again, then the
        inputs held behind it."""
        state = self.state
        assert state is not None
        item_id = resume.item.id
        work.record(item_id, resume.call_id, resume.record)
        state.use_key()
        state.save_durable(work, [(item_id, resume.call_id, resume.record)])
        state.clear_request()
        # The resumed input takes an in-flight place again (waiting for one is the
        # backpressure), the held ones take theirs at once.
        self._place(work)
        self._arm(work, ctx)


def _deadline_ms(request: Any) -> int:
    """The processing time (ms) of ``request``'s deadline timer: rounded up, so that the
    timer never fires before the protocol finds the request expired."""
    return math.ceil(request.expires_at * 1000)
