"""Human approval on the local host: approve, reject, edit, timeout, held inputs, bad
responses."""

from __future__ import annotations

import logging
import time

import pytest

from flink_agents.api.approval import ApprovalRequest, ApprovalResponse
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.errors import ConfigurationError, HookError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.approval import plan_needs_approval
from flink_agents.runtime.local.runner import LocalRunner
from flink_agents.testing import ScriptedChatModelConnection
from tests.runtime import approval_agents

REFUND = {"tool": "refund", "args": {"order_id": "o1", "amount": 30}}
LOOKUP = {"tool": "lookup", "args": {"order_id": "o2"}}


@pytest.fixture
def runner():
    approval_agents.CALLS.clear()
    ScriptedChatModelConnection.reset_counts()
    plans: list[LocalRunner] = []

    def make(**config):
        plan = AgentPlan.from_agent(approval_agents.refund_agent(), config)
        plans.append(LocalRunner(plan))
        return plans[-1]

    yield make
    for r in plans:
        r.close()


def outputs(results):
    return [(r.key, o) for r in results for o in r.outputs]


def model_calls() -> int:
    return ScriptedChatModelConnection.call_counts.get("approval", 0)


def test_approve_resumes_the_run_without_repeating_calls(runner):
    r = runner()
    first = r.run([("u1", REFUND), ("u2", LOOKUP)])
    (key, request), (other, answer) = outputs(first)
    assert isinstance(request, ApprovalRequest) and key == "u1"
    assert (request.key, request.tool_name, request.arguments) == (
        "u1",
        "refund",
        {"order_id": "o1", "amount": 30},
    )
    assert request.tool_call_id == "c1" and request.expires_at - request.created_at == 86400
    # The other key went on; the paused run called nothing yet and committed nothing.
    assert (other, answer) == ("u2", "#1 lookup[c1]=o2: shipped")
    assert [c["tool"] for c in approval_agents.CALLS] == ["lookup"]
    assert "u1" not in r.memory and model_calls() == 3  # u1: 1 (asks for refund), u2: 2
    second = r.run([("u1", request.approve())])
    assert outputs(second) == [("u1", "#1 refund[c1]=refunded 30 on o1")]
    assert [c["tool"] for c in approval_agents.CALLS] == ["lookup", "refund"]
    assert model_calls() == 4  # u1's call before the pause was replayed from the log
    assert r.memory["u1"] == {"seen": 1}
    assert r.paused == {}


def test_reject_goes_to_the_model_with_the_reason(runner):
    r = runner()
    ((_, request),) = outputs(r.run([("u1", REFUND)]))
    out = outputs(r.run([("u1", request.reject("amount too high"))]))
    assert out == [
        (
            "u1",
            "#1 refund[c1]=Error: tool 'refund' was not called: the call was rejected by a "
            "human reviewer: amount too high",
        )
    ]
    assert approval_agents.CALLS == []


def test_approve_with_edited_arguments(runner):
    r = runner()
    ((_, request),) = outputs(r.run([("u1", REFUND)]))
    out = outputs(r.run([("u1", request.approve({"order_id": "o1", "amount": 10}))]))
    assert out == [("u1", "#1 refund[c1]=refunded 10 on o1")]
    assert approval_agents.CALLS == [{"tool": "refund", "order_id": "o1", "amount": 10}]


def test_later_inputs_of_the_key_wait_behind_the_paused_run(runner):
    r = runner()
    first = r.run([("u1", REFUND), ("u1", LOOKUP), ("u2", LOOKUP)])
    (_, request), u2 = outputs(first)
    assert u2 == ("u2", "#1 lookup[c1]=o2: shipped")
    # u1's second input ran after the resumed first one, in order, from the held inputs.
    out = outputs(r.run([("u1", request.approve())]))
    assert out == [
        ("u1", "#1 refund[c1]=refunded 30 on o1"),
        ("u1", "#2 lookup[c1]=o2: shipped"),
    ]


def test_a_second_approval_in_the_same_run_pauses_again(runner):
    r = runner()
    ((_, first),) = outputs(r.run([("u1", REFUND), ("u1", REFUND)]))
    (_, done), (_, second) = outputs(r.run([("u1", first.approve())]))
    assert done == "#1 refund[c1]=refunded 30 on o1"
    assert isinstance(second, ApprovalRequest) and second.request_id != first.request_id
    assert outputs(r.run([("u1", second.approve())])) == [("u1", "#2 refund[c1]=refunded 30 on o1")]


def test_an_unanswered_request_is_rejected_at_its_timeout(runner):
    r = runner(**{"approval.timeout": 0.2})
    ((_, request),) = outputs(r.run([("u1", REFUND)]))
    assert request.expires_at - request.created_at == pytest.approx(0.2)
    assert outputs(r.run([])) == []  # not yet
    time.sleep(0.3)
    out = outputs(r.run([("u2", LOOKUP)]))
    assert out[0][0] == "u1" and "was not called" in out[0][1]
    assert "no decision within approval.timeout (0.2s)" in out[0][1]
    assert out[1] == ("u2", "#1 lookup[c1]=o2: shipped")
    # A response after the timeout is dropped.
    assert r.run([("u1", request.approve())]) == []
    assert approval_agents.CALLS == [{"tool": "lookup", "order_id": "o2"}]


