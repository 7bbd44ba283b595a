"""Sub-agents in the core and on the local host: a ReAct agent delegating to a sub-agent
(an AgentTool), ``ctx.call_agent`` from an action, durable replay, memory namespaces, the
depth limit, metrics and the event log, interceptors and hooks, approval inside a
sub-agent."""

from __future__ import annotations

import asyncio
import json

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.approval import ApprovalRequest
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.hooks import HookContext
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.tools.agent_tool import AgentTool
from flink_agents.errors import (
    PlanValidationError,
    RuntimeFailure,
    SubagentDepthError,
    SubagentError,
)
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner, DurableRecord, decision_call_id
from flink_agents.runtime.local.runner import LocalRunner
from flink_agents.testing import (
    ScriptedChatModelConnection,
    assert_exactly_once,
    assert_no_repeated_calls,
    run_agent,
)
from tests.runtime import subagent_agents as sa


@pytest.fixture(autouse=True)
def _clean():
    ScriptedChatModelConnection.reset_counts()
    sa.LOOKUPS.clear()
    sa.INTERCEPTED.clear()
    yield


def _runner(agent: Agent, **config) -> AgentRunner:
    plan = AgentPlan.from_agent(agent, config)
    # Through JSON, as a host gets it.
    return AgentRunner(AgentPlan.model_validate_json(plan.model_dump_json()))


def _calls() -> dict[str, int]:
    return dict(ScriptedChatModelConnection.call_counts)


# -- a ReAct agent delegating to a sub-agent ---------------------------------------------------
def test_react_agent_delegates_to_an_agent_tool_on_the_local_environment(tmp_path):
    log = tmp_path / "calls.jsonl"
    records = [sa.question(i, str(log)) for i in range(6)]
    run = run_agent(sa.team(), records, key="id")
    assert_exactly_once(
        run,
        {k: [sa.expected_answer(r) for r in records if r["id"] == k] for k in ("k0", "k1", "k2")},
    )
    assert_no_repeated_calls(run)
    # Two model calls of each agent per input, each made once.
    made = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(made) == 4 * len(records)
    assert _calls() == {"coordinator": 12, "researcher": 12}
    # Keys run concurrently: each question looked up once, in any order across keys.
    assert sorted(sa.LOOKUPS) == sorted(r["q"] for r in records)
    # The event log names the sub-agent: its actions and calls carry its name.
    calls = run.event_log.calls("model")
    assert {(c["action"], c["name"]) for c in calls} == {
        ("chat_model_action", "_react_chat_model"),
        ("researcher/chat_model_action", "_react_chat_model"),
    }
    assert {c["name"] for c in run.event_log.calls("tool")} == {"lookup"}
    actions = {e.get("action") for e in run.event_log.events()}
    assert {"researcher/react_start_action", "researcher/react_stop_action"} <= actions
    # The sub-agent's input event: caused by the coordinator's tool request.
    requests = {e["eventId"] for e in run.event_log.events("_tool_request_event")}
    child_inputs = [
        e for e in run.event_log.events("_input_event") if e.get("parentEventId") in requests
    ]
    assert len(child_inputs) == len(records)
    assert all(e.get("action") is None for e in child_inputs)
    metrics = run.event_log.metrics()
    # 5 executions per run of each agent (start, chat x2, tool, stop), none more.
    assert metrics["numOfActionsExecuted"] == 2 * 5 * len(records)
    assert metrics["numOfRuns"] == len(records)


def test_the_sub_agent_can_be_an_agent_resource_listed_as_a_tool():
    runner = _runner(sa.team(as_tool=False))
    try:
        result = runner.run_sync("k1", sa.question(1))
        assert result.outputs == ["k1: found <q1>"]
        plan = runner.plan
        assert set(plan.subagents) == {"researcher"}
        provider = plan.resource_providers[ResourceType.AGENT]["researcher"]
        assert provider.serialized["section"] == "researcher"
        assert provider.serialized["metadata"]["description"] == "Finds facts about a question."
    finally:
        runner.close()


