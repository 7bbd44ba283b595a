"""Sub-agents declared in YAML: an agent's ``subagents:`` names other agents of the file
(or of files loaded before), which its chat model setups offer (``subagents:`` or
``tools:``) and its actions call with ``ctx.call_agent``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceType
from flink_agents.api.tools.agent_tool import AgentTool
from flink_agents.errors import PlanValidationError, YamlError
from flink_agents.plan.agent_plan import AgentPlan

F = "tests.runtime.subagent_agents"
SCRIPTED = "flink_agents.testing.scripted_chat_model"

FILE = f"""
agents:
  - name: coordinator
    actions:
      - {{name: ask, function: "{F}:ask", listen_to: [input]}}
      - {{name: answer, function: "{F}:answer", listen_to: [chat_response]}}
    subagents:
      - name: researcher
        agent: research_agent
        requires_approval: false
    chat_model_connections:
      - {{name: conn, clazz: {SCRIPTED}.ScriptedChatModelConnection,
          respond: "{F}:coordinator_reply"}}
    chat_model_setups:
      - {{name: model, clazz: {SCRIPTED}.ScriptedChatModelSetup, connection: conn,
          subagents: [researcher]}}   # as Apache Flink Agents; `tools: [...]` works too
  - name: research_agent
    description: Counts what it is asked, per key.
    actions:
      - {{name: count, function: "{F}:count", listen_to: [input]}}
  - name: workflow
    actions:
      - {{name: delegate, function: "{F}:delegate", listen_to: [input]}}
    subagents:
      - {{name: counter, agent: research_agent, description: Counts things.}}
      - name: typed
        agent: research_agent
        input_schema: {{type: object, properties: {{topic: {{type: string}}}}}}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _run(env: Any, agent: str, values: list[tuple[str, Any]]) -> list[Any]:
    out = env.from_list([{"key": k, "value": v} for k, v in values]).apply(agent).to_list()
    env.execute()
    return [next(iter(o.values())) for o in out]


def test_subagents_declared_in_yaml_run_as_tools_and_from_actions(tmp_path):
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(_write(tmp_path, FILE))
    question = {"id": "k1", "q": "q1"}
    (answer,) = _run(env, "coordinator", [("k1", question)])
    task = json.dumps({"id": "k1", "q": "q1", "log": None, "tool": None})
    assert answer == f"k1: {task}#1"
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(_write(tmp_path, FILE))
    outputs = _run(
        env,
        "workflow",
        [("a", {"call": ["counter"], "value": "x"}), ("a", {"call": ["counter"], "value": "y"})],
    )
    assert outputs == ["x#1", "y#2"]


def test_yaml_subagent_tools_carry_their_declaration(tmp_path):
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(_write(tmp_path, FILE))
    workflow = env._agents["workflow"]
    counter = workflow.resources[ResourceType.AGENT]["counter"]
    assert isinstance(counter, AgentTool) and counter.agent is env._agents["research_agent"]
    assert counter.metadata.description == "Counts things."
    typed = workflow.resources[ResourceType.AGENT]["typed"]
    assert typed.metadata.args_schema["properties"] == {"topic": {"type": "string"}}
    assert not typed.unwrap_input
    plan = AgentPlan.from_agent(env._agents["coordinator"])
    researcher = plan.resource_providers[ResourceType.AGENT]["researcher"].serialized
    assert researcher["metadata"]["description"] == "Counts what it is asked, per key."
    assert set(plan.subagents) == {"researcher"}


@pytest.mark.parametrize(
    ("subagents", "line", "message"),
    [
        ("[{name: helper, agent: nobody}]", 3, "no agent named 'nobody'"),
        ("[{name: researcher_agent}]", 3, "did you mean 'research_agent'?"),
        ("[{name: me, agent: boss}]", 3, "agent 'boss' cannot be its own sub-agent"),
        ("[{name: a, agent: research_agent}, {name: a, agent: research_agent}]", 3, "twice"),
        ("[{name: a, agent: research_agent, input_schema: {type: string}}]", 3, "an object"),
        ("[{name: a, agent: research_agent, timeout: 0}]", 3, "greater than 0"),
        ("[{name: a, agent: research_agent, extra: 1}]", 3, "unknown key 'extra'"),
    ],
)
def test_subagent_mistakes_name_their_line(tmp_path, subagents, line, message):
    text = f"""
    agents:
      - name: boss
        subagents: {subagents}
        actions: [{{name: d, function: "{F}:delegate", listen_to: [input]}}]
      - name: research_agent
        actions: [{{name: count, function: "{F}:count", listen_to: [input]}}]
    """
    env = AgentsExecutionEnvironment.get_execution_environment()
    with pytest.raises(YamlError) as caught:
        env.load_yaml(_write(tmp_path, text))
    problem = caught.value.problems[0]
    assert problem.line == line and message in problem.message, caught.value


def test_a_subagent_cycle_across_agents_is_a_plan_error(tmp_path):
    text = f"""
    agents:
      - name: one
        subagents: [{{name: two, agent: two}}]
        actions: [{{name: d, function: "{F}:delegate", listen_to: [input]}}]
      - name: two
        subagents: [{{name: one, agent: one}}]
        actions: [{{name: d, function: "{F}:delegate", listen_to: [input]}}]
    """
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(_write(tmp_path, text))
    with pytest.raises(PlanValidationError, match="sub-agent cycle 'the agent' -> 'two' -> 'one'"):
        env.from_list([{"key": "k", "value": 1}]).apply("one")


def test_a_setup_naming_an_unknown_subagent_is_reported_when_applied(tmp_path):
    text = FILE.replace("subagents: [researcher]", "subagents: [researchr]")
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(_write(tmp_path, text))
    with pytest.raises(YamlError, match="refers to sub-agent 'researchr'.*did you mean"):
        env.from_list([{"key": "k", "value": 1}]).apply("coordinator")
