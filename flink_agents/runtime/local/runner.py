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
hold up others.

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
from collections import deque
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from flink_agents.api.approval import ApprovalResponse
from flink_agents.api.core_options import AgentExecutionOptions, ShortTermMemoryTtlUpdate
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.approval import PausedRun, accept_response, expired_response
from flink_agents.runtime.core import AgentRunner, RunResult
from flink_agents.runtime.observability.event_log import attach_event_log
from flink_agents.runtime.observability.otel_options import attach_otel

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
        #: Runs waiting for a decision, and the inputs of their keys waiting behind them.
        self.paused: dict[Any, PausedRun] = {}
        self._held: dict[Any, deque[Any]] = {}
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
        expired = [k for k, p in self.paused.items() if p.expired()]
        for place, key in enumerate(expired):
            by_key.setdefault(key, []).insert(0, place - len(expired))  # before index 0
        results: dict[int, list[RunResult]] = {}
        gate = asyncio.Semaphore(self._max_in_flight)

        async def run_one(key: Any, value: Any, out: list[RunResult], durable: Any = None) -> None:
            async with gate:
                memory = self._load(key)
                result = await self.runner.run(key, value, memory=memory, durable=durable)
                if result.approval is not None:
                    # Paused: nothing committed; the place in the gate is let go here.
                    self.paused[key] = PausedRun.of(value, durable, result)
                elif result.memory_updates or result.memory_deletes:
                    self.memory[key] = result.applied_to(memory)
                    self._touched[key] = time.monotonic()
                elif self._ttl_on_read and key in self.memory:
                    self._touched[key] = time.monotonic()
                out.append(result)

        async def resume(key: Any, response: ApprovalResponse, out: list[RunResult]) -> None:
            paused = self.paused.pop(key)
            await run_one(key, paused.value, out, paused.resume_log(response))
            held = self._held.get(key)
            while held and key not in self.paused:
                await run_one(key, held.popleft(), out)

        async def run_key(key: Any, indexes: list[int]) -> None:
            for index in indexes:
                out = results[index] = []
                if index < 0:  # an expired request: rejected before the key's inputs
                    await resume(key, expired_response(self.paused[key].request), out)
                    continue
                value = records[index][1]
                if isinstance(value, ApprovalResponse):
                    paused = self.paused.get(key)
                    request = paused.request if paused is not None else None
                    if accept_response(request, key, value, self.runner.metrics):
                        await resume(key, value, out)
                elif key in self.paused:
                    self._held.setdefault(key, deque()).append(value)
                else:
                    await run_one(key, value, out)

        tasks = [asyncio.ensure_future(run_key(k, ix)) for k, ix in by_key.items()]
        try:
            await asyncio.gather(*tasks)
        finally:
            # A failed run ends the batch: the others are cancelled and awaited here, so no
            # task of this batch is left on the loop to wake up in the next one.
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        return [r for index in sorted(results) for r in results[index]]

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