def test_agent_tool_metadata_name_description_and_input_schema():
    from pydantic import BaseModel

    class Task(BaseModel):
        topic: str
        depth: int = 1

    default = AgentTool(sa.single("x", sa.count))
    assert default.metadata.args_schema["required"] == ["input"]
    assert default.input_of({"input": "hello"}) == "hello"
    typed = AgentTool(sa.single("x", sa.count), name="research", input_schema=Task)
    assert typed.name == "research"
    assert set(typed.metadata.args_schema["properties"]) == {"topic", "depth"}
    assert typed.input_of({"topic": "cats"}) == {"topic": "cats"}
    named = default.named("helper", "helper")
    assert named.name == "helper" and "'helper'" in named.metadata.description
    with pytest.raises(TypeError, match="agent instance"):
        AgentTool(Agent)
    with pytest.raises(TypeError, match="describe an object"):
        AgentTool(sa.single("x", sa.count), input_schema={"type": "string"})
    with pytest.raises(TypeError, match="runs inside an agent's run"):
        default.call(input="x")


def test_a_model_calls_the_tool_by_its_own_name_and_gets_a_typed_input():
    agent = sa.team(name="research_helper", input_schema={"type": "object", "properties": {}})
    plan = AgentPlan.from_agent(agent)
    tool = plan.resource_providers[ResourceType.TOOL]["researcher"].serialized
    assert tool["metadata"]["name"] == "research_helper"
    assert tool["unwrap_input"] is False


# -- durable calls: replay ---------------------------------------------------------------------
def test_a_replay_answers_the_sub_agents_calls_from_the_log():
    runner = _runner(sa.team())
    try:
        recorded: dict[str, DurableRecord] = {}
        first = runner.run_sync("k1", sa.question(1), on_record=recorded.__setitem__)
        assert first.outputs == ["k1: found <q1>"]
        # Parent: model "1", the sub-agent's calls under "2", parent model "3".
        assert sorted(first.durable_records) == ["1", "2.1", "2.2", "2.3", "3"]
        assert recorded == first.durable_records
        before = (_calls(), list(sa.LOOKUPS))
        again = runner.run_sync("k1", sa.question(1), durable=first.durable_records)
        assert again.outputs == first.outputs
        assert (_calls(), sa.LOOKUPS) == before  # nothing called again
        # A restore that had only the calls up to the sub-agent's tool: the rest is made.
        partial = {k: v for k, v in first.durable_records.items() if k in ("1", "2.1", "2.2")}
        resumed = runner.run_sync("k1", sa.question(1), durable=partial)
        assert resumed.outputs == first.outputs
        assert sorted(resumed.durable_records) == ["2.3", "3"]
        assert _calls() == {"coordinator": 3, "researcher": 3}
        assert sa.LOOKUPS == ["q1"]
    finally:
        runner.close()


def test_call_ids_of_two_calls_of_one_action_do_not_collide():
    runner = _runner(sa.workflow())
    try:
        result = runner.run_sync("k", {"call": ["twice", "counter"], "value": "v"})
        # "twice" outputs its input twice: a list; the counter gets that list.
        assert result.outputs == ["['v', 'v']#1"]
    finally:
        runner.close()


# -- memory ------------------------------------------------------------------------------------
def test_a_sub_agent_has_its_own_short_term_memory_per_key():
    agent = sa.workflow()
    env = AgentsExecutionEnvironment.get_execution_environment()
    inputs = [
        {"key": key, "value": {"call": ["counter"], "value": v}}
        for key, v in [("a", "x"), ("b", "y"), ("a", "z")]
    ]
    out = env.from_list(inputs).apply(agent).to_list()
    env.execute()
    assert out == [{"a": "x#1"}, {"b": "y#1"}, {"a": "z#2"}]
    runner = _runner(sa.workflow())
    try:
        first = runner.run_sync("a", {"call": ["counter"], "value": "x"})
        # In the caller's memory under "@counter.", which the caller does not list.
        assert first.memory_updates == {
            "@counter.calls": 1,
            "@counter.stats": {"__memory_object__": 1},
            "@counter.stats.last": "x",
            "delegated": 1,
        }
        memory = first.applied_to({})
        second = runner.run_sync("a", {"call": ["counter"], "value": "y"}, memory=memory)
        assert second.outputs == ["y#2"]
        assert second.memory_updates == {
            "@counter.calls": 2,
            "@counter.stats.last": "y",
            "delegated": 2,
        }
    finally:
        runner.close()


