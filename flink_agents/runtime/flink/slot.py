"""The per-slot side of the Flink host: an asyncio loop thread, the core runner, key chains.

A :class:`SlotRuntime` (one per operator instance) runs every run on a loop in a background
thread (the operator thread only borrows it, see :mod:`gated_loop`), holds the
:class:`~flink_agents.runtime.core.AgentRunner` (resources, the pool for blocking calls) and
bounds the inputs in flight. A :class:`KeyWork` holds what the host keeps of a key with work
in flight; its :class:`~flink_agents.runtime.sequencing.KeySequencer` decides what the key's
chain runs, one input after another without a timer round trip between them. Nothing here
touches Flink state; see docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.errors import TaskCancelledError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner, DurableRecord, RunResult
from flink_agents.runtime.flink import gated_loop
from flink_agents.runtime.sequencing import KeySequencer, Stop

log = logging.getLogger("flink_agents.runtime.flink")

#: Loop iterations the synchronous probe waits for a run to finish without a real wait.
#: A run whose model answers at once completes in the first step of its task (the probe
#: runs right after it); one more hop leaves room for an ``await asyncio.sleep(0)`` in user
#: code. Each hop costs a loop iteration with a select call.
_SETTLE_HOPS = 1

#: Longest time the operator thread blocks at once (in-flight gate, drain, loop gate) before
#: it checks whether its task was cancelled (seconds): a hung model call must not hold a
#: cancellation up (Flink kills the whole TaskManager when a task does not stop in time).
#: Flink's interrupt of the task thread cannot wake a wait in Python (a lock's native wait),
#: so the slice bounds how late a cancellation is seen; a check is one call into Java.
WAIT_SLICE = 0.05

#: Seconds the loop keeps running after the slot's shutdown for the async closes of its
#: resources (HTTP clients) to finish.
_CLOSE_GRACE = 1.0


@dataclass
class Item:
    """One input of a key.

    Attributes:
        id: unique id, names the input's durable records in keyed state.
        ts: timestamp code carried to the input's outputs (see ``output.KEEP_TIMESTAMP``):
            the input's timestamp once it is known to be needed.
        value: the input record.
    """

    id: str
    ts: int
    value: Any

    def to_state(self) -> tuple[str, int, Any]:
        """The form stored in the pending-inputs ``ListState``."""
        return (self.id, self.ts, self.value)

    @staticmethod
    def from_state(raw: Any) -> Item:
        """Inverse of :meth:`to_state`."""
        return Item(raw[0], raw[1], raw[2])


class KeyWork:
    """What the Flink host keeps of one key with work in flight: its protocol, the memory its
    chain carries, the durable records of its runs, its timer.

    Shared by the operator thread and the loop thread; ``lock`` guards ``seq`` (the key's
    :class:`~flink_agents.runtime.sequencing.KeySequencer`, which decides what runs when)
    and the mutable fields. Nothing here decides sequencing: see docs/ARCHITECTURE.md,
    "The per-key protocol".

    Attributes:
        key: the Flink key.
        memory: the key's short-term memory after the last *finished* run (committed state
            plus the changes of finished but uncommitted runs); the next run starts from it.
        persist_memory: False for keyless input, where memory lives for one run only.
        seq: the key's sequencing protocol; with ``first`` (an input of a key without work,
            its place taken) its chain has started with it.
    """

    def __init__(
        self,
        key: Any,
        memory: dict[str, Any],
        *,
        persist_memory: bool = True,
        first: Item | None = None,
    ) -> None:
        self.key = key
        self.memory = memory
        self.persist_memory = persist_memory
        self.lock = threading.Lock()
        self.seq = KeySequencer(key, first)
        # Whether the chain has stopped (nothing running); the Event is made only when
        # somebody waits for it (the drain timer): most chains finish without a waiter.
        self._idle = False
        self._idle_event: threading.Event | None = None
        #: Durable records of runs not committed yet, by input id and call id.
        self.live: dict[str, dict[str, DurableRecord]] = {}
        #: ``(input id, call id)`` pairs written to the durable ``MapState``.
        self.persisted: set[tuple[str, str]] = set()
        #: Persisted pairs whose record in state was replaced by a newer one since (a call's
        #: outcome after its pending marker): saved again.
        self.stale: set[tuple[str, str]] = set()
        #: Pending processing-time timer of this key (None: none armed).
        self.timer_at: int | None = None
        #: Whether the inputs of this work are in the pending ``ListState``.
        self.stored = False
        #: The key as the Java keyed state backend holds it (thread mode with the barrier
        #: hook only), so that durable records can be saved outside this key's callbacks.
        self.state_key: Any = None

    @property
    def idle(self) -> bool:
        """Whether the chain has stopped: no input is running."""
        return self._idle

    def set_busy(self) -> None:
        """A chain starts (the caller holds ``lock``, or the work is not shared yet)."""
        self._idle = False
        if self._idle_event is not None:
            self._idle_event.clear()

    def set_idle(self) -> None:
        """Mark the chain stopped (loop thread; the caller holds ``lock``)."""
        self._idle = True
        if self._idle_event is not None:
            self._idle_event.set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until the chain has stopped; False if ``timeout`` passed first."""
        with self.lock:
            if self._idle:
                return True
            if self._idle_event is None:
                self._idle_event = threading.Event()
            event = self._idle_event
        return event.wait(timeout)

    def record(self, item_id: str, call_id: str, rec: DurableRecord) -> None:
        """``on_record`` callback of a run (loop thread). A call's outcome may replace its
        pending marker (a call with a reconciler), which must then be saved again."""
        with self.lock:
            self.live.setdefault(item_id, {})[call_id] = rec
            if self.persisted and (item_id, call_id) in self.persisted:
                self.stale.add((item_id, call_id))

    def mark_persisted(self, item_id: str, call_id: str, rec: DurableRecord) -> None:
        """Note that ``rec`` was written to keyed state; if the run replaced it with a
        newer record meanwhile, that one is still to be saved."""
        pair = (item_id, call_id)
        with self.lock:
            self.persisted.add(pair)
            if self.live.get(item_id, {}).get(call_id) is rec:
                self.stale.discard(pair)
            else:
                self.stale.add(pair)

    def unpersisted(self) -> list[tuple[str, str, DurableRecord]]:
        """Durable records of runs still in progress that keyed state does not hold yet."""
        with self.lock:
            if self.stale:
                self.stale = {p for p in self.stale if p[0] in self.live}
            return [
                (item_id, call_id, rec)
                for item_id, calls in self.live.items()
                for call_id, rec in calls.items()
                if (item_id, call_id) not in self.persisted or (item_id, call_id) in self.stale
            ]


