"""AgentPlan compilation, JSON round-trip (golden file) and validation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import InputEvent
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.errors import PlanValidationError, ResourceError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.resources import ResourceCache
from tests.plan import plan_agents

GOLDEN = Path(__file__).parent / "golden" / "golden_agent_plan.json"


def test_plan_matches_golden_file_and_round_trips():
    plan = AgentPlan.from_agent(plan_agents.GoldenAgent(), {"max-retries": 5, "custom": "x"})
    text = json.dumps(json.loads(plan.model_dump_json()), indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "plan format changed: rerun with UPDATE_GOLDEN=1 and review"
    again = AgentPlan.model_validate_json(plan.model_dump_json())
    assert again.model_dump() == plan.model_dump()
    assert again.model_dump_json() == plan.model_dump_json()


def test_plan_of_the_old_builtin_actions_module_still_loads():
    """Plans compiled before plan/actions/ name flink_agents.plan.builtin_actions."""
    from flink_agents.plan.actions import BUILTIN_ACTIONS

    plan = AgentPlan.from_agent(plan_agents.GoldenAgent())
    data = json.loads(plan.model_dump_json())
    for name in BUILTIN_ACTIONS:
        assert data["actions"][name]["func"]["module"] == f"flink_agents.plan.actions.{name}"
        data["actions"][name]["func"]["module"] = "flink_agents.plan.builtin_actions"
    old = AgentPlan.model_validate(data)
    for name, (_, function) in BUILTIN_ACTIONS.items():
        assert old.actions[name].function is function
    assert old.model_dump_json() == plan.model_dump_json()


def test_secrets_stay_out_of_the_plan_json_but_reach_the_resource():
    agent = Agent()
    agent.add_resource(
        "keyed",
        ResourceDescriptor(clazz=plan_agents.KeyedConnection, api_key="sk-very-secret-123"),
    )
    plan = AgentPlan.from_agent(agent)
    text = plan.model_dump_json()
    assert "sk-very-secret-123" not in text
    assert "__flink_agents_secret__" in text
    # The resource still receives the key, also from a plan read back from JSON.
    restored = AgentPlan.model_validate_json(text).with_secrets(plan.secrets)
    conn = ResourceCache(restored).get("keyed", ResourceType.CHAT_MODEL_CONNECTION)
    assert conn.chat([]).content == "key ends 123"


def test_nested_secrets_are_redacted_and_restored():
    agent = Agent()
    agent.add_resource(
        "keyed",
        ResourceDescriptor(
            clazz=plan_agents.KeyedConnection,
            api_key="sk-1",
            headers={"Authorization": "Bearer sk-nested-456", "X-Trace": "visible"},
        ),
    )
    plan = AgentPlan.from_agent(agent)
    text = plan.model_dump_json()
    assert "sk-nested-456" not in text and "visible" in text
    conn = ResourceCache(plan).get("keyed", ResourceType.CHAT_MODEL_CONNECTION)
    assert conn.headers == {"Authorization": "Bearer sk-nested-456", "X-Trace": "visible"}
    assert "sk-nested-456" not in repr(plan) and "sk-nested-456" not in str(plan.model_dump())


def test_secrets_are_masked_in_resource_errors():
    plan = AgentPlan.from_agent(plan_agents.GoldenAgent())  # scripted conn has no api_key
    assert "sk-very-secret-123" not in plan.model_dump_json()
    with pytest.raises(ResourceError) as info:
        ResourceCache(plan).get("conn", ResourceType.CHAT_MODEL_CONNECTION)
    assert "api_key" in str(info.value) and "Extra inputs are not permitted" in str(info.value)
    assert "sk-very-secret-123" not in str(info.value)


def test_plan_lists_builtin_actions_like_user_actions():
    plan = AgentPlan.from_agent(plan_agents.GoldenAgent())
    assert plan.actions["chat_model_action"].builtin
    assert plan.actions_by_event["_chat_request_event"] == ["chat_model_action"]
    assert plan.actions_by_event["_tool_request_event"] == ["tool_call_action"]
    assert plan.actions_by_event["_output_event"] == ["finish"]
    assert plan.actions["finish"].is_async


def test_validation_collects_every_problem_with_hints():
    with pytest.raises(PlanValidationError) as info:
        AgentPlan.from_agent(plan_agents.BrokenAgent())
    problems = info.value.problems
    text = "\n".join(problems)
    assert len(problems) == 5, text
    assert "no_such_event" not in text  # a unified event type: legal
    assert "neither an Event subclass nor a non-empty event type string" in text
    assert "OllamaChatModelSetup needs 'model'; add model=... to its ResourceDescriptor" in text
    assert "must take exactly two arguments (event, ctx)" in text
    assert "chat_model_connection 'missing_conn'" in text
    assert "tool 'missing_tool'" in text


def test_lambdas_closures_and_duplicates_are_reported():
    with pytest.raises(PlanValidationError) as info:
        AgentPlan.from_agent(plan_agents.make_closure_agent())
    text = str(info.value)
    assert "duplicate action name 'dup'" in text
    assert "is a lambda" in text and "closure" in text
    assert "ALLOW_PICKLED_FUNCTIONS" in text


def test_cloudpickle_fallback_when_enabled():
    agent = Agent()
    factor = 3
    agent.add_action(
        "lam",
        [InputEvent],
        lambda e, ctx: ctx.send_event(
            __import__("flink_agents.api.events.event", fromlist=["x"]).OutputEvent(
                output=e.input * factor
            )
        ),
    )
    plan = AgentPlan.from_agent(agent, {"allow-pickled-functions": True})
    restored = AgentPlan.model_validate_json(plan.model_dump_json())
    from flink_agents.runtime.core import AgentRunner

    assert AgentRunner(restored).run_sync("k", 2).outputs == [6]


def test_reserved_and_missing_resource_types():
    agent = Agent()
    agent.add_action("chat_model_action", [InputEvent], plan_agents.GoldenAgent.start)
    agent.add_resource("p", ResourceType.PROMPT, plan_agents.GoldenAgent.start)
    with pytest.raises(PlanValidationError) as info:
        AgentPlan.from_agent(agent)
    text = str(info.value)
    assert "reserved for a built-in action" in text
    assert "only tools can be given as functions" in text


def test_types_no_class_declares_compile_and_a_near_typo_is_a_warning(caplog):
    agent = Agent()
    agent.add_action("step2", ["step2"], plan_agents.GoldenAgent.start)
    agent.add_action("typo", ["_input_evnt"], plan_agents.GoldenAgent.start)
    with caplog.at_level("INFO", logger="flink_agents.plan.agent_plan"):
        plan = AgentPlan.from_agent(agent)
    assert plan.actions_by_event["step2"] == ["step2"]
    assert plan.actions_by_event["_input_evnt"] == ["typo"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert "'_input_evnt'" in warnings[0] and "close to '_input_event'" in warnings[0]
    infos = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
    assert any("'_input_evnt', 'step2'" in m for m in infos)


def test_chat_model_setup_without_model_fails_at_compile_and_at_creation():
    from flink_agents.api.resource import ResourceName
    from flink_agents.integrations.chat_models.ollama_chat_model import OllamaChatModelSetup

    agent = Agent()
    agent.add_resource(
        "m", ResourceType.CHAT_MODEL, ResourceDescriptor(clazz=OllamaChatModelSetup, connection="c")
    )
    agent.add_resource(
        "c",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(clazz=ResourceName.ChatModel.OLLAMA_CONNECTION),
    )
    with pytest.raises(PlanValidationError, match="needs 'model'"):
        AgentPlan.from_agent(agent)
    with pytest.raises(ValueError, match="model"):
        OllamaChatModelSetup(connection="c")
    with pytest.raises(ValueError, match="needs a model name"):
        OllamaChatModelSetup(connection="c", model="  ")
    # Setups whose connection decides the model, and ones with a default, need none.
    from flink_agents.integrations.chat_models.openai.openai_chat_model import (
        OpenAIChatModelSetup,
    )
    from flink_agents.testing import ScriptedChatModelSetup

    assert OpenAIChatModelSetup(connection="c").model == "gpt-4o-mini"
    assert ScriptedChatModelSetup(connection="c").model is None


def test_plan_configuration_is_parsed_once_and_read_only():
    from flink_agents.api.core_options import AgentConfigOptions
    from flink_agents.errors import ConfigurationError

    plan = AgentPlan.from_agent(plan_agents.GoldenAgent(), {"max-retries": 5, "custom": "x"})
    config = plan.get_config()
    assert plan.get_config() is config  # hosts and resources share the one parse
    assert config.get(AgentConfigOptions.MAX_RETRIES) == 5 and config.get("custom") == "x"
    with pytest.raises(ConfigurationError, match="read-only; set options on the environment"):
        config.set(AgentConfigOptions.MAX_RETRIES, 1)
    with pytest.raises(ConfigurationError, match="read-only"):
        config.set_str("custom", "y")
    copy = config.copy()  # a copy is the caller's own
    copy.set_str("custom", "y")
    assert copy.get("custom") == "y" and config.get("custom") == "x"
