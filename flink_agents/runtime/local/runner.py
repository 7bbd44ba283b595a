"""The local host: runs a plan over keyed inputs in one process.

A :class:`LocalRunner` is a session. Call :meth:`LocalRunner.run` batch after batch: every
batch runs on the runner's one event loop with the runner's one thread pool, and each key's
short-term memory persists across batches. :meth:`LocalRunner.close` (or leaving a ``with``
block) cancels whatever a failed or interrupted batch left behind and closes the loop, the
resources and the pool::

    with LocalRunner(plan) as runner:
        for batch in batches:                 # [(key, value), ...]
            for result in runner.run(batch):  # RunResults, in input order
                ...

The thread pool is the :class:`~flink_agents.runtime.core.AgentRunner`'s (its only owner),
installed as the loop's default executor so that ``asyncio.to_thread`` (used by resources)
shares it with ``durable_execute_async``; nothing here makes a pool of its own.

Within a batch, inputs of one key run one after another in input order; different keys run
concurrently on the loop (bounded by ``max-in-flight``), so keys waiting on a model do not
hold up others. What runs when is decided by each key's
:class:`~flink_agents.runtime.sequencing.KeySequencer` (the Flink host's too); this module
keeps memory in dicts, runs what it says and collects the results.

Approval (:mod:`flink_agents.api.approval`): a run that pauses for a decision gives a result
whose one output is the ``ApprovalRequest``; the key's later inputs wait (across batches)
until an ``ApprovalResponse`` input of the key resumes it. The resumed run's result, and
those of the inputs that waited, come at the response's place in the results. Requests past
``approval.timeout`` are rejected when the next batch starts; runs still paused when the
runner closes are dropped with a warning.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import uuid
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from flink_agents.api.approval import ApprovalResponse
from flink_agents.api.core_options import AgentExecutionOptions, ShortTermMemoryTtlUpdate
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.approval import PausedRun, drop_response
from flink_agents.runtime.core import AgentRunner, RunResult
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
    Stop,
)

log = logging.getLogger("flink_agents.runtime.local")

T = TypeVar("T")


class LocalRunner:
    """Stores memory in dicts, runs keys concurrently, keeps per-key order.

    Args:
        plan: the compiled agent.

    Attributes:
        runner: the execution core (owner of the resources and the thread pool).
        memory: each key's short-term memory (flattened paths), kept across batches.
    """

    def __init__(self, plan: AgentPlan) -> None:
        self.plan = plan
        self.runner = AgentRunner(plan)
        job_id = f"local-{uuid.uuid4().hex[:12]}"
        attach_event_log(self.runner, job_id=job_id, task_name="local", subtask=0)
        attach_otel(self.runner, job_id=job_id, task_name="local", subtask=0)
        self.memory: dict[Any, dict[str, Any]] = {}
        config = plan.get_config()
        self._max_in_flight = config.get(AgentExecutionOptions.MAX_IN_FLIGHT)
        self._ttl = config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_TTL)
        # ON_READ_AND_WRITE (upstream's default): every run of the key restarts the TTL.
        self._ttl_on_read = (
            bool(self._ttl)
            and config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE)
            is ShortTermMemoryTtlUpdate.ON_READ_AND_WRITE
        )
        self._touched: dict[Any, float] = {}
        #: The sequencing protocol of each key of the running batch, and of each key whose
        #: run waits for a decision (with the inputs held behind it) across batches.
        self._sequencers: dict[Any, KeySequencer] = {}
        self._counter = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, records: Iterable[tuple[Any, Any]]) -> list[RunResult]:
        """Run one batch of ``(key, value)`` records to its end.

        Call it again for the next batch: the same loop and thread pool are used, and
        memory written by earlier batches is seen. Also works when called from inside a
        running event loop (a notebook, an async test): the runner's loop then runs the batch
        on a helper thread.

        Args:
            records: the batch's inputs, each ``(key, value)``.

        Returns:
            The results of the runs that ended or paused, in input order: one per record,
            except that an input held behind a paused run gives its result with the
            ``ApprovalResponse`` that released it, and a dropped response gives none.

        Raises:
            RuntimeError: the runner is closed.
            RuntimeFailure: an action failed and the strategy is FAIL (or RETRY ran out);
                the batch's other runs are cancelled, the runner stays usable.
        """
        if self._closed:
            raise RuntimeError("this LocalRunner is closed; make a new one")
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            # asyncio.to_thread goes to the loop's default executor: make it the runner's
            # pool (sized by num-async-threads; asyncio's own default has cpu+4 threads).
            self._loop.set_default_executor(self.runner.executor)
        return _drive(self._loop, self._run_batch(list(records)))

    async def _run_batch(self, records: list[tuple[Any, Any]]) -> list[RunResult]:
        by_key: dict[Any, list[int]] = {}
        for index, (key, _) in enumerate(records):
            by_key.setdefault(key, []).append(index)
        # Requests past their deadline are rejected first, before the keys' inputs.
        now = time.time()
        expired: dict[Any, Resume] = {}
        for key, seq in self._sequencers.items():
            resume = seq.expire(now)
            if resume is not None:
                expired[key] = resume
        for place, key in enumerate(expired):
            by_key.setdefault(key, []).insert(0, place - len(expired))  # before index 0
        results: dict[int, list[RunResult]] = {}
        places = _Places(self._max_in_flight)

        async def run_key(key: Any, indexes: list[int]) -> None:
            seq = self._sequencers.get(key)
            if seq is None:
                seq = self._sequencers[key] = KeySequencer(key)
            for index in indexes:
                out = results[index] = []
                if index < 0:  # an expired request: rejected before the key's inputs
                    await self._apply(seq, [expired[key]], places, out)
                    continue
                value = records[index][1]
                if isinstance(value, ApprovalResponse):
                    await self._apply(seq, seq.respond(value), places, out)
                    continue
                self._counter += 1
                if seq.arrive(_Input(str(self._counter), value)) is Arrival.PLACE:
                    await places.acquire()
                    await self._placed(seq, places, out)
                # HOLD: it waits behind the key's paused run. (REFUSE comes after a failed
                # run, which has failed the batch already.)

        tasks = [asyncio.ensure_future(run_key(k, ix)) for k, ix in by_key.items()]
        try:
            await asyncio.gather(*tasks)
        finally:
            # A failed run ends the batch: the others are cancelled and awaited here, so no
            # task of this batch is left on the loop to wake up in the next one.
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            # Only keys whose run waits for a decision are kept (with their held inputs);
            # what a failed batch left running is dropped, as it was never committed.
            self._sequencers = {k: s for k, s in self._sequencers.items() if s.paused is not None}
        return [r for index in sorted(results) for r in results[index]]

    async def _placed(self, seq: KeySequencer, places: _Places, out: list[RunResult]) -> None:
        """A place was taken for the key's next waiting input: do what the protocol says."""
        placement = seq.placed()
        places.take(placement.extra)
        if placement.action is STARTED:
            await self._chain(seq, places, out)
        elif placement.action is not JOINED:
            places.release(1)

    async def _chain(self, seq: KeySequencer, places: _Places, out: list[RunResult]) -> None:
        """Run the key's inputs as its protocol hands them out, committing each at once (the
        next run reads the memory it wrote)."""
        key = seq.key
        step = seq.next_run()
        while not isinstance(step, Stop):
            memory = self._load(key)
            outcome: RunResult | BaseException
            try:
                outcome = await self.runner.run(
                    key, step.item.value, memory=memory, durable=step.durable
                )
            except Exception as exc:  # noqa: BLE001 - the Fail decision raises it
                outcome = exc
            step = seq.finished(step.item, outcome)
            places.release(1)
            await self._apply(seq, seq.collect(), places, out, memory)
        places.release(step.release)

    async def _apply(
        self,
        seq: KeySequencer,
        decisions: Iterable[Decision],
        places: _Places,
        out: list[RunResult],
        memory: dict[str, Any] | None = None,
    ) -> None:
        """Do what the key's protocol decided, in order; results go to ``out``."""
        key = seq.key
        for decision in decisions:
            if isinstance(decision, Commit):
                result = decision.result
                if result.memory_updates or result.memory_deletes:
                    self.memory[key] = result.applied_to(memory or {})
                    self._touched[key] = time.monotonic()
                elif self._ttl_on_read and key in self.memory:
                    self._touched[key] = time.monotonic()
                out.append(result)
            elif isinstance(decision, Pause):
                # Nothing committed; the request is the paused result's one output.
                if decision.emit:
                    out.append(decision.result)
            elif isinstance(decision, Fail):
                raise decision.error
            elif isinstance(decision, Resume):
                # The decision is in the protocol's log of the input: nothing to store here.
                await places.acquire()
                await self._placed(seq, places, out)
            elif isinstance(decision, Drop):
                drop_response(key, decision.response, decision.reason, self.runner.metrics)
            elif isinstance(decision, SaveDecision):
                # Only after a restore, which this host (memory in dicts) never has.
                raise RuntimeError(f"the local host has no durable records to save: {decision}")
            else:
                raise TypeError(f"the local host does not know the decision {decision!r}")

    @property
    def paused(self) -> dict[Any, PausedRun]:
        """Runs waiting for a decision, by key."""
        return {k: s.paused for k, s in self._sequencers.items() if s.paused is not None}

    def _load(self, key: Any) -> dict[str, Any]:
        """The key's memory; dropped first when its TTL has passed since its last change
        (or, with ON_READ_AND_WRITE, its last run): the same rule as the Flink host."""
        if self._ttl and time.monotonic() - self._touched.get(key, math.inf) > self._ttl:
            self.memory.pop(key, None)
            self._touched.pop(key, None)
        return self.memory.get(key, {})

    def close(self) -> None:
        """Cancel what an interrupted batch left running, then close the loop, the resources
        and the thread pool. Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        if self.paused:
            log.warning(
                "closing with %d run(s) waiting for approval; they are dropped: %s",
                len(self.paused),
                sorted(p.request.request_id for p in self.paused.values()),
            )
        loop, self._loop = self._loop, None
        try:
            if loop is not None:
                try:
                    _drive(loop, _cancel_all())
                    _drive(loop, loop.shutdown_asyncgens())
                finally:  # also when a run re-raises the Ctrl-C that interrupted it
                    loop.close()
        finally:
            self.runner.close()


@dataclass(frozen=True)
class _Input:
    """One input of a key (the protocol names a paused run's durable log by ``id``)."""

    id: str
    value: Any


class _Places:
    """The in-flight places of a batch (``max-in-flight``): :meth:`acquire` waits while all
    are taken; :meth:`take` takes some at once, past the bound if need be (inputs held behind
    a paused run, running again after it)."""

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._used = 0
        self._waiters: list[asyncio.Future[None]] = []

    async def acquire(self) -> None:
        while self._used >= self._bound:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self._used += 1

    def take(self, count: int) -> None:
        self._used += count

    def release(self, count: int) -> None:
        self._used -= count
        free = self._bound - self._used
        while free > 0 and self._waiters:
            waiter = self._waiters.pop(0)
            if not waiter.done():  # a woken waiter looks again: another may take it first
                waiter.set_result(None)
                free -= 1


async def _cancel_all() -> None:
    """Cancel every other task of the running loop and wait until they have ended."""
    current = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not current]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _drive(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """``loop.run_until_complete(coro)`` on this thread, or on a helper thread when this
    thread already runs a loop (a thread cannot run two)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return loop.run_until_complete(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = loop.run_until_complete(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    thread = threading.Thread(target=target, name="flink-agents-local")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