class SlotRuntime:
    """Loop thread, runner and in-flight gate of one operator instance.

    Args:
        plan: the agent plan (with its secrets attached).
        cancelled: asked (on the operator thread) between slices of a wait whether the task
            was cancelled; thread mode passes a check of the Java task thread's interrupt
            flag (Flink interrupts the task thread when it cancels the task).
    """

    def __init__(self, plan: AgentPlan, cancelled: Callable[[], bool] | None = None) -> None:
        config = plan.get_config()
        self._cancel_check = cancelled
        self.max_in_flight: int = config.get(AgentExecutionOptions.MAX_IN_FLIGHT)
        # The runner owns the pool for blocking calls (and shuts it down in close()).
        self.runner = AgentRunner(plan)
        #: Whether the operator thread borrows the loop (gated_loop) for a run's first steps.
        self.borrows_loop = gated_loop.supported()
        self.loop = gated_loop.GatedLoop() if self.borrows_loop else asyncio.new_event_loop()
        # asyncio.to_thread (used by resources) goes to the loop's default executor.
        self.loop.set_default_executor(self.runner.executor)
        self._thread = threading.Thread(
            target=self._run_loop, name="flink-agents-loop", daemon=True
        )
        self._thread.start()
        # Counters under a plain lock; the condition (same lock) is notified only when the
        # operator thread waits in acquire(), which is rare.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0
        self._in_flight = 0
        self._running_chains = 0
        #: Whether the operator admits whole batches (:meth:`admit_batches`): an input then
        #: never waits on the operator thread; without a free place it queues here.
        self.admits_batches = False
        #: Grants of inputs accepted without a free place, first first (admits_batches):
        #: waiters of the gate, like the threads blocked in acquire(), not a queue of
        #: inputs; a grant asks the key's protocol which input gets the place (placed()).
        #: A list: at most about a batch long.
        self._queued: list[Callable[[], None]] = []
        self._close_requested = False
        self._closed = False
        self._cancelled = False
        #: Smoothed duration of a run (seconds), to choose processing-time timer delays.
        self.run_seconds = 0.05

    # -- cancellation ------------------------------------------------------------------------
    def check_cancelled(self, waiting_for: str) -> None:
        """Raise :class:`TaskCancelledError` if the task was cancelled or the slot closed
        while the operator thread waits for ``waiting_for``; called between wait slices.

        On cancellation the slot cancels its runs (their tasks, and calls not started in
        the pool) so that its loop thread ends too.
        """
        if not self._cancelled:
            if not (self._closed or (self._cancel_check is not None and self._cancel_check())):
                return
            self.cancel()
        raise TaskCancelledError(
            f"the Flink task was cancelled while the agent operator waited for {waiting_for}"
        )

    def cancel(self) -> None:
        """Stop every run of the slot and shut it down (the task is cancelled: nothing will
        be committed). Calls already running in the pool's threads cannot be stopped; they
        end on their own and their results are dropped."""
        if self._cancelled:
            return
        self._cancelled = True
        log.info("flink-agents slot cancelled: stopping its runs")
        # No lock: the caller may hold it (acquire); a chain ending reads the flag after it.
        self._close_requested = True
        try:
            self.loop.call_soon_threadsafe(self._cancel_tasks)
        except RuntimeError:  # the loop is closed already
            pass

    def wait_stopped(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the loop thread to end (after :meth:`cancel`
        or :meth:`close`: its runs stopped, their HTTP requests closed, resources closed);
        False if it is still running (an action that blocks the loop or ignores its
        cancellation)."""
        if threading.current_thread() is self._thread:
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _cancel_tasks(self) -> None:
        tasks = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for task in tasks:
            task.cancel()
        if not tasks:
            self._shutdown()
            return
        # Shut down once every task has ended, not only when the chains count down: a chain
        # cancelled before its first step never enters its own cleanup.
        ended = asyncio.gather(*tasks, return_exceptions=True)
        ended.add_done_callback(lambda _: self._shutdown())

    def wait_for(self, wait: Callable[[float], bool], waiting_for: str) -> None:
        """Call ``wait(WAIT_SLICE)`` (True when what it waits for happened) until it
        returns True, checking for cancellation between slices."""
        while not wait(WAIT_SLICE):
            self.check_cancelled(waiting_for)

    # -- the in-flight gate ------------------------------------------------------------------
    def acquire(self) -> None:
        """Take an in-flight place for a new input; blocks while the slot is full.

        Blocking here is the backpressure: the operator stops taking input. It cannot
        deadlock, because runs finish on the loop thread without the operator thread; their
        results wait for their keys' timers, which fire once this returns. The wait is
        sliced: a cancelled task raises :class:`TaskCancelledError` within ``WAIT_SLICE``.
        """
        with self._lock:
            if self._in_flight < self.max_in_flight:
                self._in_flight += 1
                return
            self._waiting += 1
            try:
                while self._in_flight >= self.max_in_flight:
                    if not self._cond.wait(WAIT_SLICE):
                        self.check_cancelled("a free in-flight place (max-in-flight)")
            finally:
                self._waiting -= 1
            self._in_flight += 1

    def admit_batches(self) -> None:
        """From now on the operator waits for a free place (:meth:`wait_for_room`) before it
        hands over a batch of inputs, letting its mailbox run meanwhile (timers, checkpoint
        barriers), and the batch's inputs never wait on the operator thread: an input
        without a free place queues in the slot and starts when one frees.

        The backpressure stays (the operator takes no input while the slot is full) and so
        does the bound: at most ``max-in-flight`` inputs run, at most one batch more waits
        queued here. Without it a batch waited on the operator thread until every input had
        a place, and a checkpoint barrier behind it waited too (a batch's worth of calls at
        a rate limit's pace).
        """
        self.admits_batches = True

    def _room(self) -> bool:
        """Whether a new input may take a place now (under the lock): one is free and no
        queued input waits for it first."""
        return self._in_flight < self.max_in_flight and not self._queued

    def wait_for_room(self, timeout: float) -> bool:
        """Whether a place is free for a new input (nothing queued), waiting up to
        ``timeout`` seconds for one. A cancelled task raises :class:`TaskCancelledError`."""
        with self._lock:
            if self._room():
                return True
            if timeout > 0:
                self._waiting += 1
                try:
                    self._cond.wait(timeout)
                finally:
                    self._waiting -= 1
            room = self._room()
        if not room:
            self.check_cancelled("a free in-flight place (max-in-flight)")
        return room

    def try_acquire(self) -> bool:
        """Take a place for a new input without queueing: True when taken (waiting for one
        unless the operator admits batches), False when none is free (batches only: then
        :meth:`admit` queues the input)."""
        if not self.admits_batches:
            self.acquire()
            return True
        with self._lock:
            if self._room():
                self._in_flight += 1
                return True
        return False

    def admit(self, grant: Callable[[], None]) -> None:
        """Take a place for an input and call ``grant`` once it has it: at once (after
        waiting for a place on the operator thread, unless the operator admits batches), or
        later on the loop thread when a run gives its place back (the input queued, first
        come first served)."""
        if not self.admits_batches:
            self.acquire()
            grant()
            return
        with self._lock:
            if not self._room():
                self._queued.append(grant)
                return
            self._in_flight += 1
        grant()

    def _give_back(self, count: int) -> None:
        """``count`` places are free: queued inputs take them (their grants run on the loop,
        never under the caller's locks)."""
        with self._lock:
            self._in_flight -= count
            if not self._queued:  # the usual case: nothing waits for a place
                if self._waiting:
                    self._cond.notify_all()
                return
            grants: list[Callable[[], None]] = []
            while self._queued and self._in_flight < self.max_in_flight:
                self._in_flight += 1
                grants.append(self._queued.pop(0))
            if self._waiting:
                self._cond.notify_all()
        for grant in grants:
            try:
                self.loop.call_soon_threadsafe(self._grant, grant)
            except RuntimeError:  # the loop is closed: the slot has shut down
                return

    def _grant(self, grant: Callable[[], None]) -> None:
        if self._closed or self._cancelled:
            return
        try:
            grant()
        except Exception:  # the loop goes on (a slot closing meanwhile refuses chains)
            log.exception("starting a queued input failed")

    def _release(self, seconds: float) -> None:
        self.run_seconds = 0.8 * self.run_seconds + 0.2 * seconds
        self._give_back(1)

    def take_places(self, count: int) -> None:
        """Take ``count`` places without waiting, even past ``max-in-flight``: for inputs
        that waited behind a paused run and run again after it (waiting here could wait on
        places only those very inputs would give back)."""
        with self._lock:
            self._in_flight += count

    def release_unstarted(self, count: int) -> None:
        """Give back the places of ``count`` accepted inputs that will not run."""
        self._give_back(count)

    def pending_inputs(self) -> int:
        """Inputs accepted and not started yet (queued behind their key's runs)."""
        runs = self.runner.agent_metrics.in_flight if self.runner.agent_metrics else 0
        return max(0, self._in_flight - runs) + len(self._queued)

    # -- chains ------------------------------------------------------------------------------
    def start(self, work: KeyWork) -> None:
        """Run ``work``'s chain on the loop (its protocol said ``STARTED``)."""
        self._count_chain()
        self.loop.call_soon_threadsafe(self._spawn, work, None)

    def _count_chain(self) -> None:
        # Counted here, on the caller's thread, so that a close() racing with the start
        # cannot see the slot idle before the chain's task exists.
        with self._lock:
            if self._closed:
                raise RuntimeError("the flink-agents slot runtime is closed")
            self._running_chains += 1

    def start_and_settle(self, work: KeyWork) -> bool:
        """Start ``work``'s chain (its protocol said ``STARTED``) and wait until it stops or
        really waits (e.g. on a model).

        Returns:
            True if the chain stopped without a real wait, so the caller can commit and emit
            at once instead of going through a timer.
        """
        self._count_chain()
        loop = self.loop
        if isinstance(loop, gated_loop.GatedLoop):
            # Run the first steps here, on the operator thread (see gated_loop). The loop
            # thread holds the gate only for an iteration; an action that blocks the loop
            # would hold it for good, so the wait is sliced.
            gate = loop.gate
            if not gate.acquire(True, WAIT_SLICE):
                self.wait_for(lambda t: gate.acquire(True, t), "the slot's event loop")
            try:
                loop.start_borrowed(self._chain(work), _SETTLE_HOPS)
            finally:
                gate.release()
            return work.idle
        # A bare lock is the cheapest cross-thread signal (cheaper than an Event): the loop
        # thread releases it.
        settled = threading.Lock()
        settled.acquire()
        self.loop.call_soon_threadsafe(self._spawn, work, settled)
        if not settled.acquire(True, WAIT_SLICE):
            self.wait_for(lambda t: settled.acquire(True, t), "a run's first steps")
        return work.idle

    def _spawn(self, work: KeyWork, settled: Any) -> None:
        task = self.loop.create_task(self._chain(work))
        if settled is not None:
            self.loop.call_soon(self._probe, task, settled, _SETTLE_HOPS)

    def _probe(self, task: asyncio.Task[None], settled: Any, hops: int) -> None:
        if task.done() or hops <= 0:
            settled.release()
        else:
            self.loop.call_soon(self._probe, task, settled, hops - 1)

    async def _chain(self, work: KeyWork) -> None:
        """Run the key's inputs as its protocol hands them out, until it says stop."""
        seq = work.seq
        persist = work.persist_memory
        try:
            with work.lock:
                step = seq.next_run()
                if isinstance(step, Stop):  # a chain started with nothing to run
                    self._stopped(work, step)
                    return
                memory = work.memory if persist else {}
            while True:
                item = step.item
                started = time.monotonic()
                outcome: RunResult | BaseException
                try:
                    outcome = await self.runner.run(
                        work.key,
                        item.value,
                        memory=memory,
                        durable=step.durable,
                        on_record=functools.partial(work.record, item.id),
                    )
                except Exception as exc:  # noqa: BLE001 - handed to the operator, which raises
                    outcome = exc
                with work.lock:
                    if not persist:
                        memory = {}
                    elif isinstance(outcome, RunResult):
                        # The next run starts from the memory this one produced.
                        work.memory = memory = outcome.applied_to(memory)
                    step = seq.finished(item, outcome)
                    if isinstance(step, Stop):
                        self._stopped(work, step)
                self._release(time.monotonic() - started)
                if isinstance(step, Stop):
                    return
        except asyncio.CancelledError:
            # The slot was cancelled (cancel()): the chain stops where it is; nothing of it
            # will be committed, a restore runs its inputs again.
            with work.lock:
                seq.cancelled()
                work.set_idle()
            raise
        finally:
            with self._lock:
                self._running_chains -= 1
                idle = self._running_chains == 0
            if idle and self._close_requested:
                self._shutdown()

    def _stopped(self, work: KeyWork, stop: Stop) -> None:
        """The key's chain ends (the caller holds ``work.lock``)."""
        if stop.release:
            # Queued inputs that will not run now (held behind a paused run, or behind a
            # failure): their places go back.
            self.release_unstarted(stop.release)
        work.set_idle()

    # -- closing -----------------------------------------------------------------------------
    def close(self) -> None:
        """Release resources, loop and executor once no run is in progress.

        PyFlink's thread mode calls the function's ``close()`` at the end of input *before*
        the last timers fire, and those timers still need the loop; so when runs are in
        progress the shutdown happens when the last one ends.
        """
        with self._lock:
            if self._close_requested:
                return
            self._close_requested = True
            idle = self._running_chains == 0
        if idle:
            self.loop.call_soon_threadsafe(self._shutdown)

    def _run_loop(self) -> None:
        try:
            self.loop.run_forever()
        finally:
            # The slot has shut down: free the call threads (the runner's, closed by
            # _shutdown unless the loop died first) and the loop's selector (a task that
            # fails over makes a new slot; the old one must not leak them).
            if not self._closed:
                self._closed = True
                self.runner.close()
            try:
                self.loop.close()
            except Exception:  # nothing left to do with a broken loop
                log.exception("closing the flink-agents slot loop failed")

    def _shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.runner.close()
        finally:
            # Closing resources schedules their async closes (HTTP clients) on this loop:
            # they run before it stops (a bounded wait), else their coroutines are dropped
            # unawaited and the connections are left to the garbage collector.
            self.loop.call_soon(self._stop_when_closed, time.monotonic() + _CLOSE_GRACE)

    def _stop_when_closed(self, deadline: float) -> None:
        if time.monotonic() < deadline and any(not t.done() for t in asyncio.all_tasks(self.loop)):
            self.loop.call_later(0.01, self._stop_when_closed, deadline)
            return
        self.loop.stop()
