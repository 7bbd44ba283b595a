"""Skills in agents on the local environment: upstream's quickstart MathAgent (skills from a
package, ``echo`` and ``bc`` allowed), a skill script run in the skill's directory, ReAct
with skills from the environment, the discovery message, and the plan's checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.skills import BASH_TOOL, LOAD_SKILL_TOOL, SKILLS_CONFIG, Skills
from flink_agents.errors import PlanValidationError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.testing.scripted_chat_model import (
    ScriptedChatModelConnection,
    ScriptedChatModelSetup,
)
from tests.skills.agents import COMMANDS, MathAgent

RESOURCES = Path(__file__).parent / "resources" / "skills"


def run_local(agent: Agent, inputs: list[Any], env: Any = None) -> list[Any]:
    env = env or AgentsExecutionEnvironment.get_execution_environment()
    out = env.from_list([{"key": i, "value": v} for i, v in enumerate(inputs)]).apply(agent)
    results = out.to_list()
    env.execute()
    return [next(iter(r.values())) for r in sorted(results, key=lambda r: next(iter(r)))]


def test_upstreams_math_agent_runs_with_skills() -> None:
    assert run_local(MathAgent(), list(COMMANDS)) == ["20", "1024", "3.33"]


def test_plan_holds_the_merged_sources_and_the_built_in_tools() -> None:
    class TwoSources(MathAgent):
        @staticmethod
        def more() -> Skills:
            return Skills.from_package(("tests.skills", "resources/skills"))

    agent = TwoSources()
    agent.add_resource("more", ResourceType.SKILLS, TwoSources.more())
    agent.add_resource("local", ResourceType.SKILLS, Skills.from_local_dir(str(RESOURCES)))
    plan = AgentPlan.from_agent(agent)
    config = plan.resource_providers[ResourceType.SKILLS][SKILLS_CONFIG]
    assert config.clazz == "flink_agents.runtime.skill.skill_manager.SkillManager"
    assert config.arguments == {
        "sources": [
            {
                "scheme": "package",
                "params": {"package": "tests.skills", "resource": "resources/skills"},
            },
            {"scheme": "local", "params": {"path": str(RESOURCES)}},
        ]
    }
    tools = plan.resource_providers[ResourceType.TOOL]
    assert tools[LOAD_SKILL_TOOL].clazz.endswith("skill_tools.LoadSkillTool")
    assert tools[BASH_TOOL].clazz == "flink_agents.plan.tools.bash.bash_tool.BashTool"
    again = AgentPlan.model_validate_json(plan.model_dump_json())
    assert again.model_dump() == plan.model_dump()


def test_a_skill_script_runs_in_the_skills_directory() -> None:
    agent = Agent()
    agent.add_resource("skills", ResourceType.SKILLS, Skills.from_local_dir(str(RESOURCES)))
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond="tests.skills.agents:joke_model"
        ),
    )
    agent.add_resource(
        "model",
        ResourceDescriptor(
            clazz=ScriptedChatModelSetup,
            connection="conn",
            skills=["joke-generator"],
            allowed_commands=["python3"],
        ),
    )
    react = ReActAgent(chat_model="model")
    for rtype, by_name in agent.resources.items():
        for name, value in by_name.items():
            react.add_resource(name, rtype, value)
    assert run_local(react, ["tell me a cat joke"]) == [
        "Why did the cat sit on the computer? To keep an eye on the mouse."
    ]


def _echo_agent(**setup: Any) -> ReActAgent:
    """A ReAct agent whose model calls the tool the input names (JSON) and answers with the
    result; skills come from the environment (upstream's way for ReAct)."""
    return ReActAgent(
        chat_model=ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="echo_conn", **setup)
    )


def _env_with_skills() -> Any:
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.add_resource("my_skills", ResourceType.SKILLS, Skills.from_local_dir(str(RESOURCES)))
    env.add_resource(
        "echo_conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond="tests.skills.agents:echo_tool_calls"
        ),
    )
    return env


def test_react_agent_with_skills_from_the_environment() -> None:
    agent = _echo_agent(skills=["math-calculator"], allowed_commands=["echo", "bc"])
    outputs = run_local(
        agent,
        [
            json.dumps({"command": 'echo "6 * 7" | bc'}),
            json.dumps({"tool": "load_skill", "name": "math-calculator"}),
            json.dumps({"tool": "load_skill", "name": "joke-generator"}),  # not this setup's
            json.dumps({"command": "echo /etc/passwd"}),
        ],
        _env_with_skills(),
    )
    assert outputs[0] == "42"
    assert outputs[1].startswith('<skill_content name="math-calculator">')
    assert outputs[2] == "Skill 'joke-generator' not found. Available skills: math-calculator"
    assert outputs[3].startswith("Command rejected: '/etc/passwd' leads outside")


