"""The AgentPlan: an agent compiled into plain data that travels as JSON.

The plan holds actions (function references + the event types they listen to + config),
``actions_by_event`` and resource providers (class path + arguments, or the serialized
instance). :meth:`AgentPlan.from_agent` validates the agent and raises one
:class:`~flink_agents.errors.PlanValidationError` that lists every problem with a hint.

Secrets (what the secret rule of ``flink_agents/secrets.py`` finds in resource arguments,
the agent configuration and action configuration: ``api_key``, ``X-Api-Key`` headers,
``SecretStr`` values, URL credentials...) never appear in the JSON: they are replaced by a
marker and kept in a private side table that the hosts carry next to the plan
(``plan/redaction.py``).
"""

from __future__ import annotations

import builtins
import difflib
import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from flink_agents.api._function import (
    FunctionRef,
    function_ref,
    is_async,
    load_by_value,
    pickle_by_value,
    pickle_error,
    unwrap,
)
from flink_agents.api.agents.agent import (
    Agent,
    HookDefinition,
    InterceptorDefinition,
    resource_type_of,
)
from flink_agents.api.core_options import AgentConfigOptions, AgentConfiguration
from flink_agents.api.events.event import Event, event_class_for, registered_event_types
from flink_agents.api.events.event_type import event_type_constants
from flink_agents.api.resource import (
    RESOURCE_REFERENCES,
    Resource,
    ResourceDescriptor,
    ResourceType,
    SerializableResource,
)
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.trigger_conditions import classify, compile_condition
from flink_agents.errors import PlanValidationError, TriggerConditionError
from flink_agents.plan.redaction import (
    SECRET_MARKER,
    has_secret_str,
    is_marker,
    redact,
    restore_secrets,
)
from flink_agents.secrets import Masker, register_secrets, secret_str_value

if TYPE_CHECKING:
    from flink_agents.plan.subagents import SectionScope

log = logging.getLogger(__name__)

MODEL_MARKER = "__pydantic_model__"
FUNCTION_MARKER = "__function__"


__all__ = ["SECRET_MARKER", "restore_secrets"]  # the redaction's names, kept importable here


#: The module of the built-in actions in plans compiled before ``flink_agents.plan.actions``.
_LEGACY_BUILTIN_MODULE = "flink_agents.plan.builtin_actions"


class ActionPlan(BaseModel):
    """One action of the plan.

    Attributes:
        name: unique name.
        func: where its function is.
        listen_event_types: type strings of the events it reacts to.
        config: its config values.
        is_async: whether the function is ``async def``.
        builtin: whether it is one of ours (chat, tool call, context retrieval).
    """

    name: str
    func: FunctionRef
    listen_event_types: list[str]
    #: Trigger-condition expressions (upstream's CEL subset), ORed with the listened types
    #: and with each other; checked when the plan is compiled.
    trigger_conditions: list[str] = Field(
        default_factory=list, exclude_if=lambda conditions: not conditions
    )
    config: dict[str, Any] = Field(default_factory=dict)
    is_async: bool = False
    builtin: bool = False

    _callable: Callable[..., Any] | None = PrivateAttr(default=None)
    _runtime_config: dict[str, Any] | None = PrivateAttr(default=None)

    @property
    def runtime_config(self) -> dict[str, Any]:
        """``config`` with its secrets restored (what ``ctx.action_config`` gives)."""
        return self.config if self._runtime_config is None else self._runtime_config

    @model_validator(mode="after")
    def _builtin_module(self) -> ActionPlan:
        # Plans compiled before the built-in actions became a package (one module each, as
        # upstream's plan/actions/) name their old module: still loadable.
        if self.builtin and self.func.module == _LEGACY_BUILTIN_MODULE:
            self.func = FunctionRef(
                module=f"flink_agents.plan.actions.{self.func.qualname}",
                qualname=self.func.qualname,
            )
        return self

    @property
    def function(self) -> Callable[..., Any]:
        """The action's function (imported once)."""
        if self._callable is None:
            self._callable = unwrap(self.func.resolve())
        return self._callable


