"""``run_agent`` on a Flink MiniCluster: the job, the injected failure, the committed results.

The job::

    NumberSequenceSource(0, n + padding - 1)      replayable: restored to its checkpointed
        -> _Feeder (flat map, parallelism 1)       position after a failure
        -> key_by(Fed.key) -> agent (the view)     parallelism p
        -> encode (base64 pickle of RunCapture)
        -> FileSink, rolled on checkpoints         exactly once: only committed files count

With ``fail_after=N`` the numbers are the first N inputs, then ``padding`` numbers that feed
nothing, then the rest. On the padding the feeder waits (20 ms a number, so checkpoint
barriers keep flowing) until the event log has N run records (every run of the first N
inputs ended: their model calls are done and in Flink state at the next barrier) and a
checkpoint completed after that (a ``chk-*/_metadata`` newer than that moment), then raises
once (a marker file remembers it). The restart restores the checkpoint, whose source
position is after the first N inputs, and skips the rest of the padding at once.
"""

from __future__ import annotations

import base64
import glob
import os
import pickle
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flink_agents.api._function import dumps
from flink_agents.testing._harness import AgentView, RunCapture, fed_key

#: Numbers between the first N inputs and the rest (only with fail_after).
PADDING = 10_000
#: Seconds the feeder waits for the runs and a checkpoint before giving up.
FAIL_WAIT_SECONDS = 120.0
_PART = re.compile(r"^(.*)-(\d+)$")


class _Feeder:
    """Maps the source's numbers to the inputs (see the module docstring). A plain class
    with ``flat_map``: PyFlink wraps it (it is pickled with the job, the inputs with it)."""

    def __init__(
        self,
        fed: list[Any],
        fail_after: int | None,
        padding: int,
        workdir: str,
        events_dir: str,
    ) -> None:
        self.fed = fed
        self.fail_after = fail_after
        self.padding = padding
        self.workdir = workdir
        self.events_dir = events_dir
        self.marker = os.path.join(workdir, "failed")
        self.gave_up = os.path.join(workdir, "failure-not-injected")
        self._waiting_since: float | None = None
        self._ready_at: float | None = None

    def __call__(self, n: int) -> Any:
        n = int(n)
        cut = self.fail_after if self.fail_after is not None else len(self.fed)
        if n < cut:
            yield self.fed[n]
            return
        if n >= cut + self.padding:
            yield self.fed[n - self.padding]
            return
        self._wait_or_fail(cut)

    def _wait_or_fail(self, cut: int) -> None:
        if os.path.exists(self.marker) or os.path.exists(self.gave_up):
            return
        now = time.time()
        if self._waiting_since is None:
            self._waiting_since = now
        if self._ready_at is None:
            if _count_runs(self.events_dir) >= cut:
                self._ready_at = now
        elif _checkpoint_after(os.path.join(self.workdir, "checkpoints"), self._ready_at):
            with open(self.marker, "w", encoding="utf-8") as fh:
                fh.write(f"failed after {cut} inputs at {now}\n")
            raise RuntimeError(
                f"flink_agents.testing: the failure injected by fail_after={cut} (the job "
                "restarts from the last checkpoint)"
            )
        if now - self._waiting_since > FAIL_WAIT_SECONDS:
            runs = _count_runs(self.events_dir)
            why = (
                f"only {runs} of the first {cut} inputs' runs ended"
                if self._ready_at is None
                else "no checkpoint completed after they ended"
            )
            with open(self.gave_up, "w", encoding="utf-8") as fh:
                fh.write(f"{why} within {FAIL_WAIT_SECONDS:.0f} s\n")
            return
        time.sleep(0.02)


def _count_runs(events_dir: str) -> int:
    """Run records in the event log files so far."""
    count = 0
    for path in glob.glob(os.path.join(events_dir, "events-*")):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                count += sum(1 for line in fh if '"record":"run"' in line)
        except OSError:
            continue
    return count


def _checkpoint_after(checkpoints: str, moment: float) -> bool:
    """Whether a checkpoint completed (its ``_metadata`` written) after ``moment``."""
    for path in glob.glob(os.path.join(checkpoints, "*", "chk-*", "_metadata")):
        try:
            if os.path.getmtime(path) > moment:
                return True
        except OSError:
            continue
    return False


def encode_capture(capture: Any) -> str:
    """A capture as one line of text (base64 of its pickle)."""
    return base64.b64encode(dumps(capture)).decode("ascii")


def committed_captures(sink_dir: Path) -> list[RunCapture]:
    """The captures in the sink's committed part files, in commit order per key.

    A part file is ``part-<writer uuid>-<counter>``: one writer per subtask and attempt,
    its files numbered in order. A key's captures are all written by one subtask, so the
    order is: writers by the time of their first file (a failed attempt's before the
    restart's), then the counter, then the lines.
    """
    writers: dict[str, list[tuple[int, float, Path]]] = {}
    for path in sink_dir.rglob("*"):
        if not path.is_file() or path.name.startswith("."):
            continue  # in-progress and pending files start with a dot
        found = _PART.match(path.name)
        writer, counter = (found[1], int(found[2])) if found else (path.name, 0)
        writers.setdefault(writer, []).append((counter, path.stat().st_mtime, path))
    ordered = sorted(writers.values(), key=lambda files: min(f[1] for f in files))
    captures = []
    for files in ordered:
        for _, _, path in sorted(files):
            for line in path.read_text(encoding="ascii").splitlines():
                if line.strip():
                    captures.append(pickle.loads(base64.b64decode(line)))
    return captures


