"""PNG figures of the benchmarks (``--plot PATH`` of the scripts), for docs/benchmarks.md.

Each function takes what its benchmark measured and writes one PNG. matplotlib comes with
the ``dev`` extra (``pip install -e '.[dev]'``); it is imported only when a figure is drawn,
with the Agg backend (no display needed).

``flink_host.py --plot`` can add its medians to a JSON file (``--plot-data``), one entry per
Flink version and execution mode, and plots every entry of it: run the script once per mode
(and per PyFlink version) with the same file to compare them in one figure.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

#: The figures' size in inches and resolution: ~1000 px wide, sharp on the docs page.
_SIZE = (10.0, 4.2)
_DPI = 100
_BASELINE, _AGENT, _IDEAL, _ALIGNED, _UNALIGNED = (
    "#9e9e9e",
    "#3f51b5",
    "#e53935",
    "#e53935",
    "#3f51b5",
)


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise SystemExit(
            "--plot needs matplotlib: install the dev extra (pip install -e '.[dev]')"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def require() -> None:
    """Fail now, before the benchmark runs, when ``--plot`` cannot draw (no matplotlib)."""
    _pyplot()


def _save(fig: Any, path: str, note: str) -> None:
    """Write ``fig`` to ``path`` with ``note`` (how it was measured) under it."""
    lines = textwrap.wrap(note, width=150)
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=8, color="#555555", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.035 * (len(lines) + 0.5), 1, 1))
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    # No timestamp in the PNG: the same figures give the same bytes.
    fig.savefig(path, dpi=_DPI, metadata={"Software": None})
    fig.clf()
    _pyplot().close(fig)
    print(f"figure written: {path}")


def merge_entries(path: str | None, entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The entries of the JSON file ``path`` with ``entry`` added (replacing the one of the
    same Flink version and mode), written back; just ``[entry]`` without a file."""
    if path is None:
        return [dict(entry)]
    entries: list[dict[str, Any]] = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            entries = json.load(fh)
    same = (entry["flink"], entry["mode"])
    entries = [e for e in entries if (e["flink"], e["mode"]) != same] + [dict(entry)]
    entries.sort(key=lambda e: (e["flink"], e["mode"]))
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(entries, fh, indent=1)
        fh.write("\n")
    return entries


def throughput(entries: Sequence[Mapping[str, Any]], path: str, note: str) -> None:
    """Agent vs baseline throughput per Flink version and mode, and concurrency vs in-flight.

    Args:
        entries: one per Flink version and mode: ``flink``, ``mode``, ``baseline`` and
            ``agent`` (median records/s), ``concurrency``: ``[{"in_flight", "rate",
            "ideal"}]`` (runs/s of the model that waits).
        path: the PNG to write.
        note: the command, machine and load, printed under the figure.
    """
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=_SIZE)
    labels = [f"Flink {e['flink']}\n{e['mode']} mode" for e in entries]
    xs = list(range(len(entries)))
    width = 0.38
    base = [e["baseline"] for e in entries]
    agent = [e["agent"] for e in entries]
    left.bar(
        [x - width / 2 for x in xs], base, width, label="baseline (keyed function)", color=_BASELINE
    )
    bars = left.bar([x + width / 2 for x in xs], agent, width, label="agent", color=_AGENT)
    for bar, b, a in zip(bars, base, agent, strict=True):
        left.annotate(
            f"{a / b:.0%}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=9,
        )
    left.set_xticks(xs, labels)
    left.set_ylabel("records/s (median)")
    left.set_title("Agent throughput vs baseline (% of baseline)")
    left.legend(fontsize=8)
    left.grid(axis="y", alpha=0.3)

    ideal_points: dict[int, float] = {}
    for label, entry in zip(labels, entries, strict=True):
        points = sorted(entry.get("concurrency", []), key=lambda p: p["in_flight"])
        if not points:
            continue
        right.plot(
            [p["in_flight"] for p in points],
            [p["rate"] for p in points],
            "o-",
            label=label.replace("\n", ", "),
        )
        ideal_points.update({p["in_flight"]: p["ideal"] for p in points})
    if ideal_points:
        xs_ideal = sorted(ideal_points)
        right.plot(
            xs_ideal,
            [ideal_points[x] for x in xs_ideal],
            "--",
            color=_IDEAL,
            label="ideal: min(keys, in flight) / latency",
        )
        right.set_xscale("log", base=2)
        right.set_xticks(xs_ideal, [str(x) for x in xs_ideal])
    right.set_xlabel("max-in-flight")
    right.set_ylabel("runs/s")
    right.set_title("Concurrency: a 200 ms model")
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    _save(fig, path, note)