class InterceptorPlan(BaseModel):
    """A model or tool interceptor of the plan (see :mod:`flink_agents.api.interceptors`).

    Attributes:
        kind: ``"model"`` or ``"tool"``.
        name: its name (in errors).
        func: where its function or class is.
    """

    kind: str
    name: str
    func: FunctionRef


class HookPlan(BaseModel):
    """A hook of the plan (see :mod:`flink_agents.api.hooks`).

    Attributes:
        name: unique name.
        point: where it runs.
        func: where its function is.
    """

    name: str
    point: str
    func: FunctionRef


class ResourceProvider(BaseModel):
    """How to create one resource on the task side.

    Attributes:
        name: resource name.
        type: resource type.
        clazz: import path of the resource class.
        arguments: constructor arguments of a descriptor (secrets replaced by a marker).
        serialized: the dumped instance of a serializable resource.
        clazz_pickled: the class by value (base64 cloudpickle) when the ``__main__`` script
            defines it; left out of the JSON otherwise.
    """

    name: str
    type: ResourceType
    clazz: str
    arguments: dict[str, Any] | None = None
    serialized: dict[str, Any] | None = None
    clazz_pickled: str | None = None

    @model_serializer(mode="wrap")
    def _omit_by_name(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Classes referenced by name keep the JSON they always had.
        data: dict[str, Any] = handler(self)
        if data.get("clazz_pickled") is None:
            data.pop("clazz_pickled", None)
        return data

    def resource_class(self) -> builtins.type[Resource]:
        """The resource class (loaded from ``clazz_pickled`` or imported by name)."""
        if self.clazz_pickled is not None:
            cls: builtins.type[Resource] = load_by_value(self.clazz_pickled)
            return cls
        return ResourceDescriptor(self.clazz).clazz


def _encode_argument(value: Any, where: str, problems: list[str]) -> Any:
    """JSON form of a descriptor argument (pydantic models tagged with their class)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if secret_str_value(value) is not None:
        return value  # a SecretStr: the redaction moves it to the side table
    if isinstance(value, (list, tuple)):
        return [_encode_argument(v, where, problems) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _encode_argument(v, where, problems) for k, v in value.items()}
    if isinstance(value, BaseModel):
        cls = type(value)
        encoded = {
            MODEL_MARKER: f"{cls.__module__}.{cls.__qualname__}",
            "data": json.loads(value.model_dump_json()),
        }
        pickled = pickle_by_value(cls)
        if pickled is not None:
            encoded["pickled"] = pickled
        return encoded
    if callable(value) and not isinstance(value, type):
        try:
            return {FUNCTION_MARKER: function_ref(value).model_dump()}
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            return None
    problems.append(
        f"{where} is {type(value).__name__}, which cannot be stored in the plan: use JSON "
        "values (str, numbers, lists, dicts) or pydantic models"
    )
    return None


def decode_argument(value: Any) -> Any:
    """Inverse of the plan's argument encoding."""
    if isinstance(value, list):
        return [decode_argument(v) for v in value]
    if isinstance(value, dict):
        if MODEL_MARKER in value:
            if value.get("pickled"):
                cls = load_by_value(value["pickled"])
            else:
                cls = ResourceDescriptor(value[MODEL_MARKER]).clazz
            return cls.model_validate(value["data"])
        if FUNCTION_MARKER in value:
            return unwrap(FunctionRef.model_validate(value[FUNCTION_MARKER]).resolve())
        return {k: decode_argument(v) for k, v in value.items()}
    return value


def _trigger(event: Any, action: str, problems: list[str], expressions: list[str]) -> str | None:
    """The exact event type of one trigger condition (None for an expression, which is
    checked and added to ``expressions``, or for a problem, added to ``problems``)."""
    if isinstance(event, type) and issubclass(event, Event):
        return event.EVENT_TYPE
    if isinstance(event, str) and event.strip():
        try:
            kind, value = classify(event)
            if kind == "event_type":
                return value
            compile_condition(value, event_type_constants())
        except TriggerConditionError as exc:
            problems.append(
                f"action {action!r}: {exc}\n    (quote an event type name that is no "
                "plain name: \"'order:created'\")"
            )
            return None
        expressions.append(value)
        return None
    problems.append(
        f"action {action!r} listens to {event!r}, which is neither an Event subclass nor "
        "a non-empty event type string or trigger-condition expression"
    )
    return None


def _check_classless_types(actions: Mapping[str, ActionPlan]) -> None:
    """Log the listened type strings no event class declares.

    They are legal (unified events: ``Event(type="step2", ...)`` sent by an action), so
    this is no error; but a typo of a declared type would never fire, so a type close to a
    declared or listened one is a warning that names it.
    """
    declared = set(registered_event_types())
    classless: dict[str, list[str]] = {}
    for action in actions.values():
        for etype in action.listen_event_types:
            if etype not in declared and event_class_for(etype) is None:
                classless.setdefault(etype, []).append(action.name)
    if not classless:
        return
    listened = {t for a in actions.values() for t in a.listen_event_types}
    for etype, names in sorted(classless.items()):
        candidates = sorted((declared | listened) - {etype, Event.EVENT_TYPE})
        close = difflib.get_close_matches(etype, candidates, n=1, cutoff=0.8)
        if close:
            log.warning(
                "action(s) %s listen to event type %r, which no event class declares and "
                "which is close to %r: a typo? (fine if actions send "
                "Event(type=%r, ...) themselves)",
                names,
                etype,
                close[0],
                etype,
            )
    log.info(
        "event types without a class (unified events, sent as Event(type=..., attributes=...)"
        " by actions): %s",
        sorted(classless),
    )


def _check_signature(name: str, func: Callable[..., Any], problems: list[str]) -> None:
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return
    if params and params[0].name == "self":
        problems.append(
            f"action {name!r} takes `self`; actions are static functions (event, ctx): add "
            "@staticmethod and drop self"
        )
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) != 2 and not any(p.kind == p.VAR_POSITIONAL for p in params):
        problems.append(
            f"action {name!r} must take exactly two arguments (event, ctx); it takes "
            f"{[p.name for p in params]}"
        )


