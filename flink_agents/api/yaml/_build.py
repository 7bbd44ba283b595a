"""Building agents and resources from one YAML agents file, with every problem located.

Private: used by :mod:`flink_agents.api.yaml.loader`. The file is first checked against the
schema (:mod:`~flink_agents.api.yaml.specs`); then everything that can be checked without
importing anything (names, function references, class aliases, event aliases, action
config): a file with problems there imports no module, so no module's top-level code runs
for an entry that is then rejected. Only then is every name looked up: functions are
imported, class aliases resolved and the classes imported, arguments checked against the
resource class. Problems are collected (each with file, line and
field) and raised together. Names that refer to other resources (a setup's connection,
prompt and tools) are only recorded here: another file or ``add_resource`` may still bring
them, so they are checked when an agent is applied.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args

from pydantic import BaseModel, TypeAdapter, ValidationError

from flink_agents.api._function import unwrap
from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.chat_message import MessageRole as ChatRole
from flink_agents.api.events.event import registered_event_types
from flink_agents.api.events.event_type import EventType, event_type_constants
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import (
    RESOURCE_REFERENCES,
    Resource,
    ResourceDescriptor,
    ResourceType,
    SerializableResource,
)
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.trigger_conditions import classify, compile_condition
from flink_agents.api.yaml._source import Loc, YamlSource
from flink_agents.api.yaml.aliases import (
    CLAZZ_ALIASES,
    EVENT_ALIASES,
    JAVA_WRAPPER_CLAZZ,
    UNAVAILABLE_ALIASES,
)
from flink_agents.api.yaml.specs import (
    ActionSpec,
    AgentSpec,
    DescriptorSpec,
    PromptSpec,
    ToolSpec,
    YamlAgentsDocument,
)
from flink_agents.errors import TriggerConditionError, YamlError, YamlProblem

#: Descriptor sections and the resource type each declares.
DESCRIPTOR_SECTIONS: dict[str, ResourceType] = {
    "chat_model_connections": ResourceType.CHAT_MODEL_CONNECTION,
    "chat_model_setups": ResourceType.CHAT_MODEL,
    "embedding_model_connections": ResourceType.EMBEDDING_MODEL_CONNECTION,
    "embedding_model_setups": ResourceType.EMBEDDING_MODEL,
    "vector_stores": ResourceType.VECTOR_STORE,
    "mcp_servers": ResourceType.MCP_SERVER,
}
SECTION_OF: dict[ResourceType, str] = {
    **{rtype: section for section, rtype in DESCRIPTOR_SECTIONS.items()},
    ResourceType.TOOL: "tools",
    ResourceType.PROMPT: "prompts",
}
LABEL: dict[ResourceType, str] = {
    ResourceType.CHAT_MODEL_CONNECTION: "chat model connection",
    ResourceType.CHAT_MODEL: "chat model setup",
    ResourceType.EMBEDDING_MODEL_CONNECTION: "embedding model connection",
    ResourceType.EMBEDDING_MODEL: "embedding model setup",
    ResourceType.VECTOR_STORE: "vector store",
    ResourceType.MCP_SERVER: "MCP server",
    ResourceType.TOOL: "tool",
    ResourceType.PROMPT: "prompt",
}
_MISSING = object()


@dataclass(frozen=True)
class Reference:
    """A name one resource gives for another, and where the file gives it."""

    where: YamlProblem  # the place (its message is unused)
    owner: str
    target: ResourceType
    name: str


@dataclass(frozen=True)
class SharedAction:
    """A file-level action, for agents that name it."""

    events: tuple[str, ...]
    func: Callable[..., Any]
    config: dict[str, Any]
    path: str


@dataclass
class BuiltFile:
    """What one file declares, ready to be registered on an environment."""

    path: str
    agents: dict[str, tuple[Agent, list[Reference]]] = field(default_factory=dict)
    shared_resources: dict[ResourceType, dict[str, Any]] = field(default_factory=dict)
    shared_references: list[Reference] = field(default_factory=list)
    shared_actions: dict[str, SharedAction] = field(default_factory=dict)


def closest(word: str, candidates: Any) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or nothing."""
    found = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.6)
    return f"; did you mean '{found[0]}'?" if found else ""


