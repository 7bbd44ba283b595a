"""Agents with skills for the tests: a port of upstream's quickstart ``MathAgent`` (skills
from a package, ``echo`` and ``bc`` allowed) and a scripted model that uses the skills the
way a real model is told to: load the skill, run its command, answer with the output."""

from __future__ import annotations

import json
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import (
    action,
    chat_model_connection,
    chat_model_setup,
    prompt,
    skills,
)
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.skills import Skills
from flink_agents.testing.scripted_chat_model import (
    ScriptedChatModelConnection,
    ScriptedChatModelSetup,
    reply_text,
    tool_call,
)

#: What the scripted model runs for each question (the skill's instructions' command).
COMMANDS = {
    "What is (2 + 3) * 4?": 'echo "(2 + 3) * 4" | bc',
    "What is 2 to the 10th?": 'echo "2 ^ 10" | bc',
    "What is 10 / 3?": 'echo "scale=2; 10 / 3" | bc',
}


def _call(tool: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    """An assistant reply calling ``tool`` (``tool_call`` takes ``name`` itself)."""
    reply = tool_call(tool, call_id=call_id)
    reply["tool_calls"][0]["function"]["arguments"] = arguments
    return reply


def _tool_results(messages: list[ChatMessage]) -> list[str]:
    return [str(m.content) for m in messages if m.role == MessageRole.TOOL]


def math_model(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """Loads the math-calculator skill, runs its bc command, answers with the output.

    It checks what a real model relies on: the discovery message lists the skill, and the
    tools offered are load_skill and bash.
    """
    system = "\n".join(str(m.content) for m in messages if m.role == MessageRole.SYSTEM)
    names = sorted(t.name for t in tools or [])
    if "<name>math-calculator</name>" not in system or names != ["bash", "load_skill"]:
        return reply_text(f"NO SKILLS OFFERED (tools {names}; system {system[:300]!r})")
    question = next(str(m.content) for m in messages if m.role == MessageRole.USER)
    results = _tool_results(messages)
    if not results:
        return _call("load_skill", "c1", name="math-calculator")
    if len(results) == 1:
        if "echo" not in results[0] or "| bc" not in results[0]:
            return reply_text(f"SKILL NOT LOADED: {results[0][:200]}")
        return _call("bash", "c2", command=COMMANDS[question])
    return reply_text(results[-1].strip())


def joke_model(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """Loads the joke-generator skill, runs its script in the skill's base directory."""
    results = _tool_results(messages)
    if not results:
        return _call("load_skill", "j1", name="joke-generator")
    if len(results) == 1:
        base = results[0].split("Base directory for this skill: ", 1)[1].splitlines()[0]
        return _call("bash", "j2", command="python3 scripts/gen_joke.py", cwd=base)
    return reply_text(results[-1])


def echo_tool_calls(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """Runs the bash command given as the user message; answers with the tool result."""
    results = _tool_results(messages)
    if not results:
        spec = json.loads(str(messages[-1].content))
        return _call(spec.pop("tool", "bash"), "e1", **spec)
    return reply_text(results[-1])


class MathAgent(Agent):
    """Upstream's quickstart ``MathAgent``, with a scripted model instead of Ollama."""

    @skills
    @staticmethod
    def my_skills() -> Skills:
        return Skills.from_package(("tests.skills", "resources/skills"))

    @prompt
    @staticmethod
    def system_prompt() -> Prompt:
        return Prompt.from_messages(
            messages=[
                ChatMessage(
                    role=MessageRole.SYSTEM,
                    content="You are a helpful math assistant. Use the math-calculator skill "
                    "when asked to evaluate an expression. You must load the skill first and "
                    "strictly follow its instructions. Reply with only the final numeric "
                    "result.",
                )
            ],
        )

    @chat_model_connection
    @staticmethod
    def scripted() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond="tests.skills.agents:math_model"
        )

    @chat_model_setup
    @staticmethod
    def math_model() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ScriptedChatModelSetup,
            connection="scripted",
            prompt="system_prompt",
            skills=["math-calculator"],
            allowed_commands=["echo", "bc"],
        )

    @action(EventType.InputEvent)
    @staticmethod
    def process_input(event: Event, ctx: RunnerContext) -> None:
        question: str = InputEvent.from_event(event).input
        ctx.send_event(
            ChatRequestEvent(
                model="math_model",
                messages=[ChatMessage(role=MessageRole.USER, content=question)],
            )
        )

    @action(EventType.ChatResponseEvent)
    @staticmethod
    def process_chat_response(event: Event, ctx: RunnerContext) -> None:
        chat_response = ChatResponseEvent.from_event(event)
        ctx.send_event(OutputEvent(output=chat_response.response.content))