def event_log(runs: Mapping[str, Sequence[Mapping[str, Any]]], path: str, note: str) -> None:
    """Throughput and CPU per record of the agent with metrics off / on / + event log.

    Args:
        runs: the runs of each configuration (``agent-bare``, ``agent``, ``agent-eventlog``,
            ``agent-eventlog-thread``), each with ``rate`` (records/s) and ``run_cpu_us``.
        path: the PNG to write.
        note: the command, machine and load.
    """
    import statistics

    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=_SIZE)
    names = {
        "agent-bare": "metrics off",
        "agent": "metrics on",
        "agent-eventlog": "+ event log\n(default writer)",
        "agent-eventlog-thread": "+ event log\n(thread writer)",
    }
    kinds = [k for k in names if k in runs]
    xs = list(range(len(kinds)))
    for axis, field, unit in ((left, "rate", "records/s"), (right, "run_cpu_us", "us")):
        medians = [statistics.median(r[field] for r in runs[k]) for k in kinds]
        colors = [_BASELINE if k == "agent-bare" else _AGENT for k in kinds]
        bars = axis.bar(xs, medians, 0.6, color=colors, alpha=0.85)
        for x, kind in zip(xs, kinds, strict=True):
            values = [r[field] for r in runs[kind]]
            axis.plot([x] * len(values), values, "k.", markersize=5)
        reference = medians[kinds.index("agent")] if "agent" in kinds else None
        for bar, kind, value in zip(bars, kinds, medians, strict=True):
            text = f"{value:,.0f}"
            if reference and kind.startswith("agent-eventlog"):
                change = value / reference - 1
                text += f"\n{change:+.0%}"
            top = max(r[field] for r in runs[kind])
            axis.annotate(
                text,
                (bar.get_x() + bar.get_width() / 2, top),
                ha="center",
                va="bottom",
                fontsize=8,
            )
        axis.set_xticks(xs, [names[k] for k in kinds], fontsize=8)
        axis.set_ylabel(unit)
        axis.grid(axis="y", alpha=0.3)
    left.set_title("Throughput (bars: medians, dots: runs; % vs metrics on)")
    right.set_title("Process CPU per record while processing")
    right.margins(y=0.15)
    left.margins(y=0.15)
    _save(fig, path, note)


def checkpoints(series: Mapping[str, Mapping[str, Any]], path: str, note: str) -> None:
    """Checkpoint durations over a saturated job's time, aligned against unaligned.

    Args:
        series: per kind (``aligned``, ``unaligned``): ``completed``, a list of
            ``(seconds since the job started, duration ms)``; ``unfinished``, the same for
            checkpoints that never completed (how long they had waited).
        path: the PNG to write.
        note: the command, machine and load.
    """
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=_SIZE)
    colors = {"aligned": _ALIGNED, "unaligned": _UNALIGNED}
    for kind, data in series.items():
        done = sorted(data.get("completed", []))
        color = colors.get(kind)
        if done:
            axis.plot(
                [t for t, _ in done],
                [d / 1000 for _, d in done],
                "o-",
                color=color,
                markersize=4,
                label=f"{kind}: {len(done)} completed",
            )
        waited = data.get("unfinished", [])
        if waited:
            axis.plot(
                [t for t, _ in waited],
                [d / 1000 for _, d in waited],
                "x",
                color=color,
                markersize=9,
                label=f"{kind}: never completed (waited)",
            )
    axis.set_yscale("log")
    axis.set_xlabel("seconds since the job started (checkpoint triggered)")
    axis.set_ylabel("checkpoint duration, s (log)")
    axis.set_title("Checkpoints of a saturated agent: aligned vs unaligned")
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3, which="both")
    _save(fig, path, note)


def latency(series: Mapping[str, Sequence[float]], path: str, note: str) -> None:
    """Latency histograms (left) and their tails (right: the share of records slower than x).

    Args:
        series: per pipeline (``baseline``, ``agent``, variants), every record's latency (ms).
        path: the PNG to write.
        note: the command, machine and load, printed under the figure.
    """

    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=_SIZE)
    values = [v for vs in series.values() for v in vs if v > 0]
    low = max(min(values, default=0.01), 0.01)
    high = max(max(values, default=1.0), low * 10)
    steps = 60
    bins = [low * (high / low) ** (i / steps) for i in range(steps + 1)]
    colors = {"baseline": _BASELINE, "agent": _AGENT}
    for kind, vs in series.items():
        ordered = sorted(vs)
        if not ordered:
            continue
        p50 = ordered[len(ordered) // 2]
        p99 = ordered[min(int(0.99 * len(ordered)), len(ordered) - 1)]
        label = f"{kind}: p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {ordered[-1]:.1f} ms"
        color = colors.get(kind)
        left.hist(ordered, bins=bins, histtype="step", linewidth=1.5, label=kind, color=color)
        n = len(ordered)
        right.step(ordered, [(n - i) / n for i in range(n)], where="post", label=label, color=color)
    for axis in (left, right):
        axis.set_xscale("log")
        axis.set_xlabel("latency (ms, log scale)")
        axis.grid(alpha=0.3, which="both")
    left.legend(fontsize=8)
    right.legend(fontsize=8, loc="lower left")
    left.set_ylabel("records")
    left.set_title("Latency histogram (keyed operator and its two hops)")
    right.set_yscale("log")
    right.set_ylim(1 / max(1, max((len(v) for v in series.values()), default=1)) / 2, 1.0)
    right.axhline(0.01, color=_IDEAL, linestyle=":", linewidth=1)
    right.set_ylabel("share of records slower than x")
    right.set_title("Tail (dotted: 1 %, the p99)")
    _save(fig, path, note)


def load_average() -> float:
    """The 1-minute load average (other work on the machine while measuring)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def machine_note(command: str, load_before: float) -> str:
    """The command, this machine (CPUs, Python) and its load average from ``load_before`` to
    now, for a figure's note."""
    import platform

    return (
        f"{command}  |  {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average {load_before:.1f} -> {load_average():.1f}"
    )
