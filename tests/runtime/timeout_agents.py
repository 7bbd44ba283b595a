"""Agents of the timeout tests (importable: plans reference them by module path)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection
from flink_agents.api.decorators import action, tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import ErrorEvent, InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing import ScriptedChatModelSetup


class HangingToolAgent(Agent):
    """The model (scripted: ``tests.runtime.agents:echo_tool_results``) calls the tool the
    input names; ``hang`` blocks its thread far past its timeout."""

    @tool(timeout=0.5)
    @staticmethod
    def hang(seconds: float) -> str:
        """Block the calling thread.

        Args:
            seconds: how long.
        """
        time.sleep(seconds)
        return "woke up"

    @tool
    @staticmethod
    def slow(seconds: float) -> str:
        """Block the calling thread (bounded by the tool.timeout option only).

        Args:
            seconds: how long.
        """
        time.sleep(seconds)
        return "done"

    @tool
    @staticmethod
    def multiply(a: int, b: int) -> int:
        """Multiply two numbers.

        Args:
            a: first factor.
            b: second factor.
        """
        return a * b

    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(
                model="model",
                messages=[ChatMessage(role=MessageRole.USER, content=json.dumps(event.input))],
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.response.content))


class SlowActionAgent(Agent):
    """An async action that sleeps ``input`` seconds; ``quick`` has its own timeout."""

    @action(InputEvent)
    @staticmethod
    async def nap(event: InputEvent, ctx: RunnerContext) -> None:
        await asyncio.sleep(event.input)
        ctx.send_event(OutputEvent(output=f"slept {event.input}"))


class OwnTimeoutActionAgent(Agent):
    """An async action with its own ``timeout`` config (overrides action.timeout)."""

    @action(InputEvent, timeout=0.3)
    @staticmethod
    async def nap(event: InputEvent, ctx: RunnerContext) -> None:
        await asyncio.sleep(event.input)
        ctx.send_event(OutputEvent(output=f"slept {event.input}"))


class SleepyChatModelConnection(BaseChatModelConnection):
    """Answers like ``echo_tool_results``, except that a user message containing "sleep"
    makes its (async) call wait an hour; a cancelled call appends a line to ``log_file``."""

    log_file: str

    def chat(self, messages: Sequence[ChatMessage], tools: Any = None, **kwargs: Any) -> Any:
        raise AssertionError("the built-in chat action calls achat")

    async def achat(
        self, messages: Sequence[ChatMessage], tools: Any = None, **kwargs: Any
    ) -> ChatMessage:
        from flink_agents.testing.scripted_chat_model import _as_message
        from tests.runtime.agents import echo_tool_results

        if "sleep" in (messages[-1].content or ""):
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                with open(self.log_file, "a", encoding="utf-8") as fh:
                    fh.write("cancelled\n")
                raise
        return _as_message(echo_tool_results(list(messages), tools or []))


def report_error(event: ErrorEvent, ctx: RunnerContext) -> None:
    """Error events (IGNORE strategy) become outputs."""
    ctx.send_event(OutputEvent(output=f"{event.error_type}: {event.error}"))


def flink_timeout_agent(log_file: str) -> Agent:
    """HangingToolAgent with the sleepy model, IGNORE strategy and error outputs."""
    agent = HangingToolAgent()
    agent.add_action("report_error", ErrorEvent, report_error)
    agent.add_resource(
        "conn",
        ResourceDescriptor(clazz=SleepyChatModelConnection, log_file=log_file),
    )
    agent.add_resource(
        "model",
        ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="conn", tools=["hang", "multiply"]
        ),
    )
    return agent
