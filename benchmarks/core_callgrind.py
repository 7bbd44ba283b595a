"""Instructions per run of the core loop, counted by valgrind's callgrind (deterministic).

Timings on this shared machine drift by +-20 % and more; instruction counts do not. The
script runs the Flink benchmark's chat agent (``tests/flink/agents.py: chat_agent``:
InputEvent -> ChatRequestEvent -> zero-latency scripted model -> ChatResponseEvent ->
OutputEvent) ``N`` times through ``AgentRunner.run`` on one event loop, with the built-in
metrics on (the default). Run it under callgrind for two values of ``N``; the difference of
the two totals divided by the difference of ``N`` is the cost of one run, without the start
(imports, plan compilation, the first run's resource creation)::

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg500 \\
        .venv/bin/python -m benchmarks.core_callgrind --runs 500
    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg2500 \\
        .venv/bin/python -m benchmarks.core_callgrind --runs 2500
    .venv/bin/python -m benchmarks.core_callgrind --per-run /tmp/cg500 /tmp/cg2500

``--measure`` does all of it (needs ``valgrind`` on PATH) and prints the figure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(runs: int) -> None:
    """``runs`` runs of the chat agent through the core loop (metrics on)."""
    from flink_agents.plan.agent_plan import AgentPlan
    from flink_agents.runtime.core import AgentRunner
    from tests.flink.agents import chat_agent

    runner = AgentRunner(AgentPlan.from_agent(chat_agent()))

    async def go() -> None:
        for i in range(runs):
            await runner.run(f"k{i % 100}", {"key": f"k{i % 100}", "i": i})

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(go())
    finally:
        loop.close()
        runner.close()


def total_instructions(path: str) -> int:
    """The ``summary:`` (or ``totals:``) instruction count of a callgrind output file."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    found = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
    if found is None:
        raise ValueError(f"{path}: no summary line (not a callgrind output file?)")
    return int(found.group(1))


def per_run(small: str, large: str, runs: tuple[int, int] = (500, 2500)) -> float:
    """Instructions per run from the outputs of the two runs."""
    return (total_instructions(large) - total_instructions(small)) / (runs[1] - runs[0])


def measure(small: int, large: int) -> float:
    """Run both under callgrind; instructions per run."""
    outputs = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (small, large):
            out = os.path.join(tmp, f"cg{n}")
            subprocess.run(
                [
                    "valgrind",
                    "--tool=callgrind",
                    f"--callgrind-out-file={out}",
                    sys.executable,
                    "-m",
                    "benchmarks.core_callgrind",
                    "--runs",
                    str(n),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            )
            outputs.append(out)
        return per_run(outputs[0], outputs[1], (small, large))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, help="run the agent this many times")
    parser.add_argument("--per-run", nargs=2, metavar=("SMALL", "LARGE"))
    parser.add_argument("--measure", action="store_true", help="run both under callgrind")
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--large", type=int, default=2500)
    args = parser.parse_args()
    if args.runs is not None:
        run(args.runs)
    elif args.per_run:
        print(f"{per_run(*args.per_run, (args.small, args.large)):.0f} instructions per run")
    elif args.measure:
        figure = measure(args.small, args.large)
        print(f"{figure:.0f} instructions per run ({args.large} minus {args.small} runs)")
    else:
        parser.error("give --runs N, --per-run SMALL LARGE or --measure")


if __name__ == "__main__":
    main()
