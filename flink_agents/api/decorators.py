"""Decorators that declare actions and resources on an :class:`Agent` class.

They only record metadata on the function; :meth:`AgentPlan.from_agent
<flink_agents.plan.agent_plan.AgentPlan.from_agent>` checks everything when the agent is
compiled. ``@staticmethod`` may be stacked above or below them, or left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from flink_agents.api.events.event import Event
from flink_agents.api.resource import ResourceType

_F = TypeVar("_F")

ACTION_ATTR = "_flink_agents_action"
RESOURCE_ATTR = "_flink_agents_resource"
INTERCEPTOR_ATTR = "_flink_agents_interceptor"
HOOK_ATTR = "_flink_agents_hook"


@dataclass(frozen=True)
class ActionMarker:
    """What ``@action`` recorded: listened event types and the action's config."""

    events: tuple[type[Event] | str, ...]
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResourceMarker:
    """What a resource decorator recorded: the resource type (and a tool's options)."""

    resource_type: ResourceType
    options: dict[str, Any] = field(default_factory=dict)


def _mark(obj: Any, attr: str, marker: Any) -> Any:
    target = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
    setattr(target, attr, marker)
    return obj


def action(*events: type[Event] | str, **config: Any) -> Callable[[_F], _F]:
    """Mark a function ``(event, ctx)`` as an action listening to ``events``.

    Args:
        *events: event classes (``InputEvent``) or type strings (``"_input_event"``).
        **config: values the action reads with ``ctx.get_action_config_value``.
    """

    def decorate(func: _F) -> _F:
        return _mark(func, ACTION_ATTR, ActionMarker(events=tuple(events), config=dict(config)))

    if len(events) == 1 and callable(events[0]) and not isinstance(events[0], type):
        raise TypeError("@action needs the event types to listen to: use @action(InputEvent)")
    return decorate


def tool(
    func: _F | None = None,
    *,
    requires_approval: bool = False,
    timeout: float | None = None,
    side_effects: bool = False,
) -> Any:
    """Mark a function as a tool: the method name is the tool name, its signature and
    docstring give the argument schema and description.

    Used bare (``@tool``) or with options (``@tool(requires_approval=True, timeout=5)``,
    ``@tool(side_effects=True)``).

    Args:
        func: the function (when used bare).
        requires_approval: pause the run for a human decision before each call (see
            :mod:`flink_agents.api.approval`).
        timeout: seconds a call may take (overrides the ``tool.timeout`` option).
        side_effects: the tool changes the world (see ``Tool.side_effects``).
    """
    options: dict[str, Any] = {}
    if requires_approval:
        options["requires_approval"] = True
    if side_effects:
        options["side_effects"] = True
    if timeout is not None:
        options["timeout"] = timeout

    def decorate(f: _F) -> _F:
        return _mark(f, RESOURCE_ATTR, ResourceMarker(ResourceType.TOOL, options))

    return decorate if func is None else decorate(func)


def prompt(func: _F) -> _F:
    """Mark a function returning a :class:`Prompt`; the method name is the resource name."""
    return _mark(func, RESOURCE_ATTR, ResourceMarker(ResourceType.PROMPT))


def chat_model_connection(func: _F) -> _F:
    """Mark a function returning the ``ResourceDescriptor`` of a chat model connection."""
    return _mark(func, RESOURCE_ATTR, ResourceMarker(ResourceType.CHAT_MODEL_CONNECTION))


def chat_model_setup(func: _F) -> _F:
    """Mark a function returning the ``ResourceDescriptor`` of a chat model setup."""
    return _mark(func, RESOURCE_ATTR, ResourceMarker(ResourceType.CHAT_MODEL))


def embedding_model_connection(func: _F) -> _F:
    """Mark a function returning the ``ResourceDescriptor`` of an embedding connection."""
    return _mark(func, RESOURCE_ATTR, ResourceMarker(ResourceType.EMBEDDING_MODEL_CONNECTION))


def embedding_model_setup(func: _F) -> _F:
    """Mark a function returning the ``ResourceDescriptor`` of an embedding model setup."""
    return _mark(func, RESOURCE_ATTR, ResourceMarker(ResourceType.EMBEDDING_MODEL))


def vector_store(func: _F) -> _F:
    """Mark a function returning the ``ResourceDescriptor`` of a vector store."""
    return _mark(func, RESOURCE_ATTR, ResourceMarker(ResourceType.VECTOR_STORE))


def mcp_server(func: _F) -> _F:
    """Mark a function returning the ``ResourceDescriptor`` of an MCP server."""
    return _mark(func, RESOURCE_ATTR, ResourceMarker(ResourceType.MCP_SERVER))


def skills(func: _F) -> _F:
    """Mark a method returning a :class:`~flink_agents.api.skills.Skills` (where the agent's
    skills come from); several are merged."""
    return _mark(func, RESOURCE_ATTR, ResourceMarker(ResourceType.SKILLS))


def model_interceptor(func: _F) -> _F:
    """Mark a static method ``(request, call_next) -> reply`` as a model interceptor of the
    agent (see :mod:`flink_agents.api.interceptors`); the method name is its name."""
    return _mark(func, INTERCEPTOR_ATTR, "model")


def tool_interceptor(func: _F) -> _F:
    """Mark a static method ``(request, call_next) -> result`` as a tool interceptor of the
    agent (see :mod:`flink_agents.api.interceptors`); the method name is its name."""
    return _mark(func, INTERCEPTOR_ATTR, "tool")


def hook(point: str) -> Callable[[_F], _F]:
    """Mark a static method ``(hc: HookContext) -> None`` as a hook running at ``point``
    (``"before_agent"``, ``"after_agent"``, ``"before_model"``, ``"after_model"``,
    ``"before_tool"``; see
    :mod:`flink_agents.api.hooks`); the method name is the hook's name."""
    if callable(point):
        raise TypeError('@hook needs the point to run at: use @hook("before_model")')

    def decorate(func: _F) -> _F:
        return _mark(func, HOOK_ATTR, str(getattr(point, "value", point)))

    return decorate
