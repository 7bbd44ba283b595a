"""Tools a chat model can call."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from flink_agents.api.resource import ResourceType, SerializableResource

if TYPE_CHECKING:
    from flink_agents.api.tools.function_tool import FunctionTool


class ToolType(str, Enum):
    """Where a tool runs."""

    MODEL_BUILT_IN = "model_built_in"
    FUNCTION = "function"
    REMOTE_FUNCTION = "remote_function"
    MCP = "mcp"


class ToolMetadata(BaseModel):
    """What a model is told about a tool.

    Attributes:
        name: the name the model calls it by.
        description: what it does.
        args_schema: JSON schema (an object) of its arguments.
    """

    name: str
    description: str = ""
    args_schema: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def to_openai_tool(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool (also used by Ollama)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.args_schema,
            },
        }


class Tool(SerializableResource, ABC):
    """Base class of tools.

    Attributes:
        metadata: name, description and argument schema.
        timeout: seconds a call may take (overrides the ``tool.timeout`` option); None:
            the option's value.
        requires_approval: the built-in tool action does not call it before a human
            approved the call (see :mod:`flink_agents.api.approval`).
        side_effects: the tool changes the world (sends, writes, pays, deletes) rather than
            only reading. A marker for the agent's own rules: ``before_tool`` hooks see it
            (``HookContext.side_effects``), e.g. to ask a human before such calls; nothing
            else changes. MCP tools are marked unless the server declares them read-only.
    """

    metadata: ToolMetadata
    timeout: float | None = Field(default=None, gt=0)
    requires_approval: bool = False
    side_effects: bool = False

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.TOOL

    @classmethod
    def tool_type(cls) -> ToolType:
        """Where the tool runs."""
        return ToolType.FUNCTION

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.metadata.name

    @abstractmethod
    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Run the tool with keyword arguments from the model."""

    async def acall(self, **kwargs: Any) -> Any:
        """Run the tool without blocking the event loop (a thread by default)."""
        return await asyncio.to_thread(self.call, **kwargs)

    @staticmethod
    def from_callable(
        func: Callable[..., Any], *, injected_args: dict[str, Any] | None = None
    ) -> FunctionTool:
        """A tool from a function; its schema comes from the signature and docstring
        (without the ``injected_args`` parameters, which the runtime fills in)."""
        from flink_agents.api.tools.function_tool import FunctionTool

        return FunctionTool.from_callable(func, injected_args=injected_args)