class FileBuilder:
    """Builds one file's agents, shared resources and shared actions.

    Args:
        source: the parsed file.
        taken_agents: agent names already on the environment.
        taken_resources: shared resource names already on the environment, by type.
        known_actions: shared actions of files loaded before.
    """

    def __init__(
        self,
        source: YamlSource,
        *,
        taken_agents: Mapping[str, Any],
        taken_resources: Mapping[ResourceType, Mapping[str, Any]],
        known_actions: Mapping[str, SharedAction],
    ) -> None:
        self.src = source
        self.taken_agents = taken_agents
        self.taken_resources = taken_resources
        self.known_actions = known_actions
        self.problems: list[YamlProblem] = []
        #: The first pass: check what needs no import, import nothing.
        self.dry = False

    def problem(self, loc: Loc, message: str) -> None:
        self.problems.append(self.src.problem(loc, message))

    # -- the whole file ----------------------------------------------------------------
    def build(self) -> BuiltFile:
        """Check and build everything the file declares.

        Raises:
            YamlError: with every problem found.
        """
        data = self.src.data
        if data is None:
            raise YamlError(
                [YamlProblem("the file is empty: declare agents under 'agents:'", self.src.path)]
            )
        if not isinstance(data, dict):
            self.problem((), "the file must be a mapping with 'agents:' and shared sections")
            raise YamlError(self.problems)
        try:
            doc = YamlAgentsDocument.model_validate(data)
        except ValidationError as exc:
            problems = [self._schema_problem(e) for e in exc.errors()]
            raise YamlError(_in_file_order(problems)) from None
        self.dry = True
        self._build(doc)
        if self.problems:
            raise YamlError(_in_file_order(self.problems))
        self.dry = False
        built = self._build(doc)
        if self.problems:
            raise YamlError(_in_file_order(self.problems))
        return built

    def _build(self, doc: YamlAgentsDocument) -> BuiltFile:
        """One pass over the checked document (see :attr:`dry`)."""
        built = BuiltFile(self.src.path)
        for rtype, name, value, refs, at in self._resources(doc, (), "shared"):
            if name in self.taken_resources.get(rtype, {}):
                self.problem(
                    (*at, "name"),
                    f"a shared {LABEL[rtype]} named '{name}' is already on the environment "
                    "(from a file loaded before or add_resource); give it another name",
                )
                continue
            built.shared_resources.setdefault(rtype, {})[name] = value
            built.shared_references.extend(refs)
        for index, spec in enumerate(doc.actions):
            loc: Loc = ("actions", index)
            if spec.name in built.shared_actions:
                self.problem(
                    (*loc, "name"), f"a shared action named '{spec.name}' is declared twice"
                )
            elif spec.name in self.known_actions:
                self.problem(
                    (*loc, "name"),
                    f"a shared action named '{spec.name}' was loaded before from "
                    f"{self.known_actions[spec.name].path}; give it another name",
                )
            action = self._action(loc, spec)
            if action is not None:
                built.shared_actions.setdefault(spec.name, action)
        for index, agent_spec in enumerate(doc.agents):
            loc = ("agents", index)
            if agent_spec.name in built.agents:
                self.problem((*loc, "name"), f"agent '{agent_spec.name}' is declared twice")
                continue
            if agent_spec.name in self.taken_agents:
                self.problem(
                    (*loc, "name"),
                    f"an agent named '{agent_spec.name}' is already on the environment "
                    "(loaded from another file); give it another name",
                )
                continue
            built.agents[agent_spec.name] = self._agent(
                loc, agent_spec, built.shared_actions, {a.name for a in doc.actions}
            )
        return built

    def _agent(
        self,
        loc: Loc,
        spec: AgentSpec,
        file_actions: Mapping[str, SharedAction],
        declared_actions: set[str],
    ) -> tuple[Agent, list[Reference]]:
        agent = Agent()
        references: list[Reference] = []
        owner = f"agent '{spec.name}'"
        for rtype, name, value, refs, _ in self._resources(spec, loc, owner):
            if not self.dry:
                agent.add_resource(name, rtype, value)
            references.extend(refs)
        names: set[str] = set()
        for index, item in enumerate(spec.actions):
            at: Loc = (*loc, "actions", index)
            if isinstance(item, str):
                name = item
                action = file_actions.get(item) or self.known_actions.get(item)
                if action is None and item in declared_actions:
                    continue  # a shared action of this file with problems (reported)
                if action is None:
                    known = sorted({*file_actions, *self.known_actions})
                    self.problem(
                        at,
                        f"'{item}' names no shared action (shared actions are declared under "
                        f"a top-level 'actions:'; known: {known or 'none'})" + closest(item, known),
                    )
                    continue
            else:
                name = item.name
                action = self._action(at, item)
            if name in names:
                self.problem(at, f"action '{name}' is given twice in agent '{spec.name}'")
                continue
            names.add(name)
            if action is not None and not self.dry:
                agent.add_action(name, list(action.events), action.func, **action.config)
        return agent, references

    # -- resources ---------------------------------------------------------------------
    def _resources(
        self, spec: Any, loc: Loc, owner: str
    ) -> list[tuple[ResourceType, str, Any, list[Reference], Loc]]:
        """``(type, name, resource, references, place)`` of every resource of ``spec``."""
        found: list[tuple[ResourceType, str, Any, list[Reference], Loc]] = []
        seen: dict[ResourceType, set[str]] = {}

        def add(rtype: ResourceType, at: Loc, name: str, value: Any, refs: list[Reference]):
            if name in seen.setdefault(rtype, set()):
                self.problem((*at, "name"), f"{LABEL[rtype]} '{name}' is declared twice ({owner})")
            elif value is not None:
                seen[rtype].add(name)
                found.append((rtype, name, value, refs, at))

        for section, rtype in DESCRIPTOR_SECTIONS.items():
            for index, dspec in enumerate(getattr(spec, section)):
                at: Loc = (*loc, section, index)
                refs: list[Reference] = []
                add(rtype, at, dspec.name, self._descriptor(at, dspec, rtype, refs), refs)
        for index, tspec in enumerate(spec.tools):
            at = (*loc, "tools", index)
            add(ResourceType.TOOL, at, tspec.name, self._tool(at, tspec), [])
        for index, pspec in enumerate(spec.prompts):
            at = (*loc, "prompts", index)
            add(ResourceType.PROMPT, at, pspec.name, _prompt(pspec), [])
        if spec.skills:
            self.problem(
                (*loc, "skills"),
                "skills in YAML agent files are not supported yet; declare them in Python "
                "with an @skills method (see the Skills page of the documentation)",
            )
        return found

    def _descriptor(
        self, loc: Loc, spec: DescriptorSpec, rtype: ResourceType, refs: list[Reference]
    ) -> Any:
        kwargs = dict(spec.model_extra or {})
        label = f"{LABEL[rtype]} '{spec.name}'"
        for arg, target in RESOURCE_REFERENCES.get(rtype, []):
            value = kwargs.get(arg)
            named: list[tuple[Loc, str]] = []
            if isinstance(value, str):
                named = [((*loc, arg), value)]
            elif isinstance(value, list):
                named = [((*loc, arg, j), v) for j, v in enumerate(value) if isinstance(v, str)]
            for at_ref, name in named:
                refs.append(Reference(self.src.problem(at_ref, ""), label, target, name))
        if spec.type == "java":
            return self._java_descriptor(loc, spec, rtype, kwargs)
        aliases = CLAZZ_ALIASES.get(rtype, {})
        at: Loc = (*loc, "clazz")
        if spec.clazz in aliases:
            path = aliases[spec.clazz]
        elif spec.clazz in UNAVAILABLE_ALIASES.get(rtype, {}):
            hint = UNAVAILABLE_ALIASES[rtype][spec.clazz]
            self.problem(
                at,
                f"'{spec.clazz}' is an Apache Flink Agents integration flink-agents does not "
                f"have; {SECTION_OF[rtype]} aliases here: {sorted(aliases)}"
                + (f" ({hint})" if hint else "")
                + ", or a dotted class path",
            )
            return None
        elif "." not in spec.clazz:
            self.problem(
                at,
                f"unknown {SECTION_OF[rtype]} alias '{spec.clazz}' (aliases: {sorted(aliases)}, "
                "or write a dotted class path)" + closest(spec.clazz, aliases),
            )
            return None
        else:
            path = spec.clazz
        cls = self._import_class(at, path)
        if cls is None or cls is _DRY:
            return cls
        if not (isinstance(cls, type) and issubclass(cls, Resource)):
            self.problem(at, f"{path} is not a resource class (a subclass of Resource)")
            return None
        actual = cls.resource_type()
        if actual is not rtype:
            self.problem(
                at,
                f"{cls.__name__} is a {LABEL.get(actual, actual.value)}, not a {LABEL[rtype]}: "
                f"declare it under '{SECTION_OF.get(actual, actual.value)}'",
            )
            return None
        if issubclass(cls, SerializableResource):
            # Travels in the plan as an instance (MCP servers): build it now, so that its
            # own validation speaks with line numbers.
            try:
                return cls(**kwargs)
            except ValidationError as exc:
                for err in exc.errors():
                    at = (*loc, *err["loc"][:1])
                    if err["type"] == "extra_forbidden":
                        self._unknown_argument(at, cls, str(err["loc"][0]), _fields(cls))
                    else:
                        message = _message(err)
                        if cls.__name__ not in message:
                            message += f" ({cls.__name__})"
                        self.problem(at, message)
                return None
        self._check_arguments(loc, cls, kwargs)
        return ResourceDescriptor(clazz=path, **kwargs)

    def _java_descriptor(
        self, loc: Loc, spec: DescriptorSpec, rtype: ResourceType, kwargs: dict[str, Any]
    ) -> Any:
        wrapper = JAVA_WRAPPER_CLAZZ.get(rtype)
        if wrapper is None:
            self.problem(
                (*loc, "type"),
                f"type: java is not supported for {SECTION_OF[rtype]} (Java resources here: "
                f"{sorted(SECTION_OF[t] for t in JAVA_WRAPPER_CLAZZ)})",
            )
            return None
        if "." not in spec.clazz:
            self.problem(
                (*loc, "clazz"),
                f"'{spec.clazz}' names an Apache Flink Agents Java integration, which "
                "flink-agents does not have; with type: java, clazz is the class path of a "
                "Java class for our bridge (see java-bridge/README.md)",
            )
            return None
        return ResourceDescriptor(clazz=wrapper, java_clazz=spec.clazz, **kwargs)

    def _check_arguments(self, loc: Loc, cls: type[Resource], kwargs: dict[str, Any]) -> None:
        """Arguments the class does not take, values of the wrong type, required ones
        missing: each an error at its line (values are not repeated: they may be secret)."""
        fields = _fields(cls)
        strict_keys = cls.model_config.get("extra") != "allow"
        for key, value in kwargs.items():
            info = fields.get(key)
            if info is None:
                if strict_keys:
                    self._unknown_argument((*loc, key), cls, key, fields)
                continue
            annotation: Any = info.annotation
            if info.metadata:
                annotation = Annotated[(annotation, *info.metadata)]
            try:
                adapter: TypeAdapter[Any] = TypeAdapter(annotation)
            except Exception:  # noqa: BLE001 - a type pydantic cannot check alone: skip
                continue
            try:
                adapter.validate_python(value)
            except ValidationError as exc:
                self.problem((*loc, key), f"{_message(exc.errors()[0])} ({cls.__name__})")
        if cls.__init__ is BaseModel.__init__:
            for name, info in cls.model_fields.items():
                if info.is_required() and name not in kwargs and info.alias not in kwargs:
                    self.problem(
                        (*loc, name),
                        f"'{name}' is required by {cls.__name__}"
                        + (" (the model name, e.g. model: qwen3:8b)" if name == "model" else ""),
                    )

    def _unknown_argument(self, loc: Loc, cls: type, key: str, fields: Mapping[str, Any]) -> None:
        self.problem(
            loc,
            f"unknown argument '{key}' of {cls.__name__}"
            + closest(key, fields)
            + f" (it takes: {', '.join(sorted(fields))})",
        )

    def _import_class(self, loc: Loc, path: str) -> Any:
        module, _, name = path.rpartition(".")
        if not module or not name or not all(p.isidentifier() for p in path.split(".")):
            self.problem(loc, f"'{path}' is not a class path: write 'package.module.ClassName'")
            return None
        if self.dry:
            return _DRY
        try:
            obj: Any = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            self.problem(loc, f"cannot import class '{path}': no module named '{exc.name}'")
            return None
        except Exception as exc:  # noqa: BLE001 - the module's own failure, reported
            self.problem(loc, f"importing '{module}' failed: {type(exc).__name__}: {exc}")
            return None
        found = getattr(obj, name, _MISSING)
        if found is _MISSING:
            names = [n for n in dir(obj) if not n.startswith("_")]
            self.problem(loc, f"module '{module}' has no class '{name}'" + closest(name, names))
            return None
        return found

    # -- tools, prompts, actions -------------------------------------------------------
    def _tool(self, loc: Loc, spec: ToolSpec) -> Any:
        if spec.type == "java":
            self.problem(
                (*loc, "type"),
                "Java function tools (a static method with parameter_types) are not "
                "supported here; a Java tool is a class for our bridge, declared in code with "
                "ResourceDescriptor(clazz=JavaTool, java_clazz=...)",
            )
            return None
        if spec.parameter_types is not None:
            self.problem(
                (*loc, "parameter_types"),
                "parameter_types is for Java tools only: a Python tool's parameters come "
                "from its signature",
            )
        if spec.injected_args:
            self.problem(
                (*loc, "injected_args"),
                "injected_args (tool parameter injection) is not supported by flink-agents; "
                "read the value in the tool or pass it as an argument",
            )
        func = self._function(loc, spec.function, "tool")
        if func is None or func is _DRY:
            return func
        try:
            return FunctionTool.from_callable(func, name=spec.name)
        except (TypeError, ValueError) as exc:
            self.problem((*loc, "function"), f"cannot make a tool of it: {exc}")
            return None

    def _action(self, loc: Loc, spec: ActionSpec) -> SharedAction | None:
        if spec.type == "java":
            self.problem(
                (*loc, "type"), "Java actions are not supported by flink-agents: write it in Python"
            )
            return None
        func = self._function(loc, spec.function, "action")
        if func is not None and func is not _DRY:
            self._check_action_signature((*loc, "function"), func)
        events = [
            self._trigger((*loc, spec.trigger_key, j), raw, spec.trigger_key)
            for j, raw in enumerate(spec.triggers)
        ]
        config = dict(spec.config or {})
        try:
            json.dumps(config)
        except (TypeError, ValueError):
            self.problem((*loc, "config"), "action config must hold JSON values only")
            return None
        if func is None or any(e is None for e in events):
            return None
        return SharedAction(tuple(e for e in events if e), func, config, self.src.path)

    def _trigger(self, loc: Loc, raw: str, key: str) -> str | None:
        """The trigger condition as the plan reads it (``@action``'s form): an alias or
        ``EventType.X`` as its type string, a quoted name as it is, an expression checked
        here (so a mistake names its line)."""
        text = raw.strip()
        if text in EVENT_ALIASES:
            return EVENT_ALIASES[text]
        quoted = len(text) >= 2 and text[0] == text[-1] and text[0] in "'\""
        if quoted:
            kind, name = classify(text)
            if kind == "event_type":
                # A quoted exact event type: kept quoted only where the plan needs it.
                return name if classify(name) == ("event_type", name) else text
        if text.startswith("EventType.") and isinstance(
            getattr(EventType, text[len("EventType.") :], None), str
        ):
            return str(getattr(EventType, text[len("EventType.") :]))
        kind, _ = classify(text)
        if kind == "expression":
            if key != "trigger_conditions":
                if not any(c.isspace() or c in "'\"\\" for c in text):
                    return f"'{text}'"  # listen_to names exact types only
                self.problem(loc, f"'{text}' cannot be an event type name (whitespace or quotes)")
                return None
            try:
                compile_condition(text, event_type_constants())
            except TriggerConditionError as exc:
                self.problem(loc, f"{exc.reason} (column {exc.column}): {text}")
                return None
            return text
        near = difflib.get_close_matches(text, EVENT_ALIASES, n=1, cutoff=0.8)
        if near and text not in registered_event_types():
            self.problem(
                loc,
                f"'{text}' is not an event alias; did you mean '{near[0]}'? (aliases: "
                f"{', '.join(EVENT_ALIASES)}; write \"'{text}'\" for an event type of your own)",
            )
            return None
        return text

    def _function(self, loc: Loc, ref: str | None, kind: str) -> Callable[..., Any] | None:
        at: Loc = (*loc, "function")
        if ref is None:
            self.problem(
                at, f"'function' is required: '<module>:<qualname>' of the {kind}'s function"
            )
            return None
        module, sep, qualname = ref.partition(":")
        if not sep or not module or not qualname or ":" in qualname:
            head, dot, tail = ref.rpartition(".")
            hint = f"; did you mean '{head}:{tail}'?" if not sep and dot and head else ""
            self.problem(
                at,
                f"'{ref}' must be '<module>:<qualname>', e.g. 'my_pkg.actions:process_input' "
                f"or 'my_pkg.agents:MyAgent.process_input'{hint}",
            )
            return None
        names = [*module.split("."), *qualname.split(".")]
        if not all(part.isidentifier() for part in names):
            self.problem(at, f"'{ref}' is not '<module>:<qualname>' of Python names")
            return None
        if self.dry:
            return _DRY
        try:
            obj: Any = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            self.problem(
                at,
                f"cannot import '{module}': no module named '{exc.name}' (the module must be "
                "importable here and on the Flink workers)",
            )
            return None
        except Exception as exc:  # noqa: BLE001 - the module's own failure, reported
            self.problem(at, f"importing '{module}' failed: {type(exc).__name__}: {exc}")
            return None
        owner = module
        for part in qualname.split("."):
            found = getattr(obj, part, _MISSING)
            if found is _MISSING:
                names = [n for n in dir(obj) if not n.startswith("_")]
                self.problem(at, f"'{owner}' has no attribute '{part}'" + closest(part, names))
                return None
            obj, owner = found, f"{owner}.{part}" if owner != module else f"{module}:{part}"
        obj = unwrap(obj)
        if not callable(obj) or isinstance(obj, type):
            self.problem(at, f"'{ref}' is not a function")
            return None
        return obj

    def _check_action_signature(self, loc: Loc, func: Callable[..., Any]) -> None:
        try:
            params = list(inspect.signature(func).parameters.values())
        except (TypeError, ValueError):
            return
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if params and params[0].name == "self":
            self.problem(loc, "an action is a function (event, ctx), not a method taking self")
        elif len(positional) != 2 and not any(p.kind == p.VAR_POSITIONAL for p in params):
            self.problem(
                loc,
                f"an action takes two arguments (event, ctx); this one takes "
                f"{[p.name for p in params]}",
            )

    # -- schema errors -----------------------------------------------------------------
    def _schema_problem(self, err: Any) -> YamlProblem:
        loc = self.src.clean(err["loc"])
        if err["type"] == "missing":
            return self.src.problem(loc, f"'{loc[-1]}' is required")
        if err["type"] == "extra_forbidden":
            known = _known_keys(loc[:-1])
            return self.src.problem(
                loc,
                f"unknown key '{loc[-1]}'"
                + closest(str(loc[-1]), known)
                + (f" (known keys: {', '.join(known)})" if known else ""),
            )
        if err["type"] in ("model_type", "model_attributes_type") and loc[-2:-1] == ("actions",):
            return self.src.problem(
                loc,
                "an action is a mapping (name, function, listen_to) or the name of a shared action",
            )
        return self.src.problem(loc, _message(err))


