"""Agents for plan tests."""

from __future__ import annotations

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import (
    action,
    chat_model_connection,
    chat_model_setup,
    prompt,
    tool,
)
from flink_agents.api.events.chat_event import ChatResponseEvent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceName
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup


class GoldenAgent(Agent):
    @prompt
    @staticmethod
    def greeting() -> Prompt:
        return Prompt.from_messages([ChatMessage(role=MessageRole.SYSTEM, content="Greet {name}.")])

    @tool
    @staticmethod
    def lookup(city: str, limit: int = 3) -> list[str]:
        """Find places in a city.

        Args:
            city: the city name.
            limit: how many places at most.
        """
        return [city] * limit

    @chat_model_connection
    @staticmethod
    def conn() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ScriptedChatModelConnection, replies=["hi"], api_key="sk-very-secret-123"
        )

    @chat_model_setup
    @staticmethod
    def model() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="conn", prompt="greeting", tools=["lookup"]
        )

    @action(InputEvent)
    @staticmethod
    def start(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=event.input))

    @action(ChatResponseEvent, "_output_event")
    @staticmethod
    async def finish(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        pass


class BrokenAgent(Agent):
    """Has one of each problem the compiler must report."""

    @action("no_such_event")  # legal: a unified event type no class declares
    @staticmethod
    def classless_event(event, ctx):
        pass

    @action(str)
    @staticmethod
    def not_an_event(event, ctx):
        pass

    @action(InputEvent)
    @staticmethod
    def one_arg(event):
        pass

    @chat_model_setup
    @staticmethod
    def model() -> ResourceDescriptor:
        return ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="missing_conn", tools=["missing_tool"]
        )

    @chat_model_setup
    @staticmethod
    def no_model() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=ResourceName.ChatModel.OLLAMA_SETUP, connection="x")


def make_closure_agent() -> Agent:
    def inner(event, ctx):
        pass

    agent = Agent()
    agent.add_action("closure", [InputEvent], inner)
    agent.add_action("lam", [InputEvent], lambda e, c: None)
    agent.add_action("dup", [InputEvent], GoldenAgent.start)
    agent.add_action("dup", [InputEvent], GoldenAgent.start)
    return agent


class KeyedConnection(ScriptedChatModelConnection):
    """A connection that takes an API key (for the secret tests)."""

    api_key: str | None = None
    headers: dict[str, str] = {}

    def chat(self, messages, tools=None, **kwargs):
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"key ends {self.api_key[-3:]}")