def test_bad_responses_are_logged_counted_and_dropped(runner, caplog):
    r = runner()
    (_, req1), (_, req2) = outputs(r.run([("u1", REFUND), ("u2", REFUND)]))
    made_up = ApprovalResponse(request_id="nope", key="u1", approved=True)
    other_key = req2.approve()  # u2's request, sent under key u1
    lying = ApprovalResponse(request_id=req1.request_id, key="u2", approved=True)
    with caplog.at_level(logging.WARNING, "flink_agents.runtime.approval"):
        assert r.run([("u1", made_up), ("u1", other_key), ("u1", lying)]) == []
    assert r.runner.metrics.get_counter("numOfApprovalResponsesDropped").get_count() == 3
    text = caplog.text
    assert "waits for request " + req1.request_id in text
    assert "names key 'u2' but arrived under key 'u1'" in text
    assert approval_agents.CALLS == [] and set(r.paused) == {"u1", "u2"}
    # The right responses still resume the right runs.
    out = outputs(r.run([("u2", req2.reject("no")), ("u1", req1.approve())]))
    assert sorted(k for k, _ in out) == ["u1", "u2"]


def test_the_local_environment_emits_the_request_and_warns_at_close(caplog):
    env = AgentsExecutionEnvironment.get_execution_environment()
    out = (
        env.from_list([{"key": "u1", "value": REFUND}])
        .apply(approval_agents.refund_agent())
        .to_list()
    )
    with caplog.at_level(logging.WARNING, "flink_agents.runtime.local"):
        env.execute()
    assert isinstance(out[0]["u1"], ApprovalRequest)
    assert "1 run(s) waiting for approval; they are dropped" in caplog.text


def test_a_bad_approval_timeout_is_a_clear_error():
    with pytest.raises(ConfigurationError, match="approval.timeout"):
        AgentPlan.from_agent(approval_agents.refund_agent(), {"approval.timeout": -1})


def test_a_pause_passes_through_an_action_timeout(runner):
    # With action.timeout the tool action runs in a task of its own: the pause still ends
    # the run as a pause (not as an error), and the resumed run completes.
    r = runner(**{"action.timeout": 5})
    ((_, request),) = outputs(r.run([("u1", REFUND)]))
    assert isinstance(request, ApprovalRequest)
    assert outputs(r.run([("u1", request.approve())])) == [
        ("u1", "#1 refund[c1]=refunded 30 on o1")
    ]


def test_a_bare_response_in_from_list_goes_to_its_key():
    from flink_agents.runtime.local.environment import _split

    response = ApprovalResponse(request_id="r", key="u7", approved=True)
    assert _split(response) == ("u7", response)


def test_a_before_tool_hook_asks_for_approval_changes_arguments_or_answers():
    approval_agents.CALLS.clear()
    plan = AgentPlan.from_agent(approval_agents.guarded_refund_agent(), {})
    assert plan_needs_approval(plan)  # Flink then routes responses by their key
    with LocalRunner(plan) as r:
        vip = {"tool": "lookup", "args": {"order_id": "vip1"}}
        cached = {"tool": "lookup", "args": {"order_id": "cached"}}
        big = {"tool": "refund", "args": {"order_id": "o1", "amount": 80}}
        first = outputs(r.run([("u1", vip), ("u2", cached), ("u3", big)]))
        requests = {k: o for k, o in first if isinstance(o, ApprovalRequest)}
        # the hook answered u2 without calling the tool
        assert [(k, o) for k, o in first if k == "u2"] == [("u2", "#1 lookup[c1]=cached: shipped")]
        assert sorted(requests) == ["u1", "u3"]
        assert (requests["u1"].tool_name, requests["u1"].arguments) == (
            "lookup",
            {"order_id": "vip1"},
        )
        # a tool that requires approval anyway: the human sees the hook's arguments
        assert requests["u3"].arguments == {"order_id": "o1", "amount": 50}
        assert approval_agents.CALLS == []
        second = outputs(
            r.run([("u1", requests["u1"].approve()), ("u3", requests["u3"].approve())])
        )
        assert sorted(second) == [
            ("u1", "#1 lookup[c1]=vip1: shipped"),
            ("u3", "#1 refund[c1]=refunded 50 on o1"),
        ]
        assert [c["order_id"] for c in approval_agents.CALLS] == ["vip1", "o1"]


def test_a_failing_before_tool_hook_follows_the_error_strategy_with_its_name():
    approval_agents.CALLS.clear()
    boom = {"tool": "lookup", "args": {"order_id": "boom"}}
    plan = AgentPlan.from_agent(approval_agents.guarded_refund_agent(), {})
    with LocalRunner(plan) as r, pytest.raises(HookError, match="before_tool hook 'guard' failed"):
        r.run([("u1", boom)])
    ignore = {"error-handling-strategy": "ignore"}
    plan = AgentPlan.from_agent(approval_agents.guarded_refund_agent(), ignore)
    with LocalRunner(plan) as r:
        results = r.run([("u1", boom)])
    assert outputs(results) == []
    assert any("guard cannot judge" in e.error for res in results for e in res.errors)
    assert approval_agents.CALLS == [] or all(
        c["order_id"] != "boom" for c in approval_agents.CALLS
    )


def test_require_approval_is_for_before_tool_hooks_only():
    from flink_agents.api.hooks import HookContext, HookPoint

    hc = HookContext(point=HookPoint.BEFORE_MODEL, key="k", memory=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="require_approval\\(\\) is for before_tool hooks"):
        hc.require_approval()
