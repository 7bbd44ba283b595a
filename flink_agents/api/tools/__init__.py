"""Tools a chat model can call; :class:`InjectedArg` and :class:`ToolParameterSource` for
parameters the runtime fills in (as upstream exports them here)."""

from flink_agents.api.tools.tool_parameter_injection import InjectedArg, ToolParameterSource

__all__ = ["InjectedArg", "ToolParameterSource"]
