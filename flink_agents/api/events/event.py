"""Events: what actions listen to and send.

Two styles work side by side, as in Apache Flink Agents:

- **Unified events**: ``Event(type="my_type", attributes={"field1": "x", "field2": 42})``,
  read with ``event.get_attr("field1")``; no class needed. Actions listen to any type string
  (``@action("my_type")``).
- **Event classes**: subclasses with typed fields (``class CountEvent(Event): n: int``) or
  with an ``__init__`` that passes ``attributes`` (upstream's style). Each class has its type
  string in ``EVENT_TYPE``; a class that does not set it gets its import path
  (``module.QualName``). Actions may listen by class (``@action(InputEvent)``) or by type
  string (``@action("_input_event")``).

Every event has ``id``, ``type`` (``get_type()``; for a class its ``EVENT_TYPE`` unless given),
and attributes: its fields other than ``id`` and ``type`` (for classes with typed fields) plus
any extra ones. ``event.attributes`` is a live mapping of them; ``get_attr`` / ``set_attr`` read
and write one. ``XxxEvent.from_event(event)`` reads any event with the right attributes as the
class (an action listening by type string may get a generic event).

Attribute values must be JSON serializable (JSON values, pydantic models, dataclasses, dates,
UUIDs, enums, pyflink ``Row``\\ s...): anything else raises :class:`EventAttributeError` when
the event is made and at ``set_attr``, as upstream validates them. Typed fields are checked by
pydantic; fields typed ``Any`` (also inside ``dict``/``list``) and extra attributes are
checked here.
"""

from __future__ import annotations

import builtins
import inspect
import json
import os
import random
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any, ClassVar, TypeVar, get_args, get_origin
from uuid import UUID, SafeUUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from flink_agents.errors import EventAttributeError

_REGISTRY: dict[str, type[Event]] = {}
_E = TypeVar("_E", bound="Event")

_RANDOM = random.Random()
# A forked child must not repeat its parent's ids (os.getpid() per id would cost a syscall).
os.register_at_fork(after_in_child=lambda: _RANDOM.seed(os.urandom(32)))


def _new_id() -> UUID:
    """A random (version 4) UUID.

    ``uuid4()`` reads ``os.urandom`` each time (a syscall, slower under load), which was
    the largest single cost of a short run. Event ids need uniqueness, not secrecy: a
    Mersenne Twister seeded from ``os.urandom`` (reseeded in a forked child) gives 122
    random bits several times faster (figures: docs/ARCHITECTURE.md, section 6).
    """
    # What UUID(int=..., version=4) does, without its argument checks (a hot path): the
    # immutable UUID's slots are set through their descriptors (a third of the cost of
    # two object.__setattr__ calls).
    uid = _new_object(UUID)
    _set_uuid_int(uid, (_random_bits(128) & _VERSION_MASK) | _VERSION_BITS)
    _set_uuid_safe(uid, _SAFE_UNKNOWN)
    return uid


_new_object = object.__new__
_set_attribute = object.__setattr__
_set_uuid_int = UUID.__dict__["int"].__set__
_set_uuid_safe = UUID.__dict__["is_safe"].__set__
_random_bits = _RANDOM.getrandbits
# An enum member read through its class runs enum's Python-level descriptor each time.
_SAFE_UNKNOWN = SafeUUID.unknown
# Version 4 and RFC 4122 variant bits, as uuid.UUID sets them.
_VERSION_MASK = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_VERSION_BITS = (4 << 76) | (0x8000 << 48)

# -- JSON checks ----------------------------------------------------------------------------

#: Names that are the event's own fields, never attributes.
_RESERVED = frozenset({"id", "type"})
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _is_row(value: Any) -> bool:
    """Whether ``value`` is a pyflink ``Row`` (duck-typed: ``api`` never imports pyflink)."""
    cls = type(value)
    return (
        cls.__name__ == "Row" and cls.__module__.startswith("pyflink") and hasattr(value, "_values")
    )


