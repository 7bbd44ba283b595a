"""Agents as tools: an agent another agent calls like a tool (a sub-agent).

``AgentTool(agent, name=, description=, input_schema=)`` wraps an agent so that a model can
call it like any tool (list it in a chat model setup's ``tools``) and an action can call it
with ``await ctx.call_agent(name, input)``. Registering the agent itself as an ``AGENT``
resource (``add_resource("reviewer", ResourceType.AGENT, ReviewAgent())``, Apache Flink
Agents' way) makes the same tool with defaults.

The sub-agent runs inside the caller's run: the same key, its own short-term memory (a
namespace of the key's memory), its own events and actions (a section of the caller's
plan), its model and tool calls durable like the caller's. Its outputs are the tool's
result: one output is the value itself, several a list, none ``None``. See
``docs/user-guide/subagents.md``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, PrivateAttr

from flink_agents.api.resource import ResourceType
from flink_agents.api.tools.tool import Tool, ToolMetadata, ToolType

__all__ = ["INPUT_ARGUMENT", "AgentTool"]

#: The one argument of an agent tool without an ``input_schema``: the sub-agent's input.
INPUT_ARGUMENT = "input"


def _default_schema() -> dict[str, Any]:
    """The argument schema of an agent tool without ``input_schema``: one text ``input``."""
    return {
        "type": "object",
        "properties": {
            INPUT_ARGUMENT: {
                "type": "string",
                "description": "The task or question for the sub-agent, with everything it "
                "needs to know (it does not see this conversation).",
            }
        },
        "required": [INPUT_ARGUMENT],
    }


def _schema_of(input_schema: Any) -> dict[str, Any]:
    """The JSON schema (an object) of ``input_schema``: a pydantic model class or a JSON
    schema dict.

    Raises:
        TypeError: it is neither, or the schema is not of an object.
    """
    if isinstance(input_schema, type) and issubclass(input_schema, BaseModel):
        schema = dict(input_schema.model_json_schema())
        schema.pop("title", None)
    elif isinstance(input_schema, dict):
        schema = dict(input_schema)
    else:
        raise TypeError(
            "input_schema must be a pydantic model class or a JSON schema dict, got "
            f"{input_schema!r}"
        )
    if schema.get("type", "object") != "object":
        raise TypeError(
            "input_schema must describe an object (the tool's arguments), got type "
            f"{schema.get('type')!r}"
        )
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


class AgentTool(Tool):
    """An agent called like a tool: by a model (a tool of its chat model setup) or by an
    action (``await ctx.call_agent(name, input)``).

    Args:
        agent: the sub-agent (an :class:`~flink_agents.api.agents.agent.Agent` instance,
            e.g. a ``ReActAgent``).
        name: the name the model calls it by (default: the resource name it is added
            under).
        description: what it does, for the model (default: the agent's ``description``,
            else a generic one).
        input_schema: its arguments, a pydantic model class or a JSON schema dict; the
            sub-agent's input is then the arguments as a dict. Without it the tool takes
            one text argument ``input``, which is the sub-agent's input.
        timeout: seconds the whole sub-agent call may take (None: no bound of its own;
            its model and tool calls keep theirs).
        requires_approval: a human approves each call first (see
            :mod:`flink_agents.api.approval`).

    Attributes:
        section: where the sub-agent's plan is in the caller's plan (set when the plan is
            compiled): its path of sub-agent names, ``"reviewer"`` or ``"a/b"``.
        unwrap_input: the sub-agent's input is the ``input`` argument, not the arguments.
    """

    section: str | None = None
    unwrap_input: bool = True

    _agent: Any = PrivateAttr(default=None)
    #: Whether the description was given (else it names the tool once the name is known).
    _described: bool = PrivateAttr(default=True)

    def __init__(
        self,
        agent: Any = None,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Any = None,
        timeout: float | None = None,
        requires_approval: bool = False,
        **data: Any,
    ) -> None:
        if "metadata" in data:  # validated from the plan's form (pydantic calls __init__)
            super().__init__(timeout=timeout, requires_approval=requires_approval, **data)
            self._agent = agent
            return
        from flink_agents.api.agents.agent import Agent

        if isinstance(agent, type) and issubclass(agent, Agent):
            raise TypeError(
                f"AgentTool takes an agent instance, got the class {agent.__name__}: "
                f"write AgentTool({agent.__name__}(...))"
            )
        if not isinstance(agent, Agent):
            raise TypeError(f"AgentTool takes an Agent instance, got {type(agent).__name__}")
        own_name = name or ""  # else the resource name, when the plan is compiled
        own_description = description or (
            agent.description if isinstance(agent.description, str) else None
        )
        schema = _default_schema() if input_schema is None else _schema_of(input_schema)
        super().__init__(
            metadata=ToolMetadata(
                name=own_name,
                description=own_description or _generic_description(own_name),
                args_schema=schema,
            ),
            timeout=timeout,
            requires_approval=requires_approval,
            **{"unwrap_input": input_schema is None, **data},
        )
        self._agent = agent
        self._described = bool(own_description)

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.TOOL

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.FUNCTION

    @property
    def agent(self) -> Any:
        """The sub-agent (None in a tool made from a compiled plan: its plan section runs)."""
        return self._agent

    def named(self, name: str, section: str) -> AgentTool:
        """A copy for the plan: called ``name`` unless it has a name of its own, its agent
        compiled into ``section``."""
        metadata = self.metadata
        if not metadata.name:
            description = metadata.description
            if not self._described:
                description = _generic_description(name)
            metadata = metadata.model_copy(update={"name": name, "description": description})
        copy = self.model_copy(update={"metadata": metadata, "section": section})
        copy._agent = self._agent
        return copy

    def input_of(self, arguments: dict[str, Any]) -> Any:
        """The sub-agent's input for a model's tool-call ``arguments``."""
        if self.unwrap_input and set(arguments) == {INPUT_ARGUMENT}:
            return arguments[INPUT_ARGUMENT]
        return arguments

    def call(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"agent tool {self.name!r} runs inside an agent's run: a model calls it through "
            "the built-in tool action, an action with `await ctx.call_agent(name, input)`"
        )

    async def acall(self, **kwargs: Any) -> Any:
        return self.call(**kwargs)


def _generic_description(name: str) -> str:
    who = f"the sub-agent {name!r}" if name else "a sub-agent"
    return (
        f"Delegate a task to {who}: it works on it on its own (with its own tools) and "
        "returns its answer."
    )
