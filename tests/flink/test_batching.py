"""Thread mode's batches on a MiniCluster: at a low rate an input goes to Python at once
instead of waiting ``batch.linger-ms`` for a batch that will not fill: after an idle gap
("idle"), and also right after another input while inputs arrive far apart on average
("sparse").

The Java operator counts the batches it hands over by what sent them (accumulators
``flink-agents.batches.<cause>``, in the job's result). One small job, inputs paced far
apart (1.5 s) against a short linger (100 ms): the gaps are 14 times the linger, and the
average gap cannot fall under a quarter of the linger within 4 inputs whatever their timing,
so the checks hold on a loaded machine too; no timing is asserted. Process mode has no
batches (its runner bundles inputs itself): the test runs in the thread-mode suite only.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from pyflink.common import WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.datastream import MapFunction, RuntimeContext
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

from flink_agents.testing.minicluster import make_env
from tests.flink.agents import chat_agent
from tests.flink.harness import MODE

pytestmark = [
    pytest.mark.flink,
    pytest.mark.skipif(MODE != "thread", reason="batches are thread mode's (the thread suite)"),
]

LINGER_MS = 100
#: When each input leaves the pacing map (s after the first): the third right after the
#: second (it waits for its linger), the others after gaps far longer than the linger.
SCHEDULE = (0.0, 1.5, 1.5, 3.0)
CAUSES = ("full", "linger", "idle", "sparse", "barrier", "watermark", "end")


class _Pace(MapFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self._start: float | None = None

    def map(self, value: Any) -> Any:
        i = int(value)
        if self._start is None:
            self._start = time.monotonic()
        wait = self._start + SCHEDULE[i] - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        return {"key": f"k{i}", "i": i}


class _Write(MapFunction):
    def __init__(self, path: str) -> None:
        self._path = path

    def map(self, value: Any) -> Any:
        with open(self._path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(value) + "\n")
        return value


def test_an_input_after_an_idle_gap_does_not_wait_for_its_linger(tmp_path: Path) -> None:
    out_file = tmp_path / "outputs.jsonl"
    env, agents_env = make_env(**{"batch.size": 32, "batch.linger-ms": LINGER_MS})
    inputs = env.from_source(
        NumberSequenceSource(0, len(SCHEDULE) - 1), WatermarkStrategy.no_watermarks(), "numbers"
    ).map(_Pace(), output_type=Types.PICKLED_BYTE_ARRAY())
    (
        agents_env.from_datastream(inputs, key_selector=lambda r: r["key"])
        .apply(chat_agent())
        .to_datastream()
        .map(_Write(str(out_file)), output_type=Types.PICKLED_BYTE_ARRAY())
    )
    result = env.execute("flink-agents-batching-test")
    batches = {
        cause: result.get_accumulator_result(f"flink-agents.batches.{cause}") for cause in CAUSES
    }
    print(f"\nbatches by cause: {batches}")
    outputs = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert sorted(o["i"] for o in outputs) == list(range(len(SCHEDULE)))
    # Every cause is counted (0 too).
    assert all(isinstance(n, int) for n in batches.values()), batches
    # Each input went at once, alone: none waited for its linger (the third, right after
    # the second, would have without the "sparse" rule)...
    assert batches["idle"] + batches["sparse"] == len(SCHEDULE), batches
    assert sum(batches.values()) == len(SCHEDULE), batches
    # ... and the first (nothing before it) and at least one of the two that come 1.5 s
    # after the batch before them went as idle: without the idle-gap rule none would.
    assert batches["idle"] >= 2, batches
