"""Model and tool interceptors and hooks on the local environment and the core runner."""

from __future__ import annotations

import pytest

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.errors import HookError, InterceptorError, PlanValidationError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner
from flink_agents.testing import ScriptedChatModelConnection
from tests.runtime import behaviour_agents as ba


@pytest.fixture(autouse=True)
def _fresh():
    ba.reset()
    yield
    ba.reset()


def run(agent, inputs, resources, env_interceptors=(), **config):
    env = AgentsExecutionEnvironment.get_execution_environment()
    for name, value in resources.items():
        env.add_resource(name, value)
    for kind, ic in env_interceptors:
        getattr(env, f"add_{kind}_interceptor")(ic)
    for k, v in config.items():
        env.get_config().set_str(k, v)
    records = [{"key": k, "value": v} for k, v in inputs]
    out = env.from_list(records).apply(agent).to_list()
    env.execute()
    return [next(iter(o.values())) for o in out]


def test_redacting_interceptor_changes_request_and_response():
    out = run(
        ba.chat_agent(model_interceptors=[ba.redact_emails]),
        [("k", "mail ann@example.com please")],
        ba.scripted_model(),
    )
    assert out == ["echo:mail <email> please"]
    assert ba.SEEN["redact"] == ["mail <email> please"]


def test_cache_interceptor_answers_without_calling_the_model():
    out = run(
        ba.chat_agent(model_interceptors=[ba.cache_replies]),
        [("a", "same question"), ("b", "same question"), ("a", "other")],
        ba.scripted_model(name="cached"),
    )
    assert out == ["echo:same question", "echo:same question", "echo:other"]
    assert sorted(ba.SEEN["cache"]) == ["hit", "miss", "miss"]
    assert ScriptedChatModelConnection.call_counts["cached"] == 2


def test_tool_interceptor_blocks_a_tool_and_changes_arguments_of_another():
    resources = ba.scripted_model(respond=ba.tool_script, tools=["add", "delete_all"])
    resources.update({"add": ba.add, "delete_all": ba.delete_all})
    agent = ba.chat_agent(tool_interceptors=[ba.block_dangerous_tools])
    out = run(agent, [("k", "delete_all"), ("k", "add")], resources)
    assert out == ["results: refused: delete_all is not allowed", "results: 4"]
    assert "tool:delete_all" not in ba.SEEN  # never called
    assert ba.SEEN["tool:add"] == [(1, 3)]  # b changed by the interceptor


def test_environment_interceptors_run_outside_the_agents_in_declaration_order():
    out = run(
        ba.chat_agent(model_interceptors=[ba.Inner]),
        [("k", "hi")],
        ba.scripted_model(),
        env_interceptors=[("model", ba.outer)],
    )
    assert out == ["echo:hi"]
    assert ba.SEEN["order"] == ["outer", "inner"]


def test_decorated_interceptor_and_hook():
    agent = ba.DecoratedAgent()
    out = run(agent, [("k", "hi")], ba.scripted_model())
    assert out == ["ECHO:HI"]
    plan = AgentPlan.from_agent(agent, resources={})
    assert [i.name for i in plan.interceptors] == ["shout"] and list(plan.hooks) == ["mark"]


def test_failing_interceptor_follows_the_error_strategy_with_its_name():
    agent = ba.chat_agent(model_interceptors=[ba.broken])
    with pytest.raises(InterceptorError, match="model interceptor 'broken' failed: ValueError"):
        run(agent, [("k", "hi")], ba.scripted_model())
    out = run(
        ba.chat_agent(model_interceptors=[ba.broken]),
        [("k", "hi"), ("k", "again")],
        ba.scripted_model(),
        **{"error-handling-strategy": "ignore"},
    )
    assert out == []


def test_model_error_passes_through_interceptors_unchanged():
    resources = {
        "conn": ba.ResourceDescriptor(clazz=ScriptedChatModelConnection, replies=[]),
        "model": ba.ResourceDescriptor(clazz=ba.ScriptedChatModelSetup, connection="conn"),
    }
    with pytest.raises(Exception, match="ran out of replies") as info:
        run(ba.chat_agent(model_interceptors=[ba.Inner]), [("k", "hi")], resources)
    assert not isinstance(info.value, InterceptorError)


def test_replay_from_the_durable_log_runs_no_interceptor_and_no_model_again():
    resources = ba.scripted_model(respond=ba.tool_script, tools=["add"], name="replayed")
    resources["add"] = ba.add
    agent = ba.chat_agent(
        model_interceptors=[ba.redact_emails], tool_interceptors=[ba.block_dangerous_tools]
    )
    plan = AgentPlan.from_agent(agent, resources=_typed(resources))
    first = AgentRunner(plan)
    try:
        result = first.run_sync("k", "add")
    finally:
        first.close()
    assert result.outputs == ["results: 4"]
    seen_before = {k: len(v) for k, v in ba.SEEN.items()}
    calls_before = ScriptedChatModelConnection.call_counts["replayed"]

    second = AgentRunner(plan)  # a restore: the same input with the records of the first run
    try:
        replayed = second.run_sync("k", "add", durable=result.durable_records)
    finally:
        second.close()
    assert replayed.outputs == ["results: 4"]
    assert {k: len(v) for k, v in ba.SEEN.items()} == seen_before
    assert ScriptedChatModelConnection.call_counts["replayed"] == calls_before == 2