class AgentPlan(BaseModel):
    """An agent compiled into data.

    Attributes:
        actions: actions by name.
        actions_by_event: action names by listened event type, in declaration order.
        resource_providers: providers by resource type and name.
        config: the configuration values that were set.
        subagents: the plans of its sub-agents, by name (sections: see
            :mod:`flink_agents.plan.subagents`; their config is this plan's).
    """

    actions: dict[str, ActionPlan]
    actions_by_event: dict[str, list[str]]
    resource_providers: dict[ResourceType, dict[str, ResourceProvider]]
    config: dict[str, Any] = Field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    interceptors: list[InterceptorPlan] = Field(default_factory=list)
    hooks: dict[str, HookPlan] = Field(default_factory=dict)
    subagents: dict[str, AgentPlan] = Field(default_factory=dict)

    _secrets: dict[str, Any] = PrivateAttr(default_factory=dict)
    _masker: Masker | None = PrivateAttr(default=None)
    _resolved: dict[str, list[tuple[str, Any]]] = PrivateAttr(default_factory=dict)
    _configuration: AgentConfiguration | None = PrivateAttr(default=None)

    @model_serializer(mode="wrap")
    def _omit_unused(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Plans without these keep the JSON they always had.
        data: dict[str, Any] = handler(self)
        for key in ("name", "description", "interceptors", "hooks", "subagents"):
            if not data.get(key):
                data.pop(key, None)
        for section in data.get("subagents", {}).values():
            section.pop("config", None)  # the root plan's (see plan/subagents.py: share)
        return data

    @model_validator(mode="after")
    def _share_with_sections(self) -> AgentPlan:
        if self.subagents:
            from flink_agents.plan.subagents import share

            share(self)
        return self

    # -- compiling ---------------------------------------------------------------------
    @staticmethod
    def from_agent(
        agent: Agent,
        config: AgentConfiguration | Mapping[str, Any] | None = None,
        resources: Mapping[ResourceType, Mapping[str, Any]] | None = None,
        interceptors: Sequence[InterceptorDefinition] | None = None,
        *,
        _scope: SectionScope | None = None,
    ) -> AgentPlan:
        """Compile ``agent`` (and its sub-agents, into sections: :mod:`.subagents`).

        Args:
            agent: the agent.
            config: configuration (options and free keys).
            resources: resources of the environment, shared by its agents; the agent's own
                resources win on a name clash.
            interceptors: interceptors of the environment; they run outside the agent's
                (and in its sub-agents too).
            _scope: where a sub-agent's plan sits (private: ``compile_subagents``).

        Raises:
            PlanValidationError: with every problem found.
        """
        from flink_agents.plan.actions import BUILTIN_ACTIONS
        from flink_agents.plan.skills import add_skills
        from flink_agents.plan.subagents import SectionScope, adopt_sections, compile_subagents

        if not isinstance(config, AgentConfiguration):
            config = AgentConfiguration(config)
        problems: list[str] = list(agent.declaration_problems)
        allow_pickle = bool(config.get(AgentConfigOptions.ALLOW_PICKLED_FUNCTIONS))

        actions: dict[str, ActionPlan] = {}
        by_event: dict[str, list[str]] = {}
        secrets: dict[str, Any] = {}
        definitions = list(agent.actions.values())
        for definition in definitions:
            if definition.name in BUILTIN_ACTIONS:
                problems.append(
                    f"action name {definition.name!r} is reserved for a built-in action; rename it"
                )
                continue
            expressions: list[str] = []
            types = [_trigger(e, definition.name, problems, expressions) for e in definition.events]
            if not definition.events:
                problems.append(
                    f"action {definition.name!r} listens to no event: "
                    "use @action(InputEvent) or similar"
                )
            func = unwrap(definition.func)
            _check_signature(definition.name, func, problems)
            try:
                ref = function_ref(func, allow_pickle=allow_pickle)
            except ValueError as exc:
                problems.append(f"action {definition.name!r}: {exc}")
                continue
            action_config = redact(definition.config, f"action/{definition.name}", secrets)
            try:
                json.dumps(action_config)
            except (TypeError, ValueError):
                problems.append(
                    f"action {definition.name!r} has config that is not JSON serializable: "
                    f"{redact(definition.config, '', {})!r}"
                )
                continue
            actions[definition.name] = ActionPlan(
                name=definition.name,
                func=ref,
                listen_event_types=list(dict.fromkeys(t for t in types if t)),
                trigger_conditions=expressions,
                config=action_config,
                is_async=is_async(func),
            )
        for name, (events, func) in BUILTIN_ACTIONS.items():
            actions[name] = ActionPlan(
                name=name,
                func=function_ref(func),
                listen_event_types=list(events),
                is_async=is_async(func),
                builtin=True,
            )
        for action in actions.values():
            for etype in action.listen_event_types:
                by_event.setdefault(etype, []).append(action.name)
        _check_classless_types(actions)

        merged: dict[ResourceType, dict[str, Any]] = {}
        for source in (resources or {}), agent.resources:
            for rtype, by_name in source.items():
                merged.setdefault(ResourceType(rtype), {}).update(by_name)
        problems += add_skills(merged)
        scope = _scope or SectionScope.root(agent)
        sections = compile_subagents(merged, config, interceptors, problems, scope)
        providers: dict[ResourceType, dict[str, ResourceProvider]] = {}
        for rtype, by_name in merged.items():
            for name, value in by_name.items():
                provider = _provider(name, rtype, value, secrets, problems, allow_pickle)
                if provider is not None:
                    providers.setdefault(rtype, {})[name] = provider
        _check_references(providers, problems, scope.inherited)
        interceptor_plans = [
            p
            for d in [*(interceptors or ()), *agent.interceptors]
            if (p := _interceptor_plan(d, allow_pickle, problems)) is not None
        ]
        hook_plans = {
            d.name: hp
            for d in agent.hooks.values()
            if (hp := _hook_plan(d, allow_pickle, problems)) is not None
        }

        if problems:
            raise PlanValidationError(problems)
        # Taken before the plan shares its (empty) side table with them.
        section_secrets = {name: section.secrets for name, section in sections.items()}
        plan = AgentPlan(
            actions=actions,
            actions_by_event=by_event,
            resource_providers=providers,
            config=redact(config.to_dict(), "config", secrets),
            # Only text: a subclass may use these names for something else (a tool).
            name=agent.name if isinstance(agent.name, str) else None,
            description=agent.description if isinstance(agent.description, str) else None,
            interceptors=interceptor_plans,
            hooks=hook_plans,
            subagents=sections,
        )
        if sections:
            adopt_sections(plan, section_secrets, secrets)
        return plan.with_secrets(secrets)

    # -- reading -----------------------------------------------------------------------
    def conditional_actions(self) -> list[ActionPlan]:
        """Actions with trigger-condition expressions, in declaration order."""
        return [a for a in self.actions.values() if a.trigger_conditions]

    def get_actions(self, event_type: str) -> list[ActionPlan]:
        """Actions listening to ``event_type``, in order."""
        return [self.actions[n] for n in self.actions_by_event.get(event_type, ())]

    def interceptor_chain(self, kind: str) -> list[tuple[str, Callable[..., Any]]]:
        """``(name, callable (request, call_next))`` of the ``kind`` (``"model"``/``"tool"``)
        interceptors, outermost first; classes are instantiated once per plan object."""
        resolved = self.__pydantic_private__["_resolved"]  # type: ignore[index]
        key = f"interceptor:{kind}"
        chain = resolved.get(key)
        if chain is None:
            chain = []
            for p in self.interceptors:
                if p.kind == kind:
                    target = unwrap(p.func.resolve())
                    if isinstance(target, type):
                        target = target().intercept
                    chain.append((p.name, target))
            resolved[key] = chain
        return chain

    def hooks_at(self, point: str) -> list[tuple[str, Callable[..., Any]]]:
        """``(name, function)`` of the hooks running at ``point``, in declaration order."""
        resolved = self.__pydantic_private__["_resolved"]  # type: ignore[index]
        key = f"hook:{point}"
        hooks = resolved.get(key)
        if hooks is None:
            hooks = [
                (h.name, unwrap(h.func.resolve())) for h in self.hooks.values() if h.point == point
            ]
            resolved[key] = hooks
        return hooks

    def get_resource_provider(self, name: str, rtype: ResourceType) -> ResourceProvider | None:
        """The provider of resource ``name`` of type ``rtype``, if declared."""
        return self.resource_providers.get(rtype, {}).get(name)

    @property
    def secrets(self) -> dict[str, Any]:
        """Secret argument values kept out of the JSON (``provider_key -> value``)."""
        return self._secrets

    @property
    def masker(self) -> Masker:
        """The secret rule with this plan's secret values known (made once per plan; false
        when the plan has no secrets)."""
        # Through the private dict: pydantic's attribute fallback is slow, and every model
        # call asks (plan/actions/secret_text.py).
        private = self.__pydantic_private__
        masker: Masker | None = private["_masker"]  # type: ignore[index]
        if masker is None:
            masker = self._masker = Masker(self._secrets.values())
        return masker

    def with_secrets(self, secrets: Mapping[str, Any]) -> AgentPlan:
        """Attach secrets to a plan read back from JSON (they become known to the log
        masking of this process, ``flink_agents.secrets.register_secrets``)."""
        self._secrets = dict(secrets)
        self._masker = None
        self._configuration = None
        register_secrets(self._secrets.values())
        for action in self.actions.values():
            action._runtime_config = (
                restore_secrets(action.config, self._secrets)
                if _has_marker(action.config)
                else None
            )
        if self.subagents:
            from flink_agents.plan.subagents import share

            share(self)
        return self

    def main_module_references(self) -> list[str]:
        """References to the ``__main__`` script by name, which Flink's workers cannot
        import: what could not be stored by value, each with the reason.

        Objects of the script travel by value (cloudpickle); one that cannot be pickled
        (e.g. a function whose globals hold a lock or an open connection) stays a reference
        by name, which works in this process only (the local environment).
        """
        found = []
        for action in self.actions.values():
            found += [f"action {action.name!r}: {p}" for p in _names_of_main(action.func)]
            found += [f"action {action.name!r}: {p}" for p in _names_of_main(action.config)]
        for ic in self.interceptors:
            found += [f"{ic.kind} interceptor {ic.name!r}: {p}" for p in _names_of_main(ic.func)]
        for hk in self.hooks.values():
            found += [f"hook {hk.name!r}: {p}" for p in _names_of_main(hk.func)]
        for rtype, by_name in self.resource_providers.items():
            for name, provider in by_name.items():
                where = f"{rtype.value} resource {name!r}"
                if provider.clazz.startswith("__main__.") and provider.clazz_pickled is None:
                    found.append(f"{where}: {_main_problem(provider.clazz)}")
                found += [f"{where}: {p}" for p in _names_of_main(provider.serialized)]
                found += [f"{where}: {p}" for p in _names_of_main(provider.arguments)]
        for name, section in self.subagents.items():
            found += [f"sub-agent {name!r}: {p}" for p in section.main_module_references()]
        return found

    def by_value_references(self) -> list[str]:
        """``module.qualname`` of every function and class the plan carries by value."""
        found: list[str] = []
        _collect_by_value(self.model_dump(), found)
        return sorted(set(found))

    def get_config(self) -> AgentConfiguration:
        """The configuration as an :class:`AgentConfiguration` (secrets restored), parsed
        once and read-only (every host and resource of the plan reads this one object)."""
        configuration = self._configuration
        if configuration is None:
            configuration = AgentConfiguration(restore_secrets(self.config, self._secrets))
            configuration = self._configuration = configuration.read_only()
        return configuration


def _has_marker(value: Any) -> bool:
    if isinstance(value, dict):
        return is_marker(value) or any(_has_marker(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_marker(v) for v in value)
    return False


def _positional_count(func: Callable[..., Any]) -> int | None:
    """How many positional arguments ``func`` takes (None: any number, or unknown)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    return len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])


def _interceptor_plan(
    definition: InterceptorDefinition, allow_pickle: bool, problems: list[str]
) -> InterceptorPlan | None:
    where = f"{definition.kind} interceptor {definition.name!r}"
    func = unwrap(definition.func)
    if isinstance(func, type):
        if not callable(getattr(func, "intercept", None)):
            problems.append(
                f"{where}: class {func.__qualname__} has no intercept(request, call_next)"
            )
            return None
    elif not callable(func):
        problems.append(f"{where} is {type(func).__name__}: use a function or a class")
        return None
    elif _positional_count(func) not in (None, 2):
        problems.append(f"{where} must take two arguments (request, call_next)")
        return None
    try:
        ref = function_ref(func, allow_pickle=allow_pickle)
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return None
    return InterceptorPlan(kind=definition.kind, name=definition.name, func=ref)


def _hook_plan(
    definition: HookDefinition, allow_pickle: bool, problems: list[str]
) -> HookPlan | None:
    from flink_agents.api.hooks import HookPoint

    where = f"hook {definition.name!r}"
    points = [p.value for p in HookPoint]
    if definition.point not in points:
        problems.append(f"{where} runs at {definition.point!r}, which is not one of {points}")
        return None
    func = unwrap(definition.func)
    if not callable(func) or _positional_count(func) not in (None, 1):
        problems.append(f"{where} must be a function taking one argument (hc: HookContext)")
        return None
    try:
        ref = function_ref(func, allow_pickle=allow_pickle)
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return None
    return HookPlan(name=definition.name, point=definition.point, func=ref)


def _main_problem(path: str) -> str:
    reason = pickle_error(path)
    return f"{path} " + (
        f"could not be pickled by value ({reason})" if reason else "is not stored by value"
    )


def _names_of_main(value: Any) -> list[str]:
    """Problems of the ``__main__`` references by name inside ``value`` (JSON-like data or a
    function reference)."""
    if isinstance(value, FunctionRef):
        value = value.model_dump()
    found: list[str] = []
    if isinstance(value, dict):
        if value.get("module") == "__main__" and "qualname" in value and not value.get("pickled"):
            found.append(_main_problem(f"__main__.{value['qualname']}"))
        for key in (MODEL_MARKER, "class"):
            path = value.get(key)
            if isinstance(path, str) and path.startswith("__main__.") and not value.get("pickled"):
                found.append(_main_problem(path))
        for item in value.values():
            found += _names_of_main(item)
    elif isinstance(value, list):
        for item in value:
            found += _names_of_main(item)
    return found


def _collect_by_value(value: Any, found: list[str]) -> None:
    if isinstance(value, dict):
        if value.get("pickled") or value.get("clazz_pickled"):
            if "qualname" in value:
                found.append(f"{value['module']}.{value['qualname']}")
            else:
                found.append(value.get(MODEL_MARKER) or value.get("class") or value["clazz"])
        for item in value.values():
            _collect_by_value(item, found)
    elif isinstance(value, list):
        for item in value:
            _collect_by_value(item, found)


def _provider(
    name: str,
    rtype: ResourceType,
    value: Any,
    secrets: dict[str, Any],
    problems: list[str],
    allow_pickle: bool,
) -> ResourceProvider | None:
    where = f"{rtype.value} resource {name!r}"
    if callable(value) and not isinstance(value, (type, ResourceDescriptor, Resource)):
        if rtype is not ResourceType.TOOL:
            problems.append(f"{where} is a function; only tools can be given as functions")
            return None
        try:
            value = FunctionTool.from_callable(value, name=name, allow_pickle=allow_pickle)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            return None
    if isinstance(value, SerializableResource):
        return ResourceProvider(
            name=name,
            type=rtype,
            clazz=f"{type(value).__module__}.{type(value).__qualname__}",
            serialized=_serialized(value, f"{rtype.value}/{name}", secrets),
            clazz_pickled=pickle_by_value(type(value)),
        )
    if isinstance(value, ResourceDescriptor):
        try:
            cls = value.clazz
        except (ImportError, AttributeError) as exc:
            problems.append(f"{where}: cannot import class {value.class_path!r} ({exc})")
            return None
        if not (isinstance(cls, type) and issubclass(cls, Resource)):
            problems.append(f"{where}: {value.class_path} is not a Resource subclass")
            return None
        try:
            declared = resource_type_of(value)
        except Exception:  # noqa: BLE001 - reported below as a mismatch
            declared = None
        if declared is not rtype:
            problems.append(
                f"{where}: {value.class_path} is a "
                f"{declared.value if declared else 'non-resource'}, not a {rtype.value}"
            )
            return None
        missing = _missing_arguments(cls, value.arguments)
        if missing:
            problems.append(
                f"{where}: {cls.__name__} needs {', '.join(repr(m) for m in missing)}; add "
                f"{', '.join(f'{m}=...' for m in missing)} to its ResourceDescriptor"
                + (" (the model name, e.g. model='qwen3:8b')" if "model" in missing else "")
            )
            return None
        arguments = {
            arg: _encode_argument(argval, f"argument {arg!r} of {where}", problems)
            for arg, argval in value.arguments.items()
        }
        arguments = redact(arguments, f"{rtype.value}/{name}", secrets)
        return ResourceProvider(
            name=name,
            type=rtype,
            clazz=value.class_path,
            arguments=arguments,
            clazz_pickled=pickle_by_value(cls),
        )
    problems.append(
        f"{where} is {type(value).__name__}; declare it with a ResourceDescriptor, a Prompt "
        "or a Tool"
    )
    return None


def _serialized(value: SerializableResource, where: str, secrets: dict[str, Any]) -> Any:
    """The JSON of a serializable resource, redacted. Its ``SecretStr`` fields would dump as
    stars: a model that has some is dumped as Python values first, so they reach the side
    table with their text."""
    python = value.model_dump()
    if not has_secret_str(python):
        return redact(json.loads(value.model_dump_json()), where, secrets)
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(redact(python, where, secrets))


def _missing_arguments(cls: type[Resource], arguments: Mapping[str, Any]) -> list[str]:
    """Required fields of a resource class that a descriptor does not give (checked here
    so that a chat model setup without ``model`` fails when the plan is made, not on the
    first record). Classes with an ``__init__`` of their own are left to it."""
    if cls.__init__ is not BaseModel.__init__:
        return []
    return [
        name
        for name, info in cls.model_fields.items()
        if info.is_required() and name not in arguments and info.alias not in arguments
    ]


# Which argument of which resource type names another resource.
def _check_references(
    providers: dict[ResourceType, dict[str, ResourceProvider]],
    problems: list[str],
    inherited: Mapping[ResourceType, frozenset[str]] | None = None,
) -> None:
    """Names resources give for others must be declared: by the plan, or (a sub-agent's
    section) by a plan around it (``inherited``); a tool may be a sub-agent."""
    inherited = inherited or {}

    def declared(rtype: ResourceType) -> set[str]:
        return {*providers.get(rtype, {}), *inherited.get(rtype, ())}

    has_mcp = bool(declared(ResourceType.MCP_SERVER))
    for rtype, refs in RESOURCE_REFERENCES.items():
        for name, provider in providers.get(rtype, {}).items():
            args = provider.arguments or provider.serialized or {}
            for arg, target in refs:
                value = args.get(arg)
                names = value if isinstance(value, list) else [value]
                for ref in names:
                    if not isinstance(ref, str) or ref in declared(target):
                        continue
                    if target is ResourceType.TOOL and ref in declared(ResourceType.AGENT):
                        continue  # a sub-agent, offered as a tool
                    if target is ResourceType.AGENT and ref in declared(ResourceType.TOOL):
                        continue  # offered as a tool anyway (an AgentTool added as a tool)
                    if target is ResourceType.TOOL and has_mcp:
                        continue  # may be a tool of an MCP server, resolved at run time
                    known = sorted(declared(target))
                    how = (
                        "add_resource(name, ResourceType.AGENT, agent)"
                        if target is ResourceType.AGENT
                        else f"@{_decorator_for(target)} or add_resource"
                    )
                    problems.append(
                        f"{rtype.value} resource {name!r} refers to {target.value} {ref!r} "
                        f"in {arg!r}, which is not declared (declared: {known or 'none'}); "
                        f"add it with {how}"
                    )


def _decorator_for(rtype: ResourceType) -> str:
    return {
        ResourceType.CHAT_MODEL: "chat_model_setup",
        ResourceType.EMBEDDING_MODEL: "embedding_model_setup",
    }.get(rtype, rtype.value)
