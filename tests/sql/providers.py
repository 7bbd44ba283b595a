"""An agent provider of our own for the tests (``'provider' = 'tests.sql.providers:Shout'``):
no model, the answer is the column in upper case plus the ``suffix`` option."""

from __future__ import annotations

from collections.abc import Mapping

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext
from flink_agents.errors import ConfigurationError
from flink_agents.sql.providers import AgentProvider, AgentProviderContext


def shout(event: InputEvent, ctx: RunnerContext) -> None:
    row = list(event.input)
    answer = str(row[ctx.get_action_config_value("column")]).upper()
    ctx.send_event(OutputEvent(output=[*row, answer + ctx.get_action_config_value("suffix")]))


class Shout(AgentProvider):
    def check_options(self, options: Mapping[str, str]) -> None:
        unknown = set(options) - {"suffix"}
        if unknown:
            raise ConfigurationError(f"unknown option(s) {sorted(unknown)} for Shout: use suffix")

    def create_agent(self, context: AgentProviderContext) -> Agent:
        agent = Agent()
        suffix = context.options.get("suffix", "!")
        agent.add_action("shout", [InputEvent], shout, column=context.column, suffix=suffix)
        return agent