def _typed(resources):
    from flink_agents.api.agents.agent import resource_type_of

    typed: dict = {}
    for name, value in resources.items():
        typed.setdefault(resource_type_of(value), {})[name] = value
    return typed


HOOKS = [
    ("h1", "before_agent", ba.before_agent),
    ("h2", "before_model", ba.before_model),
    ("h3", "after_model", ba.after_model),
    ("h4", "after_agent", ba.after_agent),
]


def test_hooks_run_in_order_and_change_input_messages_and_outputs():
    resources = ba.scripted_model(respond=ba.tool_script, tools=["add"])
    resources["add"] = ba.add
    out = run(ba.chat_agent(hooks=HOOKS), [("k", "  add ")], resources)
    # before_model appended "!" to the user message: the script then calls no known tool...
    assert out[0]["trail"] == [
        "before_agent",
        "before_model1",
        "after_model1",
        "before_model2",
        "after_model2",
        "after_agent",
    ]
    assert out[0]["out"].startswith("results: ")


def test_hook_stops_the_loop_with_a_final_answer():
    out = run(
        ba.chat_agent(hooks=HOOKS),
        [("a", "short-circuit"), ("b", "stop-early"), ("c", "halt")],
        ba.scripted_model(name="hooked"),
    )
    assert out == [
        {"out": "answered by before_agent", "trail": ["before_agent", "after_agent"]},
        {
            "out": "answered by before_model",
            "trail": ["before_agent", "before_model1", "after_agent"],
        },
        {
            "out": "halted by after_model",
            "trail": ["before_agent", "before_model1", "after_model1", "after_agent"],
        },
    ]
    assert ScriptedChatModelConnection.call_counts["hooked"] == 1  # only for "halt"


def test_failing_hook_follows_the_error_strategy_with_its_name():
    for point in ("before_agent", "before_model"):
        agent = ba.chat_agent(hooks=[("explosive", point, ba.failing_hook)])
        with pytest.raises(HookError, match=f"{point} hook 'explosive' failed: RuntimeError"):
            run(agent, [("k", "hi")], ba.scripted_model())
    for point in ("before_agent", "after_agent"):
        agent = ba.chat_agent(hooks=[("explosive", point, ba.failing_hook)])
        out = run(
            agent, [("k", "hi")], ba.scripted_model(), **{"error-handling-strategy": "ignore"}
        )
        assert out == ["echo:hi"]  # as without the ignored hook


def test_bad_hook_and_interceptor_declarations_are_plan_errors():
    agent = ba.chat_agent(
        hooks=[("same", "before_model", ba.before_model), ("same", "after_model", ba.after_model)]
    )
    agent.add_hook("nowhere", "before_lunch", ba.before_model)
    agent.add_hook("lambda", "before_model", lambda hc: None)
    agent.add_model_interceptor(ba.before_model)  # one argument, not (request, call_next)
    with pytest.raises(PlanValidationError) as info:
        AgentPlan.from_agent(agent, resources=_typed(ba.scripted_model()))
    text = str(info.value)
    assert "duplicate hook name 'same'" in text
    assert "'before_lunch', which is not one of" in text
    assert "hook 'lambda'" in text and "is a lambda" in text
    assert "must take two arguments (request, call_next)" in text


def test_plan_json_round_trip_keeps_interceptors_and_hooks():
    agent = ba.chat_agent(model_interceptors=[ba.Inner, ba.outer], hooks=HOOKS)
    plan = AgentPlan.from_agent(agent, resources=_typed(ba.scripted_model()))
    again = AgentPlan.model_validate_json(plan.model_dump_json())
    assert [n for n, _ in again.interceptor_chain("model")] == ["Inner", "outer"]
    assert [n for n, _ in again.hooks_at("before_agent")] == ["h1"]
    bare = AgentPlan.from_agent(ba.chat_agent(), resources=_typed(ba.scripted_model()))
    assert "hooks" not in bare.model_dump() and "interceptors" not in bare.model_dump()


def test_interceptors_and_hooks_of_the_job_script_travel_by_value():
    async def script_interceptor(request, call_next):
        return await call_next(request)

    def script_hook(hc):
        hc.memory.set("seen", True)

    for func in (script_interceptor, script_hook):
        func.__module__ = "__main__"  # as if defined in `python job.py`
        func.__qualname__ = func.__name__
    agent = ba.chat_agent(
        model_interceptors=[script_interceptor], hooks=[("h", "before_agent", script_hook)]
    )
    plan = AgentPlan.from_agent(agent, resources=_typed(ba.scripted_model()))
    assert plan.interceptors[0].func.pickled and plan.hooks["h"].func.pickled
    assert plan.main_module_references() == []
    again = AgentPlan.model_validate_json(plan.model_dump_json())
    assert [n for n, _ in again.interceptor_chain("model")] == ["script_interceptor"]
    assert callable(again.hooks_at("before_agent")[0][1])


def test_failing_hook_is_retried_under_retry_with_its_memory_changes_rolled_back():
    agent = ba.chat_agent(hooks=[("flaky", "before_agent", ba.flaky_hook)])
    out = run(
        agent,
        [("k", "hi")],
        ba.scripted_model(),
        **{"error-handling-strategy": "retry", "retry-wait-interval": "0.01"},
    )
    assert out == ["echo:hi (retried, half-done=None)"]
    assert ba.SEEN["flaky"] == ["before_agent", "before_agent"]