def run_minicluster(
    view: AgentView,
    fed: list[Any],
    config: Mapping[str, Any],
    resources: Mapping[str, Any],
    *,
    mode: str,
    parallelism: int,
    fail_after: int | None,
    workdir: Path,
    flink_config: Mapping[str, str],
    checkpoint_interval_ms: int,
) -> tuple[list[RunCapture], str, int]:
    """Run the job; the committed captures, the plan JSON and the failures injected."""
    from pyflink.common import Configuration, Types, WatermarkStrategy
    from pyflink.common.serialization import Encoder
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import (
        BucketAssigner,
        FileSink,
        RollingPolicy,
    )
    from pyflink.datastream.connectors.number_seq import NumberSequenceSource

    from flink_agents.runtime.flink.environment import FlinkExecutionEnvironment

    conf = Configuration()
    conf.set_string("python.execution-mode", mode)
    conf.set_string("taskmanager.numberOfTaskSlots", str(parallelism))
    conf.set_string("execution.checkpointing.dir", (workdir / "checkpoints").as_uri())
    if fail_after is not None:
        conf.set_string("restart-strategy.type", "fixed-delay")
        conf.set_string("restart-strategy.fixed-delay.attempts", "1")
        conf.set_string("restart-strategy.fixed-delay.delay", "500 ms")
    else:
        # With checkpoints on, Flink would restart a failing job forever.
        conf.set_string("restart-strategy.type", "none")
    if mode == "process":
        # Small bundles: a checkpoint barrier and a timer wait for the open bundle.
        conf.set_string("python.fn-execution.bundle.size", "10")
        conf.set_string("python.fn-execution.bundle.time", "50")
    for name, value in flink_config.items():
        conf.set_string(name, str(value))
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(parallelism)
    env.enable_checkpointing(checkpoint_interval_ms)
    # Made before the feeder: the environment sets the Python execution mode of the job's
    # operators from here on.
    agents_env = FlinkExecutionEnvironment(env, None, **{"python.execution-mode": mode, **config})
    for name, resource in resources.items():
        agents_env.add_resource(name, resource)
    padding = PADDING if fail_after is not None else 0
    feeder = _Feeder(fed, fail_after, padding, str(workdir), str(config["baseLogDir"]))
    numbers = env.from_source(
        NumberSequenceSource(0, len(fed) + padding - 1), WatermarkStrategy.no_watermarks(), "inputs"
    ).set_parallelism(1)
    records = numbers.flat_map(feeder, output_type=Types.PICKLED_BYTE_ARRAY()).set_parallelism(1)
    builder = agents_env.from_datastream(records, key_selector=fed_key).apply(
        view, uid=f"flink-agents-{type(view.inner).__name__}"
    )
    sink_dir = workdir / "out"
    (
        builder.to_datastream()
        .map(encode_capture, output_type=Types.STRING())
        .sink_to(
            FileSink.for_row_format(str(sink_dir), Encoder.simple_string_encoder())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
            .build()
        )
    )
    plan_json = builder.plan.model_dump_json()
    try:
        agents_env.execute(f"flink-agents-testing-{type(view.inner).__name__}")
    except Exception as exc:
        raise RuntimeError(f"the job failed: {_job_error(exc)}") from exc
    finally:
        # A failed in-process job leaves this for the Python workers; later subprocesses
        # started by the test must not inherit it.
        os.environ.pop("PYFLINK_GATEWAY_DISABLED", None)
    failures = 1 if (workdir / "failed").exists() else 0
    if fail_after is not None and not failures:
        why = (
            (workdir / "failure-not-injected").read_text().strip()
            if (workdir / "failure-not-injected").exists()
            else "the inputs ended before the failure point"
        )
        raise RuntimeError(f"fail_after={fail_after}: the failure was not injected: {why}")
    captures = committed_captures(sink_dir)
    _settle(str(config["baseLogDir"]), len(captures))
    return captures, plan_json, failures


def _settle(events_dir: str, runs: int, *, timeout: float = 20.0) -> None:
    """Wait until the event log has the records of ``runs`` runs and stopped growing: its
    writer (a thread or a process of the worker) finishes after the job is reported done."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        sizes = tuple(
            sorted((p, os.path.getsize(p)) for p in glob.glob(os.path.join(events_dir, "events-*")))
        )
        if _count_runs(events_dir) >= runs and sizes == last:
            return
        last = sizes
        time.sleep(0.3)


def _job_error(exc: BaseException) -> str:
    """The useful part of a job failure: the Python traceback (process mode) or the
    deepest ``Caused by`` (thread mode: pemja's PythonException), else the first lines."""
    text = str(exc)
    at = text.rfind("Traceback (most recent call last)")
    if at >= 0:
        lines = [ln for ln in text[at:].splitlines() if ln.strip()]
        # the traceback ends at the first line after the frames that is not indented
        end = next((i for i, ln in enumerate(lines[1:], 1) if not ln.startswith((" ", "\t"))), None)
        return "\n".join(lines[: (end or len(lines) - 1) + 1])[-4000:]
    causes = [ln for ln in text.splitlines() if ln.startswith("Caused by: ")]
    if causes:
        deepest = causes[-1][len("Caused by: ") :]
        deepest = re.sub(r"^pemja\.core\.PythonException: <class '([^']+)'>:", r"\1:", deepest)
        return deepest[:4000]
    return "\n".join(text.splitlines()[:20])[:4000]