# -- outputs and failures ----------------------------------------------------------------------
def test_outputs_of_a_sub_agent_and_its_failure():
    runner = _runner(sa.workflow())
    try:
        assert runner.run_sync("k", {"call": ["twice"], "value": 3}).outputs == [[3, 3]]
        with pytest.raises(RuntimeFailure) as caught:
            runner.run_sync("k", {"call": ["failing"], "value": 3})
        error = caught.value
        assert isinstance(error, SubagentError) and error.subagent == "failing"
        assert "sub-agent 'failing' failed" in str(error) and "cannot handle 3" in str(error)
        assert error.action == "delegate" and error.key == "k"
        with pytest.raises(SubagentError, match=r"no sub-agent named 'nope' \(sub-agents: "):
            runner.run_sync("k", {"call": ["nope"], "value": 3})
        counted = runner.metrics.to_dict()["subagent"]["failing"]
        assert (counted["numOfRuns"], counted["numOfRunsFailed"]) == (1, 1)
    finally:
        runner.close()


def test_a_failing_sub_agent_tool_becomes_an_error_the_model_sees():
    agent = sa.team()
    # The sub-agent's model runs out of replies: its run fails, the coordinator's model
    # gets the failure as the tool's result and answers with it.
    sub = agent.resources[ResourceType.TOOL]["researcher"].agent
    sub._added_resources[ResourceType.CHAT_MODEL_CONNECTION]["researcher_model"] = (
        ResourceDescriptor(clazz=ScriptedChatModelConnection, replies=[], name="empty")
    )
    runner = _runner(agent)
    try:
        (answer,) = runner.run_sync("k1", sa.question(1)).outputs
        assert answer.startswith("k1: Error: tool 'researcher' failed: SubagentError: sub-agent")
        assert "ran out of replies" in answer
    finally:
        runner.close()


# -- depth ---------------------------------------------------------------------------------------
def test_nesting_past_max_subagent_depth_is_a_plan_error():
    AgentPlan.from_agent(sa.chain(3))  # the default allows 3
    with pytest.raises(PlanValidationError) as caught:
        AgentPlan.from_agent(sa.chain(3), {"max-subagent-depth": 2})
    (problem,) = caught.value.problems
    assert "'the agent' -> 'inner' -> 'inner' -> 'inner' nests 3 deep" in problem
    assert "max-subagent-depth (2)" in problem
    runner = _runner(sa.chain(3))
    try:
        assert runner.run_sync("k", "v").outputs == ["v#1"]
    finally:
        runner.close()


def test_a_recursive_sub_agent_stops_at_max_subagent_depth():
    runner = _runner(sa.recursive(), **{"max-subagent-depth": 4})
    try:
        assert runner.run_sync("k", 4).outputs == [4]
        with pytest.raises(SubagentDepthError) as caught:
            runner.run_sync("k", 6)
        assert "would nest 5 deep, more than max-subagent-depth (4)" in str(caught.value)
        assert caught.value.retryable is False
    finally:
        runner.close()
    # Not retried under RETRY: it cannot succeed.
    runner = _runner(
        sa.recursive(), **{"max-subagent-depth": 2, "error-handling-strategy": "retry"}
    )
    try:
        with pytest.raises(SubagentDepthError):
            runner.run_sync("k", 5)
        assert runner.counts.retried == 0
    finally:
        runner.close()


def test_an_agent_cannot_be_its_own_sub_agent():
    agent = Agent()
    agent.add_action("call_inner", "_input_event", sa.call_inner)
    agent.add_resource("inner", ResourceType.AGENT, agent)
    with pytest.raises(PlanValidationError, match="sub-agent cycle 'the agent' -> 'inner'"):
        AgentPlan.from_agent(agent)


def test_plan_problems_of_a_sub_agent_are_named():
    bad = Agent()
    bad.add_action("oops", "_input_event", lambda e, c: None)
    parent = Agent()
    parent.add_resource("helper", ResourceType.AGENT, bad)
    parent.add_resource("odd", ResourceType.AGENT, "not an agent")
    parent.add_resource("bad name", ResourceType.AGENT, sa.single("x", sa.count))
    with pytest.raises(PlanValidationError) as caught:
        AgentPlan.from_agent(parent)
    text = "\n".join(caught.value.problems)
    assert "sub-agent 'helper': action 'oops'" in text
    assert "agent resource 'odd' is str" in text
    assert "sub-agent name 'bad name'" in text


