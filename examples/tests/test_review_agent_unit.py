"""Unit tests of the review agent in the local environment: no Flink, no model server."""

from __future__ import annotations

import json

from examples.tests.expected import DAMAGED, SCRIPTED
from examples.workflow_single_agent import (
    REVIEW_SCHEMA,
    ProductReview,
    ProductReviewAnalysisRes,
    ReviewAnalysisAgent,
    model_resources,
)
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.testing import (
    assert_memory,
    assert_per_key_order,
    assert_secret_absent,
    run_agent,
    tool_call,
)
from flink_agents.testing.servers import OpenAIServer


def test_scores_reasons_and_memory_with_the_scripted_model(reviews):
    run = run_agent(ReviewAnalysisAgent(), reviews, key="id", resources=model_resources("scripted"))
    assert {
        key: [(o.score, o.reasons) for o in outputs] for key, outputs in run.outputs.items()
    } == {key: [expected] for key, expected in SCRIPTED.items()}
    assert all(isinstance(o, ProductReviewAnalysisRes) for o in run.all_outputs)
    assert_memory(run, "r02", {"id": "r02"}, exact=True)  # sensory memory is not kept
    assert_per_key_order(run)
    # The model asked for the shipping tool exactly for the damaged reviews.
    tool_calls = run.event_log.calls("tool", name="notify_shipping_manager")
    assert sorted(c["key"] for c in tool_calls) == DAMAGED
    assert run.metrics["numOfModelCalls"] == len(reviews) + len(DAMAGED)


def test_a_second_review_of_the_same_id_runs_after_the_first(reviews):
    first = reviews[0]
    again = ProductReview(id=first.id, review="The box arrived broken.")
    run = run_agent(
        ReviewAnalysisAgent(), [first, again], key="id", resources=model_resources("scripted")
    )
    assert [o.score for o in run.outputs["r01"]] == [5, 1]


def test_our_openai_settings_end_to_end_against_a_stand_in(reviews):
    """The connection as we configure it in production (base URL, key, retries), against
    a local server speaking OpenAI's protocol that throttles once, then answers."""
    key = "sk-review-team-0123456789abcdef"
    answer = {"id": "r05", "score": 5, "reasons": []}
    script = [
        OpenAIServer.throttled(retry_after=0.05),
        json.dumps(answer),
    ]
    with OpenAIServer(script, api_key=key) as server:
        resources = {
            "review_model_connection": ResourceDescriptor(
                clazz=OpenAIChatModelConnection,
                api_base_url=server.base_url,
                api_key=key,
                retry_initial_backoff=0.01,
            ),
            "review_analysis_model": ResourceDescriptor(
                clazz=OpenAIChatModelSetup,
                connection="review_model_connection",
                model="gpt-4o-mini",
                prompt="review_analysis_prompt",
                tools=["notify_shipping_manager"],
            ),
        }
        run = run_agent(ReviewAnalysisAgent(), [reviews[4]], key="id", resources=resources)
    assert [o.score for o in run.outputs["r05"]] == [5]
    # The request as the provider saw it: our model, our schema, the tool offered.
    request = server.chat_requests[-1].body
    assert request["model"] == "gpt-4o-mini"
    assert request["tools"][0]["function"]["name"] == "notify_shipping_manager"
    assert json.dumps(REVIEW_SCHEMA["properties"]["score"]) in json.dumps(request)
    assert len(server.chat_requests) == 2  # the 429 was retried
    # The key never reaches the plan, the outputs, the logs or the event log.
    assert_secret_absent(key, run)


def test_the_tool_loop_through_the_stand_in(reviews):
    damaged = reviews[5]
    script = [
        tool_call("notify_shipping_manager", call_id="c1", id="r06", review=damaged.review),
        json.dumps({"id": "r06", "score": 1, "reasons": ["arrived cracked"]}),
    ]
    with OpenAIServer(script) as server:
        resources = {
            "review_model_connection": ResourceDescriptor(
                clazz=OpenAIChatModelConnection, api_base_url=server.base_url, api_key="sk-x"
            ),
            "review_analysis_model": ResourceDescriptor(
                clazz=OpenAIChatModelSetup,
                connection="review_model_connection",
                model="gpt-4o-mini",
                prompt="review_analysis_prompt",
                tools=["notify_shipping_manager"],
            ),
        }
        run = run_agent(ReviewAnalysisAgent(), [damaged], key="id", resources=resources)
    assert [(o.score, o.reasons) for o in run.outputs["r06"]] == [(1, ["arrived cracked"])]
    tool_result = server.chat_requests[1].body["messages"][-1]
    assert tool_result["role"] == "tool" and "notified about review r06" in tool_result["content"]
