"""The agent ``agent_run`` runs for a catalog agent: a ReAct loop over one input column.

For each input row, the agent asks the catalog agent's model: the system prompt (``USING
PROMPT``), the earlier exchanges of the same ``PARTITION BY`` key (short-term memory, kept in
Flink keyed state, at most ``memory-turns``), then the row's column (``COL =>``) as the user
message. The built-in chat action runs the tool loop (the model's tool calls go to the
agent's tools, which may be other catalog agents: sub-agents, called with the model's
question and answering it) until the model answers; the output is the row's values followed
by the answer, which becomes the ``agent_output`` column. Without ``PARTITION BY`` rows run keyless
and nothing is remembered between them.

Only JSON-like values may live in memory, so the input row travels from the first action to
the last as pickled bytes (base64) in sensory memory, which lasts one run.
"""

from __future__ import annotations

import base64
import pickle
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext

#: Resource names inside the agent.
MODEL = "sql_model"
MODEL_CONNECTION = "sql_model_connection"
_ROW = "_sql.row"
_QUESTION = "_sql.question"
_HISTORY = "_sql.history"


def _values(row: Any) -> list[Any]:
    """The values of an input row (a pyflink ``Row``, tuple or list)."""
    return list(row)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def sql_start_action(event: InputEvent, ctx: RunnerContext) -> None:
    """Ask the model about the row's column (after the prompt and the key's history); a
    sub-agent (no column) about its input."""
    column = ctx.get_action_config_value("column")
    values = [event.input] if column is None else _values(event.input)
    question = _text(values[0 if column is None else int(column)])
    messages = [ChatMessage(role=MessageRole.SYSTEM, content=ctx.get_action_config_value("prompt"))]
    if int(ctx.get_action_config_value("memory_turns")) > 0:
        for turn in ctx.short_term_memory.get(_HISTORY) or []:
            messages.append(ChatMessage(role=MessageRole.USER, content=turn[0]))
            messages.append(ChatMessage(role=MessageRole.ASSISTANT, content=turn[1]))
    messages.append(ChatMessage(role=MessageRole.USER, content=question))
    ctx.sensory_memory.set(_ROW, base64.b64encode(pickle.dumps(values)).decode("ascii"))
    ctx.sensory_memory.set(_QUESTION, question)
    ctx.send_event(ChatRequestEvent(model=MODEL, messages=messages))


def sql_stop_action(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    """Emit the row with the answer appended; remember the exchange for the key."""
    answer = event.response.content
    values = pickle.loads(base64.b64decode(ctx.sensory_memory.get(_ROW)))
    turns = int(ctx.get_action_config_value("memory_turns"))
    if turns > 0:
        history = list(ctx.short_term_memory.get(_HISTORY) or [])
        history.append([ctx.sensory_memory.get(_QUESTION), answer])
        ctx.short_term_memory.set(_HISTORY, history[-turns:])
    if ctx.get_action_config_value("column") is None:  # a sub-agent: the answer alone
        ctx.send_event(OutputEvent(output=answer))
        return
    ctx.send_event(OutputEvent(output=(*values, answer)))


class SqlAgent(Agent):
    """The agent of one ``agent_run`` call.

    Args:
        model_connection: descriptor of the chat model connection.
        model_setup: descriptor of the chat model setup (its ``tools`` are offered).
        prompt: the system prompt.
        column: index of the input column the model answers; None for an agent another
            agent calls as a tool (``USING TOOLS other_agent``): its input is the question,
            its output the answer.
        memory_turns: earlier exchanges of the key sent with each input (0: none; keyless
            input has no history anyway).
        tools: tool resources by name (``Tool`` instances, ``AgentTool`` for sub-agents)
            the setup's tool names refer to.
        mcp_servers: MCP server resources by name.
    """

    def __init__(
        self,
        *,
        model_connection: ResourceDescriptor,
        model_setup: ResourceDescriptor,
        prompt: str,
        column: int | None,
        memory_turns: int,
        tools: dict[str, Any] | None = None,
        mcp_servers: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.add_resource(MODEL_CONNECTION, ResourceType.CHAT_MODEL_CONNECTION, model_connection)
        self.add_resource(MODEL, ResourceType.CHAT_MODEL, model_setup)
        for name, tool in (tools or {}).items():
            self.add_resource(name, ResourceType.TOOL, tool)
        for name, server in (mcp_servers or {}).items():
            self.add_resource(name, ResourceType.MCP_SERVER, server)
        config = {"prompt": prompt, "column": column, "memory_turns": memory_turns}
        self.add_action("sql_start_action", [InputEvent], sql_start_action, **config)
        self.add_action("sql_stop_action", [ChatResponseEvent], sql_stop_action, **config)