# -- metrics -------------------------------------------------------------------------------------
def test_tokens_and_metrics_are_attributed_to_the_sub_agent():
    runner = _runner(sa.team())
    try:
        for i in range(3):
            runner.run_sync(f"k{i}", sa.question(i))
        metrics = runner.metrics.to_dict()
        sub = metrics["subagent"]["researcher"]
        assert sub["numOfRuns"] == 3 and sub["numOfRunsFailed"] == 0
        assert sub["numOfModelCalls"] == 6 and sub["numOfToolCalls"] == 3
        assert sub["numOfActionsExecuted"] == 3 * 5  # start, chat x2, tool, stop
        assert len(sub["runLatencyMs"]) == 3
        model = sub["action"]["chat_model_action"]["model"]["_react_chat_model"]
        assert (model["promptTokens"], model["completionTokens"]) == (6 * 7, 6 * 2)
        tool = sub["action"]["tool_call_action"]["tool"]["lookup"]
        assert tool["numOfToolCalls"] == 3
        # The coordinator's own figures do not include the sub-agent's.
        assert metrics["numOfModelCalls"] == 6 and metrics["numOfRuns"] == 3
        own = metrics["action"]["chat_model_action"]["model"]["_react_chat_model"]
        assert (own["promptTokens"], own["completionTokens"]) == (6 * 11, 6 * 3)
    finally:
        runner.close()


# -- interceptors and hooks -----------------------------------------------------------------------
def _audit_hook(hc: HookContext) -> None:
    sa.INTERCEPTED.append(("hook", hc.tool))


def test_interceptors_and_hooks_apply_inside_the_sub_agent():
    agent = sa.team()
    agent.add_tool_interceptor(sa.coordinator_tool_interceptor)
    sub = agent.resources[ResourceType.TOOL]["researcher"].agent
    sub.add_hook("audit", "before_tool", _audit_hook)
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_tool_interceptor(sa.env_tool_interceptor)
    out = env.from_list([{"key": "k1", "value": sa.question(1)}]).apply(agent).to_list()
    env.execute()
    assert out == [{"k1": "k1: found <q1>"}]
    # The environment's interceptor sees every tool call (the agent tool and the
    # sub-agent's); the coordinator's only its own (the agent tool); the sub-agent's hook
    # its own tool call.
    assert sa.INTERCEPTED == [
        ("env", "researcher"),
        ("coordinator", "researcher"),
        ("hook", "lookup"),
        ("env", "lookup"),
    ]


# -- approval --------------------------------------------------------------------------------------
def test_approval_inside_a_sub_agent_pauses_the_run_and_resumes_it():
    plan = AgentPlan.from_agent(sa.team(approval=True))
    runner = LocalRunner(plan)
    try:
        (paused,) = runner.run([("k1", sa.question(1))])
        (request,) = paused.outputs
        assert isinstance(request, ApprovalRequest)
        assert (request.tool_name, request.arguments) == ("lookup", {"q": "q1"})
        # Paused in the sub-agent: its call ids are under the agent tool's call ("2"); its
        # model call "2.1", the request "2.2", the decision goes to "2.3".
        assert paused.approval_call_id == "2.3"
        assert decision_call_id("2.2") == "2.3"
        assert sa.LOOKUPS == [] and _calls() == {"coordinator": 1, "researcher": 1}
        (done,) = runner.run([("k1", request.approve())])
        assert done.outputs == ["k1: found <q1>"]
        assert sa.LOOKUPS == ["q1"]
        # Resumed by replaying: no model call made twice.
        assert _calls() == {"coordinator": 2, "researcher": 2}
        (rejected_run,) = runner.run([("k2", sa.question(2))])
        (rejected,) = runner.run([("k2", rejected_run.outputs[0].reject("no"))])
        assert rejected.outputs == [
            "k2: found Error: tool 'lookup' was not called: the call was rejected by a human "
            "reviewer: no"
        ]
    finally:
        runner.close()


