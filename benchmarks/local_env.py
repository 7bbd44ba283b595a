"""Local environment benchmark (not a test), against Apache Flink Agents' local runner.

Prints:
- runs/s of a one-action echo agent over 5,000 inputs on 100 keys, this package's local
  environment and, when ``--upstream-python`` names an interpreter with Apache Flink Agents
  installed (``pip install flink-agents==0.3.1`` in a side venv), upstream's local runner
  on the same agent and inputs, in alternating rounds (medians, and the median of each
  round's own ratio);
- wall time of 50 keys each making one 100 ms ``durable_execute_async`` call (ours only).

Both sides run this very file in a fresh interpreter per round (``--echo-only``): the agent
below imports only the API that both packages share, so the upstream interpreter imports
upstream's ``flink_agents`` and ours imports this repository's.

Run: ``.venv/bin/python -m benchmarks.local_env [--upstream-python /path/to/python]
[--rounds 5]`` (or ``make bench``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.runner_context import RunnerContext

REPO = Path(__file__).resolve().parents[1]
ECHO_INPUTS, ECHO_KEYS = 5000, 100


class EchoAgent(Agent):
    """One action: input -> output."""

    @action(InputEvent.EVENT_TYPE)  # upstream 0.3.1 takes type strings only
    @staticmethod
    def echo(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.input))


async def _sleep_100ms() -> str:
    await asyncio.sleep(0.1)
    return "done"


class SlowCallAgent(Agent):
    """One 100 ms durable async call per input."""

    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    async def call(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=await ctx.durable_execute_async(_sleep_100ms)))


def _run(agent: Agent, records: list[dict]) -> tuple[float, int]:
    # A new environment per run: upstream's local environment takes one input list.
    env = AgentsExecutionEnvironment.get_execution_environment()
    out = env.from_list(records).apply(agent).to_list()
    start = time.perf_counter()
    env.execute()
    return time.perf_counter() - start, len(out)


def echo_rates(runs: int) -> dict[str, list[float]]:
    """Runs/s of ``runs`` echo jobs (after a warm-up), in this interpreter: by wall time,
    and by the process's CPU time (all its threads; far less sensitive to other work on
    the machine than wall time)."""
    records = [{"key": f"k{i % ECHO_KEYS}", "value": i} for i in range(ECHO_INPUTS)]
    _run(EchoAgent(), records[:500])  # warm-up
    wall, cpu = [], []
    for _ in range(runs):
        cpu_start = time.process_time()
        elapsed, n = _run(EchoAgent(), records)
        assert n == ECHO_INPUTS, n
        wall.append(n / elapsed)
        cpu.append(n / max(time.process_time() - cpu_start, 1e-9))
    return {"wall": wall, "cpu": cpu}


def _echo_in(python: str, runs: int, *, ours: bool) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if ours:  # this repository's package, whatever the interpreter has installed
        env["PYTHONPATH"] = str(REPO)
    # Upstream's runner logs every event at INFO on stderr: to a file, not a pipe we read.
    with tempfile.TemporaryFile() as err:
        proc = subprocess.run(
            [python, str(Path(__file__).resolve()), "--echo-only", "--runs", str(runs)],
            env=env,
            cwd=REPO if ours else "/",
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            timeout=600,
            check=False,
        )
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read()[-3000:].decode(errors="replace")
            raise SystemExit(f"{python} failed:\n{tail}")
    rates: dict[str, list[float]] = json.loads(proc.stdout.strip().splitlines()[-1])["rates"]
    return rates


def _line(name: str, rates: list[float]) -> str:
    return (
        f"{name}: {statistics.median(rates):,.0f} runs/s (median of {len(rates)}; "
        f"min {min(rates):,.0f}, max {max(rates):,.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream-python", help="interpreter with flink-agents==0.3.1")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--runs", type=int, default=3, help="echo jobs per round and side")
    parser.add_argument("--echo-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.echo_only:
        import flink_agents

        print(json.dumps({"rates": echo_rates(args.runs), "package": flink_agents.__file__}))
        return

    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.system()}, "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )
    ours: dict[str, list[float]] = {"wall": [], "cpu": []}
    upstream: dict[str, list[float]] = {"wall": [], "cpu": []}
    ratios: dict[str, list[float]] = {"wall": [], "cpu": []}
    for _ in range(args.rounds):
        mine = _echo_in(sys.executable, args.runs, ours=True)
        theirs = (
            _echo_in(args.upstream_python, args.runs, ours=False) if args.upstream_python else None
        )
        for by in ("wall", "cpu"):
            ours[by] += mine[by]
            if theirs:
                upstream[by] += theirs[by]
                ratios[by].append(statistics.median(mine[by]) / statistics.median(theirs[by]))
    print(f"echo agent, {ECHO_INPUTS:,} inputs on {ECHO_KEYS} keys, {args.rounds} rounds:")
    for by in ("wall", "cpu"):
        print("  " + _line(f"ours, by {by} time", ours[by]))
        if upstream[by]:
            print("  " + _line(f"upstream 0.3.1 local runner, by {by} time", upstream[by]))
            print(
                f"  ours / upstream by {by} time: "
                f"{statistics.median(ours[by]) / statistics.median(upstream[by]):.2f}x "
                f"(paired by round: {statistics.median(ratios[by]):.2f}x; rounds "
                + ", ".join(f"{r:.2f}" for r in ratios[by])
                + ")"
            )
    print(f"load average {os.getloadavg()[0]:.1f} at end of the echo rounds")
    slow_records = [{"key": f"k{i}", "value": i} for i in range(50)]
    walls = []
    for _ in range(3):
        elapsed, n = _run(SlowCallAgent(), slow_records)
        assert n == 50
        walls.append(elapsed)
    print(
        f"50 keys x one 100 ms durable_execute_async call: {statistics.median(walls):.3f} s "
        f"wall (median of 3; serial would be 5.0 s)"
    )


if __name__ == "__main__":
    main()
