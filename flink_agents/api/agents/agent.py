"""The agent base class."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flink_agents.api._function import unwrap
from flink_agents.api.decorators import (
    ACTION_ATTR,
    HOOK_ATTR,
    INTERCEPTOR_ATTR,
    RESOURCE_ATTR,
    ActionMarker,
    ResourceMarker,
)
from flink_agents.api.events.event import Event
from flink_agents.api.resource import (
    ResourceDescriptor,
    ResourceType,
    SerializableResource,
)


@dataclass(frozen=True)
class ActionDefinition:
    """An action as declared on an agent (not yet validated).

    Attributes:
        name: unique action name.
        events: event classes or type strings it listens to.
        func: the function ``(event, ctx)``.
        config: values for ``ctx.get_action_config_value``.
    """

    name: str
    events: tuple[type[Event] | str, ...]
    func: Callable[..., Any]
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class InterceptorDefinition:
    """A model or tool interceptor as declared (see :mod:`flink_agents.api.interceptors`).

    Attributes:
        kind: ``"model"`` or ``"tool"``.
        name: its name (in errors).
        func: the function ``(request, call_next)`` or an interceptor class.
    """

    kind: str
    name: str
    func: Callable[..., Any]


@dataclass(frozen=True)
class HookDefinition:
    """A hook as declared (see :mod:`flink_agents.api.hooks`).

    Attributes:
        name: unique hook name.
        point: where it runs (a :class:`~flink_agents.api.hooks.HookPoint` value).
        func: the function ``(hc)``.
    """

    name: str
    point: str
    func: Callable[..., Any]


def interceptor_name(func: Any) -> str:
    """The default name of an interceptor: its qualified name."""
    func = unwrap(func)
    return str(getattr(func, "__qualname__", None) or repr(func))


def resource_type_of(instance: Any) -> ResourceType:
    """The resource type of a descriptor, serializable resource or tool function."""
    if isinstance(instance, ResourceDescriptor):
        return instance.clazz.resource_type()
    if isinstance(instance, SerializableResource):
        return instance.resource_type()
    if isinstance(instance, Agent):
        return ResourceType.AGENT  # a sub-agent
    if callable(instance):
        return ResourceType.TOOL
    raise TypeError(
        f"{instance!r} is not a resource: use a ResourceDescriptor, a Prompt, a Tool, an "
        "Agent (a sub-agent) or a function (which becomes a tool)"
    )


class Agent:
    """Base class of agents: actions that react to events, plus the resources they use.

    Declare actions with ``@action(...)`` and resources with ``@tool``, ``@prompt``,
    ``@chat_model_setup``... on methods, or add them with :meth:`add_action` and
    :meth:`add_resource`. An agent is compiled into a plan by the execution environment.
    """

    _added_actions: dict[str, ActionDefinition]
    _added_resources: dict[ResourceType, dict[str, Any]]
    _declaration_problems: list[str]
    _added_interceptors: list[InterceptorDefinition]
    _added_hooks: dict[str, HookDefinition]

    #: The agent's name and description (plan metadata; tools and UIs show them).
    name: str | None = None
    description: str | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> Agent:
        # Set up here rather than in __init__ so subclasses that define __init__ without
        # calling super().__init__() still work.
        self = super().__new__(cls)
        self._added_actions = {}
        self._added_resources = {}
        self._declaration_problems = []
        self._added_interceptors = []
        self._added_hooks = {}
        return self

    # -- actions -----------------------------------------------------------------------
    def add_action(
        self,
        name: str,
        events: Sequence[type[Event] | str] | type[Event] | str,
        func: Callable[..., Any],
        **config: Any,
    ) -> Agent:
        """Add an action.

        Args:
            name: unique action name.
            events: event classes or type strings it listens to.
            func: the function ``(event, ctx)``; module-level or static method.
            **config: values the action reads with ``ctx.get_action_config_value``.
        """
        if isinstance(events, (str, type)):
            events = [events]
        if name in self._added_actions or name in self._decorated_actions():
            self._declaration_problems.append(
                f"duplicate action name {name!r}: give each action its own name"
            )
        self._added_actions[name] = ActionDefinition(name, tuple(events), unwrap(func), config)
        return self

    def _decorated_actions(self) -> dict[str, ActionDefinition]:
        found: dict[str, ActionDefinition] = {}
        for name, raw in _members(type(self)):
            marker: ActionMarker | None = getattr(unwrap(raw), ACTION_ATTR, None)
            if marker is not None:
                found[name] = ActionDefinition(name, marker.events, unwrap(raw), marker.config)
        return found

    @property
    def actions(self) -> dict[str, ActionDefinition]:
        """All actions: decorated methods first, then added ones."""
        return {**self._decorated_actions(), **self._added_actions}

    # -- interceptors and hooks ---------------------------------------------------------
    def add_model_interceptor(self, interceptor: Any, name: str | None = None) -> Agent:
        """Add a model interceptor after those declared so far (see
        :mod:`flink_agents.api.interceptors`).

        Args:
            interceptor: a module-level function or static method ``(request, call_next)``,
                or a :class:`~flink_agents.api.interceptors.ModelInterceptor` subclass.
            name: its name in errors (default: its qualified name).
        """
        return self._add_interceptor("model", interceptor, name)

    def add_tool_interceptor(self, interceptor: Any, name: str | None = None) -> Agent:
        """Add a tool interceptor after those declared so far (see
        :mod:`flink_agents.api.interceptors`)."""
        return self._add_interceptor("tool", interceptor, name)

    def _add_interceptor(self, kind: str, interceptor: Any, name: str | None) -> Agent:
        func = unwrap(interceptor)
        self._added_interceptors.append(
            InterceptorDefinition(kind, name or interceptor_name(func), func)
        )
        return self

    @property
    def interceptors(self) -> list[InterceptorDefinition]:
        """Model and tool interceptors: decorated methods first, then added ones."""
        found = [
            InterceptorDefinition(kind, name, unwrap(raw))
            for name, raw in _members(type(self))
            if (kind := getattr(unwrap(raw), INTERCEPTOR_ATTR, None)) is not None
        ]
        return found + list(self._added_interceptors)

    def add_hook(self, name: str, point: Any, func: Callable[..., Any]) -> Agent:
        """Add a hook (see :mod:`flink_agents.api.hooks`).

        Args:
            name: unique hook name.
            point: ``"before_agent"``, ``"after_agent"``, ``"before_model"``,
                ``"after_model"`` or ``"before_tool"`` (or a ``HookPoint``).
            func: a module-level function or static method ``(hc: HookContext) -> None``.
        """
        if name in self._added_hooks or name in self._decorated_hooks():
            self._declaration_problems.append(
                f"duplicate hook name {name!r}: give each hook its own name"
            )
        point = str(getattr(point, "value", point))
        self._added_hooks[name] = HookDefinition(name, point, unwrap(func))
        return self

    def _decorated_hooks(self) -> dict[str, HookDefinition]:
        return {
            name: HookDefinition(name, point, unwrap(raw))
            for name, raw in _members(type(self))
            if (point := getattr(unwrap(raw), HOOK_ATTR, None)) is not None
        }

    @property
    def hooks(self) -> dict[str, HookDefinition]:
        """All hooks by name: decorated methods first, then added ones."""
        return {**self._decorated_hooks(), **self._added_hooks}

    # -- resources ---------------------------------------------------------------------
    def add_resource(
        self, name: str, resource_type_or_instance: Any, instance: Any = None
    ) -> Agent:
        """Add a resource: ``add_resource(name, instance)`` or
        ``add_resource(name, resource_type, instance)``.

        The instance is a :class:`ResourceDescriptor`, a serializable resource (a
        :class:`Prompt`, a :class:`Tool`), a plain function (becomes a tool) or another
        agent (a sub-agent, type ``AGENT``; see :mod:`flink_agents.api.tools.agent_tool`).
        """
        if instance is None:
            instance = resource_type_or_instance
            rtype = resource_type_of(instance)
        else:
            rtype = ResourceType(resource_type_or_instance)
        by_name = self._added_resources.setdefault(rtype, {})
        if name in by_name:
            self._declaration_problems.append(
                f"duplicate {rtype.value} resource name {name!r}: give each its own name"
            )
        by_name[name] = instance
        return self

    @property
    def resources(self) -> dict[ResourceType, dict[str, Any]]:
        """All resources by type and name (decorated ones are built by calling their method)."""
        result: dict[ResourceType, dict[str, Any]] = {}
        for name, raw in _members(type(self)):
            func = unwrap(raw)
            marker: ResourceMarker | None = getattr(func, RESOURCE_ATTR, None)
            if marker is None:
                continue
            if marker.resource_type is ResourceType.TOOL:
                value: Any = func
            else:
                params = inspect.signature(func).parameters
                value = func(self) if params else func()
            result.setdefault(marker.resource_type, {})[name] = value
        for rtype, by_name in self._added_resources.items():
            for name, value in by_name.items():
                if name in result.get(rtype, {}):
                    self._declaration_problems.append(
                        f"duplicate {rtype.value} resource name {name!r}: declared by a "
                        "decorator and by add_resource"
                    )
                result.setdefault(rtype, {})[name] = value
        return result

    @property
    def declaration_problems(self) -> list[str]:
        """Problems found while declaring (duplicates), reported when the plan is compiled."""
        return list(dict.fromkeys(self._declaration_problems))


def _members(cls: type) -> list[tuple[str, Any]]:
    """Class attributes in definition order, base classes first, without triggering
    descriptors (so static methods stay recognizable)."""
    seen: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        for name, value in vars(klass).items():
            if not name.startswith("__"):
                seen[name] = value
    return list(seen.items())