def test_no_bash_tool_without_allowed_commands() -> None:
    agent = _echo_agent(skills=["math-calculator"])
    outputs = run_local(agent, [json.dumps({"command": "echo hi"})], _env_with_skills())
    # the model was not offered bash; calling it anyway is an unknown tool (not run)
    assert outputs == ["Error: unknown tool 'bash'; the tools you can call are: load_skill"]


def test_discovery_message_follows_the_first_system_message() -> None:
    from flink_agents.runtime.skill.skill_manager import SkillManager

    skills = SkillManager(sources=Skills.from_local_dir(str(RESOURCES)).sources)

    def lookup(name: str, rtype: ResourceType) -> Any:
        assert (name, rtype) == (SKILLS_CONFIG, ResourceType.SKILLS)
        return skills

    setup = ScriptedChatModelSetup(connection="c", skills=["math-calculator"], get_resource=lookup)
    messages = [
        ChatMessage(role=MessageRole.SYSTEM, content="be brief"),
        ChatMessage(role=MessageRole.USER, content="2+2?"),
    ]
    prepared = setup.prepare_messages(messages)
    assert [m.role for m in prepared] == ["system", "system", "user"]
    assert prepared[1].content.startswith("## Available Skills")
    assert "<name>math-calculator</name>" in prepared[1].content
    assert "joke-generator" not in prepared[1].content
    no_system = setup.prepare_messages(messages[1:])
    assert [m.role for m in no_system] == ["system", "user"]
    plain = ScriptedChatModelSetup(connection="c", get_resource=lookup)
    assert plain.prepare_messages(messages) == messages
    assert plain.resource_context.generate_available_skills_prompt("joke-generator").startswith(
        "## Available Skills"
    )
    assert plain.resource_context.get_skill_dirs("joke-generator") == [
        str(RESOURCES / "joke-generator")
    ]
    skills.close()


def test_plan_checks_skills_declarations() -> None:
    agent = Agent()
    agent.add_resource("c", ResourceDescriptor(clazz=ScriptedChatModelConnection, replies=["x"]))
    agent.add_resource(
        "m1", ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="c", skills=["a"])
    )
    agent.add_resource(
        "m2",
        ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="c", allowed_commands=["ls"]),
    )
    with pytest.raises(PlanValidationError) as info:
        AgentPlan.from_agent(agent)
    problems = "\n".join(info.value.problems)
    assert "'m1' uses skills ['a'] but the agent declares none" in problems
    assert "'m2': allowed_commands is for the bash tool of skills" in problems

    clash = MathAgent()
    clash.add_resource("bash", ResourceType.TOOL, lambda command: command)
    with pytest.raises(PlanValidationError, match="tool name 'bash' is the built-in tool"):
        AgentPlan.from_agent(clash)


def test_an_unknown_skill_name_fails_the_model_call_with_the_list() -> None:
    agent = _echo_agent(skills=["no-such-skill"], allowed_commands=["echo"])
    env = _env_with_skills()
    with pytest.raises(Exception, match=r"unknown skill 'no-such-skill' \(skills: "):
        run_local(agent, [json.dumps({"command": "echo hi"})], env)


def test_closing_a_setup_removes_its_bash_workspace() -> None:
    from flink_agents.plan.tools.bash.bash_tool import BashTool
    from flink_agents.runtime.skill.skill_manager import SkillManager
    from flink_agents.runtime.skill.skill_tools import LoadSkillTool

    skills = SkillManager(sources=Skills.from_local_dir(str(RESOURCES)).sources)
    shared = {
        (SKILLS_CONFIG, ResourceType.SKILLS): skills,
        (BASH_TOOL, ResourceType.TOOL): BashTool(),
    }
    shared[(LOAD_SKILL_TOOL, ResourceType.TOOL)] = LoadSkillTool(
        get_resource=lambda n, t: shared[(n, t)]
    )
    setup = ScriptedChatModelSetup(
        connection="c",
        skills=["math-calculator"],
        allowed_commands=["echo"],
        get_resource=lambda n, t: shared[(n, t)],
    )
    load, bash = setup.get_tools()
    assert (load.name, bash.name) == ("load_skill", "bash")
    assert setup.get_tools()[1] is bash  # bound once per setup
    assert bash.call(command="echo bound") == "bound"
    assert bash.roots()[1:] == [RESOURCES / "math-calculator"]
    workspace = bash.workspace()
    assert workspace.is_dir()
    setup.close()
    assert not workspace.exists()
    assert (
        shared[(BASH_TOOL, ResourceType.TOOL)]
        .call(command="echo x")
        .startswith("Command rejected: no commands are allowed")
    )
    skills.close()
