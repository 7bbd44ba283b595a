"""The review agent survives a failure: the job fails after four reviews, restarts from
its last checkpoint, and every review is analysed exactly once, without asking the model
or notifying the shipping manager twice."""

from __future__ import annotations

import pytest

from examples.tests.expected import DAMAGED, SCRIPTED
from examples.workflow_single_agent import ReviewAnalysisAgent, model_resources
from flink_agents.testing import (
    assert_exactly_once,
    assert_no_repeated_calls,
    assert_per_key_order,
    run_agent,
)

pytestmark = pytest.mark.flink


def test_a_failure_after_four_reviews(reviews, flink_mode):
    run = run_agent(
        ReviewAnalysisAgent(),
        reviews + reviews[:3],  # three reviews come twice: their key's memory carries over
        key="id",
        resources=model_resources("scripted"),
        mode=flink_mode,
        fail_after=4,
    )
    assert run.failures == 1
    expected = {key: [expected] for key, expected in SCRIPTED.items()}
    for review in reviews[:3]:
        expected[review.id].append(SCRIPTED[review.id])
    assert_exactly_once(run)
    assert {k: [(o.score, o.reasons) for o in v] for k, v in run.outputs.items()} == expected
    assert_per_key_order(run)
    assert_no_repeated_calls(run)  # the model
    assert_no_repeated_calls(run, kind="tool")  # the shipping manager
    real_tool_calls = run.event_log.calls("tool", replayed=False)
    assert sorted(c["key"] for c in real_tool_calls) == sorted([*DAMAGED, "r02"])
