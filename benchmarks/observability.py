"""Cost of metrics and the event log in the core run loop (no Flink: CPU time per run).

Runs the Flink benchmark's agent (InputEvent -> ChatRequestEvent -> zero-latency scripted
model -> ChatResponseEvent -> OutputEvent) through ``AgentRunner.run`` on one event loop,
with the built-in metrics off, on, and on with the event log at STANDARD level, alternating
rounds, and reports the median CPU time per run of each (process CPU time, so other work on
the machine counts less than in wall time; the event log's writer thread is included; with
``event-log.writer: process`` the child's CPU is not, only the parent's).

Usage::

    .venv/bin/python -m benchmarks.observability [--runs 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner
from flink_agents.runtime.observability.event_log import attach_event_log
from tests.flink.agents import chat_agent


def _runner(config: dict[str, Any]) -> AgentRunner:
    plan = AgentPlan.from_agent(chat_agent(), AgentConfiguration(config))
    runner = AgentRunner(plan)
    attach_event_log(runner, job_id="bench", task_name="bench", subtask=0)
    return runner


def _measure(runner: AgentRunner, runs: int) -> float:
    async def go() -> None:
        for i in range(runs):
            await runner.run(f"k{i % 100}", {"key": f"k{i % 100}", "i": i})

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(go())  # warm-up: resources, caches
        started = time.process_time()
        loop.run_until_complete(go())
        return (time.process_time() - started) / runs * 1e6
    finally:
        loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    log_dir = tempfile.mkdtemp(prefix="observability-bench-")
    configs = {
        "metrics off": {"metrics.enabled": False},
        "metrics on": {},
        "metrics + event log": {"event-log.enabled": True, "baseLogDir": log_dir},
        "... writer process": {
            "event-log.enabled": True,
            "baseLogDir": log_dir,
            "event-log.writer": "process",
        },
    }
    times: dict[str, list[float]] = {k: [] for k in configs}
    for _ in range(args.rounds):
        for name, config in configs.items():
            runner = _runner(config)
            try:
                times[name].append(_measure(runner, args.runs))
            finally:
                runner.close()  # the event log's writer drains here: counted below too
    bare = statistics.median(times["metrics off"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<20} {median:7.1f} us CPU per run  (+{median / bare - 1:.1%})")


if __name__ == "__main__":
    main()