class _Dry:
    """What the first pass gives for a class or function it does not import."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the first pass imports nothing and calls nothing")


_DRY: Any = _Dry()


def _in_file_order(problems: list[YamlProblem]) -> list[YamlProblem]:
    return sorted(problems, key=lambda p: (p.line or 0, p.column or 0))


def _fields(cls: type[Resource]) -> dict[str, Any]:
    """The arguments a resource class takes (field names and their aliases)."""
    fields: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if name == "get_resource":  # set by the runtime
            continue
        fields[name] = info
        for alias in (info.alias, info.validation_alias):
            if isinstance(alias, str):
                fields[alias] = info
    return fields


def _prompt(spec: PromptSpec) -> Prompt:
    if spec.text is not None:
        return Prompt.from_text(spec.text)
    return Prompt.from_messages(
        [ChatMessage(role=ChatRole(m.role.value), content=m.content) for m in spec.messages or []]
    )


def _message(err: Any) -> str:
    message = str(err["msg"])
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _known_keys(loc: Loc) -> list[str]:
    """The keys the schema allows in the mapping at ``loc``."""
    model: Any = YamlAgentsDocument
    for step in loc:
        if isinstance(step, int) or step not in model.model_fields:
            continue
        inner = _model_in(model.model_fields[step].annotation)
        if inner is None:
            return []
        model = inner
    return list(model.model_fields)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