def test_a_pause_inside_a_sub_agent_holds_the_keys_later_inputs_in_order():
    # The per-key protocol sees the caller's input only: k1's later input waits behind
    # the run paused inside its sub-agent, runs after the decision (and pauses in turn);
    # another key is not held.
    runner = LocalRunner(AgentPlan.from_agent(sa.team(approval=True)))
    try:
        first, other = runner.run(
            [("k1", sa.question(1)), ("k1", sa.question(4)), ("k2", sa.question(2))]
        )
        (request,) = first.outputs
        assert request.arguments == {"q": "q1"} and other.outputs[0].key == "k2"
        assert _calls() == {"coordinator": 2, "researcher": 2}  # q4 has not started
        done, held = runner.run([("k1", request.approve())])
        assert done.outputs == ["k1: found <q1>"]
        (next_request,) = held.outputs
        assert (next_request.key, next_request.arguments) == ("k1", {"q": "q4"})
        (last,) = runner.run([("k1", next_request.approve())])
        assert last.outputs == ["k1: found <q4>"]
        assert sa.LOOKUPS == ["q1", "q4"]
        assert _calls() == {"coordinator": 5, "researcher": 5}  # each once
    finally:
        runner.close()


def test_an_agent_tool_can_require_approval_itself():
    plan = AgentPlan.from_agent(sa.team(requires_approval=True))
    runner = LocalRunner(plan)
    try:
        (paused,) = runner.run([("k1", sa.question(1))])
        (request,) = paused.outputs
        assert request.tool_name == "researcher" and paused.approval_call_id == "3"
        (done,) = runner.run([("k1", request.approve())])
        assert done.outputs == ["k1: found <q1>"]
    finally:
        runner.close()


def test_an_agent_tool_timeout_bounds_the_whole_sub_agent():
    runner = _runner(sa.team(latency=0.3, timeout=0.2))
    try:
        (answer,) = runner.run_sync("k1", sa.question(1)).outputs
        assert "CallTimeoutError" in answer and "sub-agent 'researcher'" in answer
    finally:
        runner.close()


