"""The review agent on a Flink MiniCluster (in the execution mode of ``--flink-mode``):
through run_agent, and in a job of our own built on the ``flink_env`` fixture."""

from __future__ import annotations

import json

import pytest

from examples.tests.expected import DAMAGED, SCRIPTED
from examples.workflow_single_agent import ReviewAnalysisAgent, model_resources
from flink_agents.testing import assert_exactly_once, assert_per_key_order, run_agent

pytestmark = pytest.mark.flink


def test_the_whole_sample_on_two_slots(reviews, flink_mode):
    run = run_agent(
        ReviewAnalysisAgent(),
        reviews,
        key="id",
        resources=model_resources("scripted"),
        mode=flink_mode,
        parallelism=2,
    )
    assert {k: [(o.score, o.reasons) for o in v] for k, v in run.outputs.items()} == {
        key: [expected] for key, expected in SCRIPTED.items()
    }
    assert_exactly_once(run)
    assert_per_key_order(run)
    tools = run.event_log.calls("tool", name="notify_shipping_manager")
    assert sorted(c["key"] for c in tools) == DAMAGED


def test_our_own_job_on_the_flink_env_fixture(flink_env, reviews):
    """A job as we deploy it: records from a stream, keyed by id, results as JSON."""
    from pyflink.common import Types

    agents_env = flink_env.agents_env
    for name, descriptor in model_resources("scripted").items():
        agents_env.add_resource(name, descriptor)
    records = flink_env.source([r.model_dump() for r in reviews])
    results = (
        agents_env.from_datastream(records, key_selector=lambda r: r["id"])
        .apply(ReviewAnalysisAgent())
        .to_datastream()
        .map(lambda result: result.model_dump_json(), output_type=Types.STRING())
    )
    scored = {
        r["id"]: (r["score"], r["reasons"]) for r in map(json.loads, flink_env.collect(results))
    }
    assert scored == SCRIPTED