def _row_json(value: Any) -> dict[str, Any]:
    """A ``Row`` as Apache Flink Agents writes it: ``{"type": "Row", "values", "fields"}``."""
    result: dict[str, Any] = {"type": "Row", "values": list(value._values)}
    fields = getattr(value, "_fields", None)
    if fields:
        result["fields"] = list(fields)
    return result


def _json_fallback(value: Any) -> Any:
    if _is_row(value):
        return _row_json(value)
    raise PydanticSerializationError(f"Unable to serialize unknown type: {type(value)}")


def _json_problem(value: Any) -> str | None:
    """Why ``value`` cannot be written as JSON (None when it can).

    Pydantic's serializer judges, as upstream's ``model_dump_json`` does (with Rows
    written as upstream writes them); it runs in Rust, so checking a large record costs
    about half of what a Python walk would. This runs for every
    event made, so scalars return at once.
    """
    cls = type(value)
    if cls in _SCALARS:
        return None
    try:
        to_json(value, fallback=_json_fallback)
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        return f"{cls.__module__}.{cls.__qualname__} value ({str(exc).strip()})"
    return None


_SAFE_TYPES = (str, int, float, bool, type(None), UUID)


def _needs_check(annotation: Any) -> bool:
    """Whether values of a field with this annotation may be something JSON cannot hold
    (``Any``, ``dict[str, Any]``...); scalars and pydantic models are pydantic's job."""
    if annotation in _SAFE_TYPES:
        return False
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return False
    args = get_args(annotation)
    if get_origin(annotation) is None or not args:
        return True
    return any(_needs_check(arg) for arg in args if arg is not Ellipsis)


def _check_attribute(event: Event, name: str, value: Any, *, assigning: bool = False) -> None:
    """Raise when ``value`` cannot be written as JSON: :class:`EventAttributeError` (a
    pydantic ``ValidationError``) while the event is made, pydantic's
    ``PydanticSerializationError`` when it is assigned to an existing event (both as in
    Apache Flink Agents)."""
    problem = _json_problem(value)
    if problem:
        message = (
            f"attribute {name!r} of {type(event).__name__}(type={event.type!r}) is not JSON "
            f"serializable: {problem}. Event attributes must be JSON values (str, numbers, "
            "bool, None, lists, dicts with string keys), pydantic models, dataclasses or "
            "pyflink Rows; convert the value, or keep it in memory and pass a reference"
        )
        if assigning:
            raise PydanticSerializationError(message)
        raise EventAttributeError(message, type(event).__name__)


