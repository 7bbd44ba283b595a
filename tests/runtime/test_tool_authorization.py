"""Tool authorization: a model may call only the tools its setup offered for that request.

Native tool calls (with interceptors that change the offer), text ReAct, a replay after a
restore, tool requests sent by an action, the metric, the log line and the event log's
marker; the ``side_effects`` marker and its use with approval. Every refused tool is shown
not to have run (its function records each call in ``authorization_agents.RAN``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.approval import ApprovalRequest
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.plan.actions.tool_authorization import UNAUTHORIZED_COUNTER
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner, DurableRecord
from flink_agents.runtime.local.runner import LocalRunner
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup
from tests.observability.agents import dump
from tests.runtime import authorization_agents as aa

DROP = ["drop_database", {"name": "prod"}]
LOOKUP = ["lookup", {"word": "hi"}]
REFUSED = "Error: unknown tool 'drop_database'; the tools you can call are: lookup"


@pytest.fixture(autouse=True)
def _fresh():
    aa.RAN.clear()
    aa.OFFERED.clear()
    aa.SEEN_BY_HOOK.clear()
    aa.SWITCHES["hide_lookup"] = True


def _run(agent: Any, inputs: list[Any], **config: Any) -> tuple[list[Any], dict[str, Any]]:
    env = AgentsExecutionEnvironment.get_execution_environment(**config)
    builder = env.from_list([{"key": f"k{i}", "value": v} for i, v in enumerate(inputs)])
    out = builder.apply(agent).to_list()
    env.execute()
    return [next(iter(o.values())) for o in out], builder.get_metric_group().to_dict()


def test_a_tool_the_setup_does_not_offer_never_runs(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING, "flink_agents.plan.actions.tool_authorization"):
        out, metrics = _run(aa.guarded_agent(), [{"calls": [DROP, LOOKUP]}])
    # Refused and answered as an unknown tool; the offered call in the same reply ran.
    assert out == [f"drop_database[c0]={REFUSED}; lookup[c1]=hi is a word"]
    assert aa.RAN == ["lookup:hi"]
    assert metrics[UNAUTHORIZED_COUNTER] == 1
    (line,) = [r.getMessage() for r in caplog.records]
    assert "model 'model' called tool 'drop_database'" in line and "not offered" in line
    assert "key='k0'" in line


def test_the_event_log_marks_the_refused_call(tmp_path: Path):
    _run(
        aa.guarded_agent(),
        [{"calls": [DROP, LOOKUP]}],
        **{"event-log.enabled": True, "baseLogDir": str(tmp_path)},
    )
    (log_file,) = tmp_path.glob("events-*.log")
    records = dump(str(log_file))
    (request,) = [r for r in records if r.get("eventType") == "_tool_request_event"]
    assert request["payload"]["offered_tools"] == ["lookup"]
    (response,) = [r for r in records if r.get("eventType") == "_tool_response_event"]
    assert response["payload"]["error_codes"] == {"c0": "unauthorized_tool"}
    assert response["payload"]["errors"] == {"c0": REFUSED}


def test_interceptors_decide_the_offer():
    # Dropped from request.tools by an interceptor: refused, although the setup lists it.
    out, metrics = _run(aa.guarded_agent(interceptors=(aa.hide_lookup,)), [{"calls": [LOOKUP]}])
    assert out == ["lookup[c0]=Error: unknown tool 'lookup'; the tools you can call are: none"]
    assert aa.OFFERED[0] == [] and aa.RAN == [] and metrics[UNAUTHORIZED_COUNTER] == 1
    # Added by an interceptor: offered, so it may run (found among the tool resources).
    out, _ = _run(
        aa.guarded_agent(interceptors=(aa.add_extra,)), [{"calls": [["extra", {"x": 4}]]}]
    )
    assert out == ["extra[c0]=8"] and aa.RAN == ["extra:4"]


def test_a_replay_after_a_restore_decides_as_the_first_run():
    # First run: the interceptor hides lookup, so the model's call of it is refused.
    runner = AgentRunner(AgentPlan.from_agent(aa.guarded_agent(interceptors=(aa.hide_lookup,))))
    records: dict[str, DurableRecord] = {}
    first = runner.run_sync("k", {"calls": [LOOKUP]}, on_record=records.__setitem__)
    assert aa.RAN == [] and "unknown tool 'lookup'" in first.outputs[0]
    # The interceptor would now offer lookup; a restore replays the recorded model call (the
    # chain does not run again), and the decision stays the recorded offer's.
    aa.SWITCHES["hide_lookup"] = False
    model_call = {"1": records["1"]}
    again = runner.run_sync("k", {"calls": [LOOKUP]}, durable=model_call)
    assert again.outputs == first.outputs
    assert aa.RAN == []
    # Without the record the model is asked again, and now lookup was offered.
    fresh = runner.run_sync("k", {"calls": [LOOKUP]})
    assert fresh.outputs == ["lookup[c0]=hi is a word"] and aa.RAN == ["lookup:hi"]
    runner.close()


def test_a_record_without_the_offer_falls_back_to_the_setups_tools():
    # An intercepted model call recorded before the offer was kept with it: the setup's
    # own tools decide. (Without interceptors the offer is never recorded: it is the
    # setup's, fixed by the plan.)
    aa.SWITCHES["hide_lookup"] = False
    runner = AgentRunner(AgentPlan.from_agent(aa.guarded_agent(interceptors=(aa.hide_lookup,))))
    records: dict[str, DurableRecord] = {}
    runner.run_sync("k", {"calls": [DROP, LOOKUP]}, on_record=records.__setitem__)
    old = records["1"]
    reply = old.result
    assert reply.extra_args["_offered_tools"] == ["lookup"]
    extra = {k: v for k, v in reply.extra_args.items() if k != "_offered_tools"}
    bare = DurableRecord(old.signature, result=reply.model_copy(update={"extra_args": extra}))
    aa.RAN.clear()
    aa.SWITCHES["hide_lookup"] = True  # would hide it now; the setup offers it
    replayed = runner.run_sync("k", {"calls": [DROP, LOOKUP]}, durable={"1": bare})
    assert replayed.outputs == [f"drop_database[c0]={REFUSED}; lookup[c1]=hi is a word"]
    assert aa.RAN == ["lookup:hi"]
    runner.close()


def test_tools_in_text_offer_no_native_tool():
    out, _ = _run(aa.guarded_agent(), [{"calls": [LOOKUP], "request": {"tools_in_text": True}}])
    assert out == ["lookup[c0]=Error: unknown tool 'lookup'; the tools you can call are: none"]
    assert aa.OFFERED[0] == [] and aa.RAN == []


def test_a_tool_request_of_an_action_may_call_the_named_setups_tools_only():
    out, metrics = _run(
        aa.guarded_agent(base=aa.DirectToolAgent()),
        [
            {"model": "model", "calls": [DROP, LOOKUP]},
            {"model": "no_such_setup", "calls": [LOOKUP]},
            # Code of the agent's author may grant by name what it decided itself.
            {"model": "model", "calls": [DROP], "offered_tools": ["drop_database"]},
        ],
    )
    assert out[0] == {
        "responses": {"c0": REFUSED, "c1": "hi is a word"},
        "codes": {"c0": "unauthorized_tool"},
    }
    assert out[1]["codes"] == {"c0": "unauthorized_tool"}
    assert out[2] == {"responses": {"c0": "dropped"}, "codes": {}}
    assert aa.RAN == ["lookup:hi", "drop_database:prod"]
    assert metrics[UNAUTHORIZED_COUNTER] == 2


def _react_replies(messages: list[Any], tools: list[Any]) -> Any:
    if not any((m.content or "").startswith("Observation:") for m in messages):
        return 'Thought: clean up.\nAction: drop_database\nAction Input: {"name": "prod"}'
    aa.OFFERED.append([messages[-1].content])
    return "Answer: done"


def test_text_react_runs_only_the_tools_its_prompt_listed():
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond="tests.runtime.test_tool_authorization:_react_replies",
        ),
    )
    env.add_resource("lookup", FunctionTool.from_callable(aa.lookup))
    env.add_resource("drop_database", FunctionTool.from_callable(aa.drop_database))
    agent = ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="conn", tools=["lookup"]
        ),
        tool_calling="text",
    )
    out = env.from_list([{"key": "k", "value": "tidy up"}]).apply(agent).to_list()
    env.execute()
    assert out == [{"k": "done"}]
    assert aa.RAN == []
    (observation,) = aa.OFFERED[0]
    assert observation.startswith(
        "Observation: Error: unknown tool 'drop_database'; the tools you can call are: lookup"
    )


def test_hooks_see_the_side_effects_marker():
    agent = aa.guarded_agent(hooks=(aa.note_side_effects,), offered=("lookup", "drop_database"))
    _run(agent, [{"calls": [LOOKUP]}, {"calls": [DROP]}])
    assert aa.SEEN_BY_HOOK == [("lookup", False), ("drop_database", True)]


def test_side_effects_with_an_approval_hook_pause_for_a_human():
    agent = aa.guarded_agent(hooks=(aa.approve_side_effects,), offered=("lookup", "drop_database"))
    runner = LocalRunner(AgentPlan.from_agent(agent))
    try:
        (first,) = runner.run([("k", {"calls": [LOOKUP]})])
        assert first.outputs == ["lookup[c0]=hi is a word"]  # read-only: no approval
        (paused,) = runner.run([("k", {"calls": [DROP]})])
        (request,) = paused.outputs
        assert isinstance(request, ApprovalRequest) and request.tool_name == "drop_database"
        assert aa.RAN == ["lookup:hi"]
        (done,) = runner.run([("k", request.reject("not today"))])
        assert "rejected by a human reviewer: not today" in done.outputs[0]
        assert aa.RAN == ["lookup:hi"]
    finally:
        runner.close()


def test_the_side_effects_marker_in_the_decorator_the_function_tool_and_the_plan():
    assert FunctionTool.from_callable(aa.marked).side_effects is True
    assert FunctionTool.from_callable(aa.lookup).side_effects is False
    assert FunctionTool.from_callable(aa.lookup, side_effects=True).side_effects is True
    plan = AgentPlan.from_agent(aa.guarded_agent())
    again = AgentPlan.model_validate_json(plan.model_dump_json())
    data = json.loads(again.model_dump_json())
    tools = data["resource_providers"]["tool"]
    assert tools["drop_database"]["serialized"]["side_effects"] is True
    assert tools["lookup"]["serialized"]["side_effects"] is False
