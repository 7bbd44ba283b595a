"""Runs a plan over a list of keyed inputs in one process.

Inputs of one key run one after another in input order; different keys run concurrently on
one asyncio loop (bounded by ``max-in-flight``), so keys waiting on a model do not hold up
others. Short-term memory is a dict per key that persists across inputs and across
:meth:`LocalRunner.run` calls of the same runner.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import threading
import time
from collections.abc import Iterable
from typing import Any

from flink_agents.api.core_options import AgentExecutionOptions, ShortTermMemoryTtlUpdate
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner, RunResult


class LocalRunner:
    """The local host: stores memory in dicts, runs keys concurrently, keeps per-key order."""

    def __init__(self, plan: AgentPlan) -> None:
        self.plan = plan
        self.runner = AgentRunner(plan)
        self.memory: dict[Any, dict[str, Any]] = {}
        self._max_in_flight = plan.get_config().get(AgentExecutionOptions.MAX_IN_FLIGHT)
        self._threads = plan.get_config().get(AgentExecutionOptions.NUM_ASYNC_THREADS)
        self._ttl = plan.get_config().get(AgentExecutionOptions.SHORT_TERM_MEMORY_TTL)
        # ON_READ_AND_WRITE (upstream's default): every run of the key restarts the TTL.
        self._ttl_on_read = (
            bool(self._ttl)
            and plan.get_config().get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE)
            is ShortTermMemoryTtlUpdate.ON_READ_AND_WRITE
        )
        self._touched: dict[Any, float] = {}

    async def run_async(self, records: Iterable[tuple[Any, Any]]) -> list[RunResult]:
        """Run ``(key, value)`` records; results come back in input order."""
        records = list(records)
        by_key: dict[Any, list[int]] = {}
        for index, (key, _) in enumerate(records):
            by_key.setdefault(key, []).append(index)
        results: list[RunResult | None] = [None] * len(records)
        gate = asyncio.Semaphore(self._max_in_flight)
        # asyncio.to_thread uses the loop's default executor: give it the configured size
        # (the default is only cpu+4 threads). A pool of its own, because asyncio.run shuts
        # the default executor down at the end.
        asyncio.get_running_loop().set_default_executor(
            concurrent.futures.ThreadPoolExecutor(
                max_workers=self._threads, thread_name_prefix="flink-agents-local"
            )
        )

        async def run_key(key: Any, indexes: list[int]) -> None:
            for index in indexes:
                async with gate:
                    memory = self._load(key)
                    result = await self.runner.run(key, records[index][1], memory=memory)
                    if result.memory_updates or result.memory_deletes:
                        self.memory[key] = result.applied_to(memory)
                        self._touched[key] = time.monotonic()
                    elif self._ttl_on_read and key in self.memory:
                        self._touched[key] = time.monotonic()
                    results[index] = result

        tasks = [asyncio.ensure_future(run_key(k, ix)) for k, ix in by_key.items()]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
        return [r for r in results if r is not None]

    def _load(self, key: Any) -> dict[str, Any]:
        """The key's memory; dropped first when its TTL has passed since its last change
        (or, with ON_READ_AND_WRITE, its last run): the same rule as the Flink host."""
        if self._ttl and time.monotonic() - self._touched.get(key, math.inf) > self._ttl:
            self.memory.pop(key, None)
            self._touched.pop(key, None)
        return self.memory.get(key, {})

    def run(self, records: Iterable[tuple[Any, Any]]) -> list[RunResult]:
        """Blocking :meth:`run_async` (works also when called inside a running loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run_async(records))
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = asyncio.run(self.run_async(records))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                box["error"] = exc

        thread = threading.Thread(target=target, name="flink-agents-local")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["value"]  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close resources."""
        self.runner.close()
