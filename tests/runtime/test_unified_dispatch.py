"""Unified events through the run loop, prompt_args through the built-in chat action, free
config keys in ctx.config."""

from __future__ import annotations

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup
from tests.runtime import agents, unified_agents
from tests.runtime.test_chat_and_react import run


def test_unified_events_route_by_type_string_and_become_their_classes():
    out = run(unified_agents.UnifiedAgent(), [{"key": "k", "value": 5}], {}, **{"my.flag": "on"})
    assert out == [{"value": 5, "hops": 2}, {"count": 7, "config": "on"}]


def test_prompt_args_fill_the_setup_prompt_on_every_call_of_the_tool_loop():
    resources = {
        "conn": ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond="tests.runtime.unified_agents:echo_prompt"
        ),
        "model": ResourceDescriptor(
            clazz=ScriptedChatModelSetup,
            connection="conn",
            tools=["add"],
            prompt=Prompt.from_messages(
                [
                    ChatMessage(role=MessageRole.SYSTEM, content="Answer in {lang}."),
                    ChatMessage(role=MessageRole.USER, content='Review: {review} {"json": 1}'),
                ]
            ),
        ),
        "add": FunctionTool.from_callable(agents.add),
    }
    out = run(
        unified_agents.PromptArgsAgent(),
        [{"key": "k", "value": {"review": "great", "lang": "en"}}],
        resources,
    )
    # The second model call (after the tool result) still has the filled prompt first.
    seen = out[0]
    assert seen[:2] == [["system", "Answer in en."], ["user", 'Review: great {"json": 1}']]
    assert [role for role, _ in seen[2:]] == ["assistant", "tool"] and seen[3][1] == "3"
