"""The examples that are PyFlink jobs, each run as a script (its own MiniCluster) and
checked against the same agents run in the local environment."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flink_agents.api.execution_environment import AgentsExecutionEnvironment

pytestmark = pytest.mark.flink

REPO = Path(__file__).resolve().parents[2]


def run_job(module: str, output: Path) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", module, str(output)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]


def run_local(agent, items: list[dict]) -> list:
    env = AgentsExecutionEnvironment.get_execution_environment()
    out = env.from_list(items).apply(agent).to_list()
    env.execute()
    return [next(iter(o.values())) for o in out]


def test_multi_agent_pipeline_matches_local_agents_and_python_windows(tmp_path):
    from examples import multi_agent as m

    flink = run_job("examples.multi_agent", tmp_path / "suggestions.jsonl")

    # The same pipeline without Flink: agent 1 locally, windows by hand, agent 2 locally.
    reviews = m.sample_reviews()
    analyses = run_local(
        m.ReviewAnalysisAgent(), [{"key": r.product_id, "value": r} for r in reviews]
    )
    groups: dict[tuple[str, int], list] = {}
    for a in analyses:
        start = a.ts - a.ts % m.WINDOW_MS
        groups.setdefault((a.product_id, start), []).append(a)
    summaries = [m.summarize(p, s, items) for (p, s), items in sorted(groups.items())]
    expected = [
        s.model_dump()
        for s in run_local(
            m.suggestion_agent(), [{"key": w["product_id"], "value": w} for w in summaries]
        )
    ]
    assert flink == expected

    # And what that means, spelled out for one window.
    assert len(flink) == 5  # blender/kettle in two windows, toaster in one
    assert sum(s["review_count"] for s in flink) == len(reviews)
    blender0 = flink[0]
    assert (blender0["product_id"], blender0["window_start"]) == ("blender", 0)
    assert blender0["review_count"] == 3
    assert blender0["average_score"] == pytest.approx((5 + 2 + 2) / 3, abs=0.01)
    assert blender0["suggestions"] == ["improve the packaging", "add sound insulation"]


def test_table_api_example_matches_local_agent(tmp_path):
    from examples import table_api as t

    flink = run_job("examples.table_api", tmp_path / "unhappy.jsonl")

    items = [
        {"key": product, "value": {"review_id": rid, "product": product, "text": text}}
        for rid, product, text in t.REVIEWS
    ]
    local = [row.as_dict() for row in run_local(t.triage_agent(), items)]
    expected = sorted((r for r in local if r["score"] <= t.UNHAPPY), key=lambda r: r["review_id"])
    assert flink == expected
    assert [r["review_id"] for r in flink] == ["r2", "r4"]
    assert {r["label"] for r in flink} == {"complaint"}
