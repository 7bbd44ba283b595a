"""The benchmark figures (``benchmarks/plots.py``): PNGs from measured values, and the
per-version/mode data file that lets one figure compare runs of several invocations."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from benchmarks import plots


def _png(path: Path) -> tuple[int, int]:
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as image:
        colors = image.convert("RGB").getcolors(maxcolors=1_000_000)
        assert colors is not None and len(colors) > 20  # drawn, not blank
        return image.size


def test_merge_entries_keeps_one_entry_per_flink_version_and_mode(tmp_path: Path) -> None:
    data = tmp_path / "throughput.json"
    plots.merge_entries(str(data), {"flink": "2.3.0", "mode": "thread", "agent": 1})
    plots.merge_entries(str(data), {"flink": "2.3.0", "mode": "process", "agent": 2})
    entries = plots.merge_entries(str(data), {"flink": "2.3.0", "mode": "thread", "agent": 3})
    assert [(e["mode"], e["agent"]) for e in entries] == [("process", 2), ("thread", 3)]
    assert json.loads(data.read_text()) == entries
    assert plots.merge_entries(None, {"flink": "1.20", "mode": "thread"}) == [
        {"flink": "1.20", "mode": "thread"}
    ]


def test_throughput_figure(tmp_path: Path) -> None:
    entries = [
        {
            "flink": version,
            "mode": mode,
            "baseline": 10_000.0,
            "agent": rate,
            "concurrency": [
                {"in_flight": n, "rate": n / 0.2 * 0.9, "ideal": n / 0.2} for n in (16, 64, 256)
            ],
        }
        for version, mode, rate in (("2.3.0", "thread", 5_500.0), ("2.3.0", "process", 2_100.0))
    ]
    path = tmp_path / "img" / "throughput.png"
    plots.throughput(entries, str(path), plots.machine_note("flink_host.py --plot", 1.0))
    assert _png(path) == (1000, 420)


def test_event_log_figure(tmp_path: Path) -> None:
    runs = {
        kind: [{"rate": rate * f, "run_cpu_us": 1e6 / rate / f} for f in (0.9, 1.0, 1.1)]
        for kind, rate in (
            ("agent-bare", 7_000.0),
            ("agent", 6_700.0),
            ("agent-eventlog", 5_300.0),
            ("agent-eventlog-thread", 4_600.0),
        )
    }
    path = tmp_path / "event-log.png"
    plots.event_log(runs, str(path), "note")
    assert _png(path) == (1000, 420)


def test_checkpoint_figure(tmp_path: Path) -> None:
    series = {
        "aligned": {"completed": [(8.7, 3724)], "unfinished": [(12.5, 9000.0)]},
        "unaligned": {"completed": [(2.0 + i / 2, 50 + i) for i in range(30)], "unfinished": []},
    }
    path = tmp_path / "checkpoints.png"
    plots.checkpoints(series, str(path), "note")
    assert _png(path) == (1000, 420)


def test_latency_figure(tmp_path: Path) -> None:
    series = {
        "baseline": [0.5 + (i % 50) / 100 for i in range(600)] + [12.0],
        "agent": [1.5 + (i % 70) / 50 for i in range(600)] + [30.0, 45.0],
        "empty variant": [],
    }
    path = tmp_path / "latency.png"
    plots.latency(series, str(path), plots.machine_note("latency.py --plot", 1.0))
    assert _png(path) == (1000, 420)


def test_the_same_figures_give_the_same_bytes(tmp_path: Path) -> None:
    series = {"unaligned": {"completed": [(1.0, 50), (2.0, 60)], "unfinished": []}}
    first, second = tmp_path / "a.png", tmp_path / "b.png"
    plots.checkpoints(series, str(first), "note")
    plots.checkpoints(series, str(second), "note")
    assert first.read_bytes() == second.read_bytes()