def test_a_plan_without_sub_agents_never_loads_the_runtime_module():
    import subprocess
    import sys

    code = (
        "import sys, asyncio\n"
        "from flink_agents.plan.agent_plan import AgentPlan\n"
        "from flink_agents.runtime.core import AgentRunner\n"
        "from tests.flink.agents import chat_agent\n"
        "r = AgentRunner(AgentPlan.from_agent(chat_agent()))\n"
        "r.run_sync('k', {'a': 1}); r.close()\n"
        "print('flink_agents.runtime.core.subagents' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_sub_agents_run_concurrently_with_their_own_call_ids():
    async def both(event, ctx):
        a, b = await asyncio.gather(ctx.call_agent("counter", "a"), ctx.call_agent("twice", "b"))
        from flink_agents.api.events.event import OutputEvent

        ctx.send_event(OutputEvent(output=[a, b]))

    agent = sa.workflow()
    agent._added_actions.clear()
    agent.add_action("both", "_input_event", both)
    plan = AgentPlan.from_agent(agent, {"allow-pickled-functions": True})
    runner = AgentRunner(plan)
    try:
        assert runner.run_sync("k", None).outputs == [["a#1", ["b", "b"]]]
    finally:
        runner.close()


# -- the plan --------------------------------------------------------------------------------------
def test_sections_round_trip_as_json_and_keep_secrets_out_of_it():
    from flink_agents.runtime.core.subagents import runner_for

    inner = sa.with_secret(sa.single("leaf", sa.count), "store", "sk-inner-0000-secret")
    middle = Agent()
    # A secret in an action's config of a section, too.
    middle.add_action("call_inner", "_input_event", sa.call_inner, token="sk-action-3333-secret")
    middle.add_resource("inner", ResourceType.AGENT, inner)
    sa.with_secret(middle, "store", "sk-middle-1111-secret")
    root = sa.with_secret(sa.workflow(), "store", "sk-root-2222-secret")
    root.add_resource("middle", ResourceType.AGENT, middle)
    plan = AgentPlan.from_agent(root, {"max-retries": 7})
    text = plan.model_dump_json()
    for secret in ("sk-inner", "sk-middle", "sk-root", "sk-action"):
        assert secret not in text
    assert sorted(plan.secrets) == [
        "subagents/middle/action/call_inner/token",
        "subagents/middle/subagents/inner/vector_store/store/api_key",
        "subagents/middle/vector_store/store/api_key",
        "vector_store/store/api_key",
    ]
    data = json.loads(text)
    # Sections carry no config of their own: the root plan's is theirs.
    assert "config" not in data["subagents"]["middle"]
    assert "config" not in data["subagents"]["middle"]["subagents"]["inner"]
    loaded = AgentPlan.model_validate_json(text).with_secrets(plan.secrets)
    assert loaded == plan
    inner_plan = loaded.subagents["middle"].subagents["inner"]
    call_inner = loaded.subagents["middle"].actions["call_inner"]
    assert call_inner.runtime_config == {"token": "sk-action-3333-secret"}
    assert inner_plan.get_config().get_int("max-retries") == 7
    runner = AgentRunner(loaded)
    try:
        assert runner.run_sync("k", {"call": ["middle"], "value": "v"}).outputs == ["v#1"]
        got = {
            path: runner_for(runner, path).resources.get("store", ResourceType.VECTOR_STORE)
            for path in ("middle", "middle/inner")
        }
        assert got["middle"].api_key == "sk-middle-1111-secret"
        assert got["middle/inner"].api_key == "sk-inner-0000-secret"
        # A section finds what it does not declare in the plans around it (shared).
        counter = runner_for(runner, "middle/inner").resources.get("counter", ResourceType.AGENT)
        assert counter is runner.resources.get("counter", ResourceType.AGENT)
    finally:
        runner.close()


def test_a_section_checks_its_names_against_the_plans_around_it():
    child = sa.researcher()
    child._added_resources[ResourceType.CHAT_MODEL]["_react_chat_model"] = ResourceDescriptor(
        clazz="flink_agents.testing.ScriptedChatModelSetup",
        connection="shared_model",
        tools=["lookup", "missing_tool"],
    )
    parent = sa.workflow()
    parent.add_resource("helper", ResourceType.AGENT, child)
    with pytest.raises(PlanValidationError) as caught:
        AgentPlan.from_agent(parent)
    connection, tool = caught.value.problems
    assert connection.startswith("sub-agent 'helper': chat_model resource '_react_chat_model'")
    assert "chat_model_connection 'shared_model'" in connection
    assert "refers to tool 'missing_tool'" in tool
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_resource(
        "shared_model",
        ResourceDescriptor(clazz=ScriptedChatModelConnection, respond=sa.researcher_reply),
    )
    parent.add_resource("missing_tool", sa.lookup)  # the parent's tool: found from the child
    AgentPlan.from_agent(parent, None, env.resources)


def test_a_sub_agents_model_may_call_only_the_tools_its_setup_offered():
    runner = _runner(sa.team())
    try:
        # The sub-agent's model asks for "researcher" (the coordinator's tool, which the
        # sub-agent's resources would find): it was not offered that, so it is refused.
        (answer,) = runner.run_sync("k1", sa.question(1, tool="researcher")).outputs
        assert answer.startswith("k1: found Error: unknown tool 'researcher'")
        assert "the tools you can call are: lookup" in answer
        sub = runner.metrics.to_dict()["subagent"]["researcher"]
        assert sub["numOfUnauthorizedToolCalls"] == 1
        assert sub["numOfRuns"] == 1 and sa.LOOKUPS == []
    finally:
        runner.close()


def test_a_setup_offers_sub_agents_with_subagents_as_upstream():
    agent = sa.team(as_tool=False)
    setup = agent.resources[ResourceType.CHAT_MODEL]["_react_chat_model"]
    setup.arguments.pop("tools")
    setup.arguments["subagents"] = ["researcher"]
    runner = _runner(agent)
    try:
        assert runner.run_sync("k1", sa.question(1)).outputs == ["k1: found <q1>"]
        offered = runner.resources.get("_react_chat_model", ResourceType.CHAT_MODEL)
        assert offered.tools == ["researcher"]
    finally:
        runner.close()
    setup.arguments["subagents"] = ["nobody"]
    with pytest.raises(PlanValidationError, match=r"refers to agent 'nobody' in 'subagents'"):
        AgentPlan.from_agent(agent)
