"""Many failovers of one process-mode job on one slot: does the TaskManager survive them all?

A job of ``Source -> Python map -> keyBy -> agent -> Python map -> print`` on a MiniCluster
with one TaskManager and one slot fails ``--failovers`` times: the map before the ``keyBy``
and the map chained after the agent take turns raising (each 30 records into an attempt), so
the operator that fails and the one that is cancelled mid-bundle alternate too. Each failover
closes the slot's shared Beam worker while bundles are in flight: the race that stopped
PyFlink's TaskManager ("Reference count must not be negative", see
``java-bridge/src/main/java/org/flinkagents/flink/BeamReleaseFix.java``). A lost
TaskManager leaves the restart without a slot and the job fails.

Reports the restarts, the TaskManagers lost and how often the worker was released with
bundles in flight, from the MiniCluster's log. Must run as a module (the Python workers
import this file's map function)::

    .venv/bin/python -m benchmarks.failover_stress [--failovers 12] [--jobs 1]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path

from pyflink.common import Configuration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.datastream import MapFunction, RuntimeContext, StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from tests.flink import agents

REPO = Path(__file__).resolve().parents[1]
JOB = [sys.executable, "-m", "benchmarks.failover_stress", "--job"]


class Attempts(MapFunction):
    """A map that raises once per attempt of its parity (30 records into the attempt) while
    Flink's attempt number is below ``failovers``."""

    def __init__(self, parity: int, failovers: int, delay: float) -> None:
        self._parity, self._failovers, self._delay = parity, failovers, delay
        self._attempt = self._seen = 0

    def open(self, runtime_context: RuntimeContext) -> None:
        self._attempt = runtime_context.get_attempt_number()

    def map(self, value: object) -> object:
        if isinstance(value, int):
            time.sleep(self._delay)
            value = {"key": f"k{value % 10}", "i": value}
        self._seen += 1
        if (
            self._seen == 30
            and self._attempt < self._failovers
            and self._attempt % 2 == self._parity
        ):
            raise RuntimeError(f"failover stress: failure of attempt {self._attempt}")
        return value


def _job(failovers: int) -> None:
    """Runs the job (in this process's MiniCluster); raises if it fails."""
    conf = Configuration()
    conf.set_string("restart-strategy.type", "fixed-delay")
    conf.set_string("restart-strategy.fixed-delay.attempts", str(failovers + 1))
    conf.set_string("restart-strategy.fixed-delay.delay", "500 ms")
    conf.set_string("taskmanager.numberOfTaskSlots", "1")
    # A lost TaskManager fails the job within a minute instead of five.
    conf.set_string("slot.request.timeout", "60 s")
    conf.set_string("python.execution-mode", "process")
    conf.set_string("python.fn-execution.bundle.size", "10")
    conf.set_string("python.fn-execution.bundle.time", "50")
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    env.enable_checkpointing(250)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": "process"}
    )
    numbers = env.from_source(
        NumberSequenceSource(0, 299), WatermarkStrategy.no_watermarks(), "numbers"
    )
    records = numbers.map(Attempts(0, failovers, 0.01), output_type=Types.PICKLED_BYTE_ARRAY())
    out = (
        agents_env.from_datastream(records, lambda r: r["key"])
        .apply(agents.chat_agent(latency=0.1))
        .to_datastream()
    )
    out.map(Attempts(1, failovers, 0.0), output_type=Types.PICKLED_BYTE_ARRAY())
    agents_env.execute("failover stress")


#: The MiniCluster's line for a TaskManager that stopped on a fatal error.
_LOST = re.compile(r"MiniCluster\s+\[\] - TaskManager #\d+ failed")


def _flink_log() -> Path | None:
    """The MiniCluster JVM's log (PyFlink's ``log`` directory; each JVM overwrites it)."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or not spec.submodule_search_locations:
        return None
    logs = sorted((Path(next(iter(spec.submodule_search_locations))) / "log").glob("flink-*.log"))
    return logs[0] if logs else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--failovers", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=1, help="jobs in a row, a fresh JVM each")
    parser.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job:
        _job(args.failovers)
        return 0
    totals = {"restarts": 0, "lost": 0, "released": 0, "race": 0}
    passed = 0
    for job in range(1, args.jobs + 1):
        started = time.monotonic()
        proc = subprocess.run(
            [*JOB, "--failovers", str(args.failovers)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        )
        log = _flink_log()
        text = log.read_text(encoding="utf-8", errors="replace") if log else ""
        counts = {
            "restarts": text.count("switched from state RUNNING to RESTARTING"),
            "lost": len(_LOST.findall(text)),
            "released": text.count("Releasing an evicted Beam worker"),
            "race": text.count("released by its last bundle already"),
        }
        for name, n in counts.items():
            totals[name] += n
        passed += proc.returncode == 0
        print(
            f"job {job}: {'pass' if proc.returncode == 0 else 'FAIL'} in "
            f"{time.monotonic() - started:.0f}s, {counts['restarts']} restarts, "
            f"{counts['lost']} TaskManagers lost, worker released with bundles in flight "
            f"{counts['released'] + counts['race']} times ({counts['race']} of them after the "
            "bundle's own last unref: the race that was fatal)",
            flush=True,
        )
        if proc.returncode != 0:
            print("\n".join((proc.stdout + proc.stderr).splitlines()[-5:]), flush=True)
    print(
        f"{passed}/{args.jobs} jobs passed: {totals['restarts']} failovers, "
        f"{totals['lost']} TaskManagers lost, {totals['race']} races met"
    )
    return 0 if passed == args.jobs and totals["lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
