"""Where a zero-latency record's CPU goes in the Flink host's thread-mode path, no JVM.

Two measures of the same agent as ``benchmarks/host_instructions.py`` (the zero-latency
chat agent over fake keyed state, ``process_batch`` in batches of 32):

1. thread CPU per record of the host path (``process_batch``: the function, the slot, the
   borrowed loop, the core's run, commit and output packing) against the core's run alone
   (``AgentRunner.run`` awaited in a loop), alternating, ``--rounds`` times: the difference
   is what the Flink host adds around the run; and the *floor*: the same records through
   the agent's own code only (``host_instructions.floor_runs``: its two actions called
   directly with their events built, and the zero-latency model's call; no runner, no
   host), so that the framework's share is the host path minus the floor;
2. with ``--profile``, cProfile (thread CPU clock) of the host path, grouped into the
   parts named in docs/benchmarks.md ("Where the time goes"). cProfile's own cost inflates
   small functions: read its shares, not its microseconds.

Inside a job the same path costs more per record (the JVM and the other Python operators
share the cores and the caches): ``benchmarks/flink_host.py`` measures that.

Usage::

    .venv/bin/python -m benchmarks.host_profile [--records 10000] [--rounds 3] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import host_instructions

#: cProfile functions whose cumulative time names a part of the path (file, function).
_PARTS = {
    "whole host path (process_batch)": ("function.py", "process_batch"),
    "the core's run (AgentRunner.run)": ("runner.py", "run"),
    "model call (call_model_offering)": ("calls.py", "call_model_offering"),
    "durable call record (durable_execute_async)": ("context.py", "durable_execute_async"),
    "call deadline (await_within)": ("timeouts.py", "await_within"),
    "events built (Event.__init__)": ("event.py", "__init__"),
    "slot: start_and_settle": ("slot.py", "start_and_settle"),
    "commit and pack outputs (_commit)": ("function.py", "_commit"),
}


def _core_us(records: int) -> float:
    """Thread CPU per record of the core's run alone (same agent, same inputs)."""
    from flink_agents.plan.agent_plan import AgentPlan
    from flink_agents.runtime.core.runner import AgentRunner
    from tests.flink import agents

    runner = AgentRunner(AgentPlan.from_agent(agents.chat_agent()))

    async def runs() -> None:
        for i in range(records):
            key = f"k{i % 100}"
            await runner.run(key, {"key": key, "i": i}, memory={})

    loop = asyncio.new_event_loop()
    try:
        started = time.thread_time()
        loop.run_until_complete(runs())
        return (time.thread_time() - started) * 1e6 / records
    finally:
        loop.close()
        runner.close()


def _floor_us(records: int) -> float:
    """Thread CPU per record of the agent's own code alone (same inputs, decoded)."""
    runner, setup = host_instructions.floor_setup()
    inputs = [{"key": f"k{i % 100}", "i": i} for i in range(records)]
    loop = asyncio.new_event_loop()
    try:
        started = time.thread_time()
        loop.run_until_complete(host_instructions.floor_runs(inputs, setup))
        return (time.thread_time() - started) * 1e6 / records
    finally:
        loop.close()
        runner.close()


def _host_us(records: int) -> float:
    """Thread CPU per record of the host path (``process_batch``)."""
    started = time.thread_time()
    host_instructions._drive(records, 100, False)
    return (time.thread_time() - started) * 1e6 / records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    _floor_us(1_000)  # warm-up: imports, first plan
    _core_us(1_000)
    _host_us(1_000)
    load = os.getloadavg()[0]
    floors, cores, hosts = [], [], []
    for _ in range(args.rounds):
        floors.append(_floor_us(args.records))
        cores.append(_core_us(args.records))
        hosts.append(_host_us(args.records))
        print(
            f"floor {floors[-1]:6.1f} us, core run {cores[-1]:6.1f} us, "
            f"host path {hosts[-1]:6.1f} us per record"
        )
    floor = statistics.median(floors)
    core, host = statistics.median(cores), statistics.median(hosts)
    print(
        f"medians: floor {floor:.1f} us, core run {core:.1f} us, host path {host:.1f} us: "
        f"the host adds {host - core:.1f} us ({(host - core) / host:.0%} of the path), "
        f"the framework (host path minus floor) {host - floor:.1f} us "
        f"({(host - floor) / host:.0%}); load average {load:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    if not args.profile:
        return
    profiler = cProfile.Profile(time.thread_time)
    profiler.enable()
    host_instructions._drive(args.records, 100, False)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    whole = None
    for part, (file, name) in _PARTS.items():
        cumulative = sum(
            entry[3]
            for (path, _, function), entry in stats.items()
            if function == name and path.endswith(os.sep + file)
        )
        whole = whole or cumulative
        print(f"{part:<46} {cumulative / whole:6.1%}")


if __name__ == "__main__":
    main()