def _reconstruct_rows(value: Any) -> Any:
    """``{"type": "Row", "values": ...}`` dicts back into pyflink Rows, when pyflink is
    loaded (this module never imports it)."""
    common = sys.modules.get("pyflink.common")
    if common is None:
        return value
    if isinstance(value, dict):
        if value.get("type") == "Row" and "values" in value:
            values = [_reconstruct_rows(v) for v in value["values"]]
            fields = value.get("fields")
            if fields:
                return common.Row(**dict(zip(fields, values, strict=False)))
            return common.Row(*values)
        return {k: _reconstruct_rows(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_reconstruct_rows(v) for v in value]
    return value


def _flatten_attributes(data: dict[str, Any], attributes: Any) -> dict[str, Any]:
    """``data`` with the entries of an ``attributes`` argument moved to the top level
    (where fields and extra attributes live)."""
    if not isinstance(attributes, Mapping):
        raise EventAttributeError(
            f"attributes must be a dict of name -> value, got {type(attributes).__name__}"
        )
    merged = dict(data)
    for name, value in attributes.items():
        if name in _RESERVED:
            raise EventAttributeError(
                f"{name!r} cannot be an attribute name: it is the event's own field "
                f"(pass {name}=... to the event, not in attributes)"
            )
        if name in merged:
            raise EventAttributeError(f"attribute {name!r} is given twice")
        merged[name] = value
    return merged


def _nest_attributes(data: Any, top_level: frozenset[str] = frozenset()) -> Any:
    """A flat event dump (attributes beside id and type) in upstream's shape; the fields
    named in ``top_level`` stay beside id and type (see :meth:`Event._top_level_fields`)."""
    if not isinstance(data, dict):
        return data
    nested: dict[str, Any] = {}
    if "id" in data:
        nested["id"] = data.pop("id")
    if "type" in data:
        nested["type"] = data.pop("type")
    for name in top_level:
        if name in data:
            nested[name] = data.pop(name)
    nested["attributes"] = data
    return nested


class _Attributes(MutableMapping[str, Any]):
    """The live view ``event.attributes``: fields other than id/type, then extras."""

    __slots__ = ("_event",)

    def __init__(self, event: Event) -> None:
        self._event = event

    def _fields(self) -> list[str]:
        return [n for n in self._event.__dict__ if n not in _RESERVED]

    def __getitem__(self, name: str) -> Any:
        fields = self._event.__dict__
        if name in fields and name not in _RESERVED:
            return fields[name]
        extra = self._event.__pydantic_extra__
        if extra and name in extra:
            return extra[name]
        raise KeyError(name)

    def __setitem__(self, name: str, value: Any) -> None:
        self._event.set_attr(name, value)

    def __delitem__(self, name: str) -> None:
        extra = self._event.__pydantic_extra__
        if extra and name in extra:
            del extra[name]
            return
        if name in self._event.__dict__:
            raise TypeError(f"{name!r} is a field of {type(self._event).__name__}; set it instead")
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        yield from self._fields()
        yield from self._event.__pydantic_extra__ or ()

    def __len__(self) -> int:
        return len(self._fields()) + len(self._event.__pydantic_extra__ or ())

    def __repr__(self) -> str:
        return repr(dict(self))


class Event(BaseModel):
    """Base class of all events, and the unified event itself.

    Args:
        type: the type string actions are matched against (required for a plain
            ``Event``; a subclass defaults to its ``EVENT_TYPE``).
        attributes: the event's data, ``name -> JSON-serializable value``.
        **fields: typed fields of a subclass, or further attributes.

    Attributes:
        id: unique id of this event.
        type: the type string.
    """

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    EVENT_TYPE: ClassVar[str] = "_event"
    #: Declared fields (other than id/type) whose values this module checks for JSON:
    #: those typed ``Any``, ``dict[str, Any]``...; fields of scalar or pydantic model types
    #: are checked by pydantic. Set per class.
    _json_checked: ClassVar[tuple[str, ...]] = ()
    #: Fields typed ``Any`` that a class serializes itself (skipped by the check).
    _json_exempt: ClassVar[frozenset[str]] = frozenset()
    #: Per class (read from the class's own ``__dict__``): see :meth:`_top_level_fields`.
    _top_level_cache: ClassVar[frozenset[str] | None] = None

    id: UUID = Field(default_factory=_new_id)
    type: str = "_event"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Runs before pydantic collects the fields: give `type` the class's EVENT_TYPE as
        # default, so `event.type` needs no work per event.
        super().__init_subclass__(**kwargs)
        if "EVENT_TYPE" not in cls.__dict__:
            # Under `python -m pkg.mod` the class is defined twice (as __main__.X and, when
            # the plan imports the actions, as pkg.mod.X): both must get the same type.
            from flink_agents.api._function import _real_module

            cls.EVENT_TYPE = f"{_real_module(cls.__module__)}.{cls.__qualname__}"
        own = inspect.get_annotations(cls)
        if "type" not in own:
            cls.__annotations__ = {**own, "type": str}
            cls.type = cls.EVENT_TYPE

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._json_checked = tuple(
            name
            for name, info in cls.model_fields.items()
            if name not in _RESERVED
            and name not in cls._json_exempt
            and _needs_check(info.annotation)
        )
        # The first class to claim a type string keeps it; a test module re-imported
        # under another name must not steal a built-in type.
        _REGISTRY.setdefault(cls.EVENT_TYPE, cls)

    def __init__(self, /, **data: Any) -> None:
        # On the hot path (every event): pydantic's validator is called directly instead of
        # through BaseModel.__init__, the checked values are read from the arguments (the
        # validated ones are the same objects), and scalars skip the JSON check.
        if "attributes" in data or (type(self) is Event and "type" not in data):
            data = self._arguments(data)
        self.__pydantic_validator__.validate_python(data, self_instance=self)
        for name in self._json_checked:
            value = data.get(name)
            if type(value) not in _SCALARS and _json_problem(value):
                _check_attribute(self, name, value)  # raises, naming the problem
        extra = self.__pydantic_extra__
        if extra:
            for name, value in extra.items():
                if type(value) not in _SCALARS and _json_problem(value):
                    _check_attribute(self, name, value)

    @classmethod
    def _arguments(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Constructor arguments with ``attributes`` moved to the top level; a plain
        ``Event`` without a type is an error."""
        if "attributes" in data:
            data = _flatten_attributes(data, data.pop("attributes") or {})
        if cls is Event and "type" not in data:
            raise EventAttributeError(
                "a plain Event needs a type: Event(type='my_type', attributes={...})"
            )
        return data

    # Pydantic calls a model's own __init__ from model_validate (an extra validation pass
    # that doubled its cost); this one only adds checks to construction, so pydantic may
    # treat it as its base __init__. model_validate flattens `attributes` itself (below).
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _RESERVED and not name.startswith("_") and name not in self._json_exempt:
            _check_attribute(self, name, value, assigning=True)
        super().__setattr__(name, value)

    # -- unified event API (as Apache Flink Agents) ---------------------------------------
    def get_type(self) -> str:
        """The type string actions are matched against."""
        return self.type

    @property
    def event_type(self) -> str:
        """Same as :meth:`get_type` (kept for code written against earlier versions)."""
        return self.type

    @property
    def attributes(self) -> MutableMapping[str, Any]:
        """The event's data as a live mapping: its fields other than ``id`` and ``type``,
        then extra attributes. Writing to it is :meth:`set_attr`."""
        return _Attributes(self)

    def get_attr(self, name: str) -> Any:
        """The attribute ``name`` (a field or an extra attribute), or None."""
        fields = self.__dict__
        if name in fields and name not in _RESERVED:
            return fields[name]
        extra = self.__pydantic_extra__
        return extra.get(name) if extra else None

    def set_attr(self, name: str, value: Any) -> None:
        """Set the attribute ``name``; the value must be JSON serializable.

        Raises:
            PydanticSerializationError: ``value`` cannot be written as JSON (pydantic's
                error, as upstream raises when an event is changed).
            EventAttributeError: ``name`` is ``id`` / ``type``.
        """
        if name in _RESERVED:
            raise EventAttributeError(
                f"{name!r} is the event's own field, not an attribute; set event.{name}"
            )
        if name not in self._json_exempt:
            _check_attribute(self, name, value, assigning=True)
        if name in self.__dict__:
            BaseModel.__setattr__(self, name, value)
            return
        if self.__pydantic_extra__ is None:
            object.__setattr__(self, "__pydantic_extra__", {})
        self.__pydantic_extra__[name] = value  # type: ignore[index]

    @classmethod
    def _trusted(cls: builtins.type[_E], fields: dict[str, Any]) -> _E:
        """An event of this class made from field values the framework itself made and
        knows to be valid, skipping the validator (the runtime's own events on the hot
        path: the input event, the chat action's response). Equal to what the constructor
        makes from the same values; ``fields`` holds every declared field but ``id`` and
        ``type`` (in declaration order) and nothing else. User-built events always go
        through the constructor and its checks.
        """
        event = _new_object(cls)
        _set_attribute(event, "__dict__", {"id": _new_id(), "type": cls.EVENT_TYPE, **fields})
        _set_attribute(event, "__pydantic_fields_set__", set(fields))
        _set_attribute(event, "__pydantic_extra__", {})
        _set_attribute(event, "__pydantic_private__", None)
        return event

    @classmethod
    def from_event(cls: builtins.type[_E], event: Event) -> _E:
        """``event`` as this class: itself if it already is one, else a new instance made
        from its attributes with the same ``id`` (for an action that listens by type
        string and gets a generic ``Event``).

        Raises:
            EventAttributeError: the event lacks attributes this class needs.
        """
        if isinstance(event, cls):
            return event
        try:
            made = cls(**dict(event.attributes))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'event'}: {err['msg']}"
                for err in exc.errors()
            )
            raise EventAttributeError(
                f"cannot read {type(event).__name__}(type={event.type!r}) as {cls.__name__}: "
                f"{problems}"
            ) from None
        return made.reconstruct_from(event)

    def reconstruct_from(self: _E, source: Event) -> _E:
        """A copy of this event with ``source``'s id: the same event occurrence, typed."""
        return self.model_copy(update={"id": source.id})

    # -- JSON -------------------------------------------------------------------------------
    # The public dump methods give Apache Flink Agents' shape, ``{"id", "type",
    # "attributes": {...}}``. The model's own serializer (``__pydantic_serializer__``,
    # pydantic_core's ``to_json(event)``) keeps the attributes next to id and type: the
    # event log reads that on the hot path (a wrap serializer to reshape it cost ~2.4 us
    # per event), and both shapes are read back by model_validate / from_json.
    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """Pydantic's ``model_dump`` in upstream's shape: ``{"id", "type", "attributes"}``;
        the fields a user's event class declares stay beside them, as upstream's pydantic
        model keeps them."""
        return _nest_attributes(super().model_dump(**kwargs), type(self)._top_level_fields())

    @classmethod
    def _top_level_fields(cls) -> frozenset[str]:
        """Fields a dump keeps at the top level: those a user's subclass declares. Our own
        event classes (``flink_agents.*``) declare as fields what upstream's keep in
        ``attributes``, so theirs are nested."""
        cached = cls.__dict__.get("_top_level_cache")
        if cached is None:
            if cls.__module__.startswith("flink_agents."):
                cached = frozenset()
            else:
                cached = frozenset(cls.model_fields) - _RESERVED
            cls._top_level_cache = cached
        return cached

    def model_dump_json(self, **kwargs: Any) -> str:
        """Pydantic's ``model_dump_json`` in upstream's shape (``{"id", "type",
        "attributes": {...}}``), writing pyflink Rows as upstream does (``{"type": "Row",
        "values", "fields"}``) unless another ``fallback`` is given."""
        kwargs.setdefault("fallback", _json_fallback)
        indent = kwargs.pop("indent", None)
        ensure_ascii = kwargs.pop("ensure_ascii", False)
        kwargs.setdefault("mode", "json")
        data = self.model_dump(**kwargs)
        text = to_json(data, indent=indent).decode()
        if ensure_ascii:
            return json.dumps(json.loads(text), indent=indent, ensure_ascii=True)
        return text

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Any:
        """Pydantic's ``model_validate``, also reading upstream's ``attributes`` key."""
        if isinstance(obj, dict) and isinstance(obj.get("attributes"), Mapping):
            rest = {k: v for k, v in obj.items() if k != "attributes"}
            obj = _flatten_attributes(rest, obj["attributes"])
        return super().model_validate(obj, *args, **kwargs)

    @classmethod
    def model_validate_json(
        cls, json_data: str | bytes | bytearray, *args: Any, **kwargs: Any
    ) -> Any:
        """Pydantic's ``model_validate_json``, also reading upstream's ``attributes`` key."""
        return cls.model_validate(json.loads(json_data), *args, **kwargs)

    def to_json(self) -> str:
        """Serialize to JSON in upstream's shape, keys sorted."""
        data = json.loads(self.model_dump_json())
        return json.dumps(data, sort_keys=True)

    @staticmethod
    def from_json(text: str | bytes | dict[str, Any]) -> Event:
        """Read an event written by :meth:`to_json` (or by Apache Flink Agents, with its
        ``attributes`` object) back into its class.

        Only event classes defined so far are used: the built-ins and those of modules
        already imported (the plan's actions import theirs). A type string is never
        imported as a module: JSON from elsewhere must not run code. An unknown type
        string gives a generic :class:`Event` that keeps every attribute. Rows come back
        as pyflink ``Row``\\ s when pyflink is loaded.

        Raises:
            ValueError: the JSON has no ``type``.
        """
        data = json.loads(text) if isinstance(text, (str, bytes)) else dict(text)
        if not isinstance(data, dict):
            raise ValueError(f"Event JSON must be an object, got {type(data).__name__}")
        etype = data.get("type")
        if not etype or not isinstance(etype, str):
            raise ValueError("Event JSON must contain a non-empty 'type' field (a string).")
        if isinstance(data.get("attributes"), Mapping):
            rest = {k: v for k, v in data.items() if k != "attributes"}
            data = _flatten_attributes(rest, data["attributes"])
        if "pyflink.common" in sys.modules:
            data = {k: v if k in _RESERVED else _reconstruct_rows(v) for k, v in data.items()}
        cls = event_class_for(etype, import_module=False) or Event
        if cls.__init__ is not Event.__init__:
            # A class with an __init__ of its own (upstream's style) takes its own arguments,
            # not the JSON's: read a generic event, then let the class's from_event build it.
            return cls.from_event(Event.model_validate(data))
        event: Event = cls.model_validate(data)
        return event


def event_class_for(event_type: str, *, import_module: bool = True) -> type[Event] | None:
    """The event class registered for a type string.

    Args:
        event_type: the type string.
        import_module: for a ``module.QualName`` type whose class is not defined yet, import
            its module (False: only look at classes defined so far, which is cheap).
    """
    cls = _REGISTRY.get(event_type)
    if cls is None and import_module and "." in event_type:
        import importlib

        module, _, qual = event_type.rpartition(".")
        while module:
            try:
                obj: Any = importlib.import_module(module)
            except ImportError:
                module, _, head = module.rpartition(".")
                qual = f"{head}.{qual}"
                continue
            except Exception:  # noqa: BLE001 - a unified type like "order.created" is no module
                break
            for part in qual.split("."):
                obj = getattr(obj, part, None)
            if isinstance(obj, type) and issubclass(obj, Event):
                return obj
            break
    if cls is None:
        cls = _loaded_subclass(event_type)
    return cls


def _loaded_subclass(event_type: str) -> type[Event] | None:
    """A loaded subclass whose ``EVENT_TYPE`` is ``event_type`` (registered on the way).

    Classes of a job script reach Flink's workers by value (cloudpickle): cloudpickle makes
    the class first and sets its attributes (``EVENT_TYPE`` among them) afterwards, so the
    registration at class creation saw a provisional type string.
    """
    stack = list(Event.__subclasses__())
    while stack:
        sub = stack.pop()
        if sub.__dict__.get("EVENT_TYPE") == event_type:
            _REGISTRY.setdefault(event_type, sub)
            return sub
        stack.extend(sub.__subclasses__())
    return None


def registered_event_types() -> list[str]:
    """Type strings of every event class defined so far."""
    return sorted(_REGISTRY)


class InputEvent(Event):
    """The event a run starts with; ``input`` is the record that arrived."""

    EVENT_TYPE: ClassVar[str] = "_input_event"
    input: Any

    @classmethod
    def of_record(cls, record: Any) -> InputEvent:
        """The input event of ``record`` as the constructor makes it (``input`` is typed
        ``Any``: the JSON check is the only one), without the validator's cost: the
        runtime makes one per run.

        Raises:
            EventAttributeError: ``record`` cannot be written as JSON.
        """
        event = cls._trusted({"input": record})
        if type(record) not in _SCALARS and _json_problem(record):
            _check_attribute(event, "input", record)  # raises, naming the problem
        return event


class OutputEvent(Event):
    """An event whose ``output`` leaves the agent as an output record."""

    EVENT_TYPE: ClassVar[str] = "_output_event"
    output: Any


class ErrorEvent(Event):
    """Sent by the runtime when an action failed and the error strategy kept the run going.

    Actions may listen to it (``@action(ErrorEvent)``) to react to failures; it is also
    written to the log. Attributes name where the failure happened.
    """

    EVENT_TYPE: ClassVar[str] = "_error_event"
    key: Any = None
    action: str | None = None
    failed_event_id: str | None = None
    failed_event_type: str | None = None
    error_type: str = ""
    error: str = ""


_REGISTRY[Event.EVENT_TYPE] = Event
