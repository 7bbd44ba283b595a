"""The review agent with the real local model (Qwen2.5-Coder-0.5B via llama.cpp), replayed
from a cassette: offline, deterministic, the same outputs locally and on a MiniCluster.

Record it again (needs ``make model``; about 20 s)::

    pytest examples/tests/test_review_agent_cassette.py -k locally --cassette-mode=record
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.tests.expected import DAMAGED
from examples.workflow_single_agent import ReviewAnalysisAgent, model_resources
from flink_agents.testing import Cassette, assert_exactly_once, run_agent

CASSETTE = Path(__file__).parent / "cassettes" / "review_local_qwen.yaml"


def _results(run):
    return {key: [(o.score, o.reasons) for o in outputs] for key, outputs in run.outputs.items()}


def _recorded_answers() -> dict[str, list[tuple[int, list[str]]]]:
    """What the model answered for each review when the cassette was recorded."""
    answers = {}
    for call in Cassette(CASSETTE, mode="replay").calls("chat"):
        data = json.loads(call.response["content"])
        answers[data["id"]] = [(int(data["score"]), [str(r) for r in data["reasons"]])]
    return answers


@pytest.mark.cassette("cassettes/review_local_qwen.yaml")
def test_the_local_model_replayed_locally(cassette, reviews):
    run = run_agent(
        ReviewAnalysisAgent(),
        reviews,
        key="id",
        resources=model_resources("local"),
        cassette=cassette,
    )
    assert_exactly_once(run)
    if cassette.mode == "replay":
        assert _results(run) == _recorded_answers()
    # The model read the reviews sensibly: shipping damage reported for the two damaged
    # ones (the agent then notified the shipping manager with a durable call), the
    # enthusiastic review scored high.
    notified = run.event_log.calls("call", name="examples.workflow_single_agent.notify")
    assert sorted(c["key"] for c in notified) == DAMAGED
    assert _results(run)["r05"][0][0] >= 4
    assert run.metrics["numOfModelCalls"] == len(reviews)


@pytest.mark.flink
def test_the_same_cassette_replays_on_a_minicluster(reviews, flink_mode):
    local = run_agent(
        ReviewAnalysisAgent(),
        reviews,
        key="id",
        resources=model_resources("local"),
        cassette=Cassette(CASSETTE, mode="replay"),
    )
    on_flink = run_agent(
        ReviewAnalysisAgent(),
        reviews,
        key="id",
        resources=model_resources("local"),
        cassette=Cassette(CASSETTE, mode="replay"),
        mode=flink_mode,
        parallelism=2,
    )
    assert _results(on_flink) == _results(local) == _recorded_answers()
    assert on_flink.memory == local.memory
