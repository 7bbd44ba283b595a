"""Local environment benchmark (not a test).

Prints:
- runs/s of a one-action echo agent over 5,000 inputs on 100 keys;
- wall time of 50 keys each making one 100 ms ``durable_execute_async`` call.

Run: ``.venv/bin/python -m benchmarks.local_env`` (or ``make bench``).
"""

from __future__ import annotations

import asyncio
import platform
import statistics
import time

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.runner_context import RunnerContext


class EchoAgent(Agent):
    """One action: input -> output."""

    @action(InputEvent)
    @staticmethod
    def echo(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.input))


async def _sleep_100ms() -> str:
    await asyncio.sleep(0.1)
    return "done"


class SlowCallAgent(Agent):
    """One 100 ms durable async call per input."""

    @action(InputEvent)
    @staticmethod
    async def call(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=await ctx.durable_execute_async(_sleep_100ms)))


def _run(agent: Agent, records: list[dict]) -> tuple[float, int]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    out = env.from_list(records).apply(agent).to_list()
    start = time.perf_counter()
    env.execute()
    return time.perf_counter() - start, len(out)


def main() -> None:
    echo_records = [{"key": f"k{i % 100}", "value": i} for i in range(5000)]
    _run(EchoAgent(), echo_records[:500])  # warm-up
    rates = []
    for _ in range(5):
        elapsed, n = _run(EchoAgent(), echo_records)
        assert n == 5000
        rates.append(n / elapsed)
    slow_records = [{"key": f"k{i}", "value": i} for i in range(50)]
    walls = []
    for _ in range(3):
        elapsed, n = _run(SlowCallAgent(), slow_records)
        assert n == 50
        walls.append(elapsed)
    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.system()}"
    )
    print(
        f"echo agent, 5,000 inputs on 100 keys: {statistics.median(rates):,.0f} runs/s "
        f"(median of 5; min {min(rates):,.0f}, max {max(rates):,.0f})"
    )
    print(
        f"50 keys x one 100 ms durable_execute_async call: {statistics.median(walls):.3f} s "
        f"wall (median of 3; serial would be 5.0 s)"
    )


if __name__ == "__main__":
    main()
