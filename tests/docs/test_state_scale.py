"""``benchmarks/state_scale.py`` without a job: its progress marks and its figure (the
state-at-scale section of docs/benchmarks.md is drawn from them)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from benchmarks import state_scale
from tests.docs.test_plots import _png


def _result(keys: int, backend: str, kind: str, cpu_us: float, conf: list[str]) -> dict[str, Any]:
    total = keys * 2
    marks = [[n, n / 1000, n * cpu_us / 1e6] for n in range(total // 20, total + 1, total // 20)]
    return {
        "keys": keys,
        "backend": backend,
        "kind": kind,
        "rate": 1e6 / cpu_us,
        "cpu_marks": marks,
        "flink_conf": conf,
    }


def test_progress_marks_every_5_percent_and_after_a_quiet_minute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(state_scale.time, "time", lambda: clock[0])
    marks, done = tmp_path / "marks.jsonl", tmp_path / "progress.json"
    progress = state_scale.Progress(str(done), 200, str(marks), "1000000,rocksdb,agent")
    progress.open(None)  # type: ignore[arg-type]  # unused
    for n in range(1, 25):
        # records 15 to 24 come slowly (a job that stalls): one every 31 s
        clock[0] += 31.0 if n >= 15 else 0.01
        assert progress.map(n) == n
    lines = [json.loads(line) for line in marks.read_text().splitlines()]
    # every 10 records (5 % of 200), and records 16, 18, ...: 60 s after the mark before
    assert [m["n"] for m in lines] == [10, 16, 18, 20, 22, 24]
    assert {m["label"] for m in lines} == {"1000000,rocksdb,agent"}
    assert not done.exists()  # written only once the last output passed


def test_pass2_cpu_is_the_second_half_of_the_marks() -> None:
    marks = [[100, 1.0, 0.01], [200, 2.0, 0.03], [300, 3.0, 0.06], [400, 4.0, 0.10]]
    assert state_scale.pass2_cpu_us(marks, 400) == pytest.approx(350.0)
    assert math.isnan(state_scale.pass2_cpu_us(marks[:2], 400))  # no second half yet


def test_the_figure_draws_a_bloom_filter_run_as_a_line_of_its_own(tmp_path: Path) -> None:
    bloom = ["state.backend.rocksdb.use-bloom-filter=true"]
    results = [
        _result(keys, backend, kind, cpu, conf)
        for keys in (10_000, 100_000)
        for backend, kind, cpu, conf in (
            ("hashmap", "agent", 180.0, []),
            ("hashmap", "baseline", 60.0, []),
            ("rocksdb", "agent", 800.0, bloom),
            ("rocksdb", "baseline", 270.0, []),
        )
    ]
    assert state_scale._backend_label(results[2]) == "rocksdb, bloom filter"
    assert state_scale._backend_label(results[3]) == "rocksdb"
    path = tmp_path / "state-scale.png"
    state_scale.plot(results, str(path), "note")
    assert _png(path) == (1000, 420)
