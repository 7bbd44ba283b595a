"""Instructions per run of the core loop, by valgrind's callgrind (deterministic on a noisy
machine), for observability variants: the cost of what an observer adds to a run.

The agent is the Flink benchmark's (``tests/flink/agents.py`` ``chat_agent``: InputEvent ->
ChatRequestEvent -> zero-latency scripted model -> ChatResponseEvent -> OutputEvent), run
through ``AgentRunner.run`` on one event loop. Each variant runs twice under callgrind, with
``--small`` and ``--large`` runs; (instructions(large) - instructions(small)) / (large -
small) is the cost of one run, start-up and warm-up cancelled out. All threads of the
process are counted (the OpenTelemetry export thread too).

Variants: ``metrics`` (the built-in metrics: the baseline), ``steps-noop`` (+ an observer
that wants the step hooks and does nothing in them: what the core pays to report actions),
``otel-unsampled`` (+ the
OpenTelemetry export at ``otel.sample-ratio`` 0: what a run not sampled costs),
``otel-record`` (+ the export on, every run recorded on the run thread, nothing built or
exported: the run thread's share), ``otel-noop`` (+ spans built and handed to an exporter
that drops them), ``otel-http`` (+ exported over OTLP/HTTP protobuf to a sink in another
process, which callgrind does not count), ``eventlog`` (the event log with its thread
writer, for comparison).

Usage::

    .venv/bin/python -m benchmarks.core_instructions [--variants metrics,otel-noop] \\
        [--small 500] [--large 2500]
    # one measurement (what the driver runs under valgrind):
    .venv/bin/python -m benchmarks.core_instructions --child otel-noop --runs 500
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

VARIANTS = (
    "metrics",
    "steps-noop",
    "otel-unsampled",
    "otel-record",
    "otel-noop",
    "otel-http",
    "eventlog",
)

_SINK = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def _child(variant: str, runs: int, endpoint: str | None) -> None:
    from flink_agents.api.core_options import AgentConfiguration
    from flink_agents.plan.agent_plan import AgentPlan
    from flink_agents.runtime.core import AgentRunner
    from flink_agents.runtime.observability.event_log import attach_event_log
    from flink_agents.runtime.observability.otel_options import attach_otel
    from tests.flink.agents import chat_agent

    config: dict[str, Any] = {}
    if variant.startswith("otel"):
        # One export at the end (close): the flushes of a run that takes longer under
        # valgrind must not differ between the small and the large run.
        config.update({"otel.enabled": True, "otel.flush-ms": 3_600_000})
        config["otel.queue-size"] = 10_000_000
        config["otel.endpoint"] = endpoint or "http://127.0.0.1:9"
        if variant == "otel-unsampled":
            config["otel.sample-ratio"] = 0.0
    if variant == "eventlog":
        config.update(
            {
                "event-log.enabled": True,
                "event-log.writer": "thread",
                "baseLogDir": tempfile.mkdtemp(prefix="fa-instr-"),
            }
        )
    runner = AgentRunner(AgentPlan.from_agent(chat_agent(), AgentConfiguration(config)))
    attach_event_log(runner, job_id="bench", task_name="bench", subtask=0)
    observer = attach_otel(runner, job_id="bench", task_name="bench", subtask=0)
    if variant == "steps-noop":
        from flink_agents.runtime.observability import ActionFinished, RunObserver

        class _Steps(RunObserver):
            def action_finished(self, finished: ActionFinished) -> None:
                pass

        runner.add_observer(_Steps())
    if variant in ("otel-record", "otel-noop") and observer is not None:
        from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

        class _Drop(SpanExporter):
            def export(self, spans: Sequence[Any]) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        observer.exporter = _Drop()
        if variant == "otel-record":
            observer.flush = lambda: None  # type: ignore[method-assign]

    async def go(n: int) -> None:
        for i in range(n):
            await runner.run(f"k{i % 100}", {"key": f"k{i % 100}", "i": i})

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(go(200))  # warm-up: resources, caches (same in both sizes)
        loop.run_until_complete(go(runs))
        if observer is not None and variant != "otel-record":
            # The export on this thread: close() would wait for the export thread only so
            # long (its timeout), and under valgrind building the spans takes longer.
            observer.flush()
    finally:
        loop.close()
        runner.close()


def _instructions(variant: str, runs: int, endpoint: str | None, out_dir: str) -> int:
    out = os.path.join(out_dir, f"callgrind.{variant}.{runs}")
    cmd = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        "benchmarks.core_instructions",
        "--child",
        variant,
        "--runs",
        str(runs),
    ]
    if endpoint:
        cmd += ["--endpoint", endpoint]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} x{runs} failed:\n{done.stderr[-3000:]}")
    with open(out, encoding="utf-8") as f:
        for line in f:
            found = re.match(r"(?:summary|totals):\s+(\d+)", line)
            if found:
                return int(found.group(1))
    raise RuntimeError(f"no instruction total in {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--large", type=int, default=2500)
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=500, help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.runs, args.endpoint)
        return
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    sink = subprocess.Popen([sys.executable, "-c", _SINK], stdout=subprocess.PIPE, text=True)
    try:
        assert sink.stdout is not None
        endpoint = f"http://127.0.0.1:{sink.stdout.readline().strip()}"
        out_dir = tempfile.mkdtemp(prefix="fa-callgrind-")
        print(
            f"instructions per run ({args.large} minus {args.small} runs, callgrind; "
            f"load {os.getloadavg()[0]:.1f}):",
            flush=True,
        )
        base = None
        for variant in variants:
            started = time.monotonic()
            small = _instructions(variant, args.small, endpoint, out_dir)
            large = _instructions(variant, args.large, endpoint, out_dir)
            per_run = (large - small) / (args.large - args.small)
            if variant == "metrics":
                base = per_run
            extra = f" ({per_run - base:+,.0f} over metrics)" if base is not None else ""
            print(
                f"  {variant:15s} {per_run / 1000:8.1f}k{extra}  "
                f"[{time.monotonic() - started:.0f} s]",
                flush=True,
            )
    finally:
        sink.terminate()
        sink.wait(timeout=10)


if __name__ == "__main__":
    main()
