"""Events: what actions listen to and send.

Every event is a pydantic model that allows extra fields and has a unique ``id``. Each class
has its type string in ``EVENT_TYPE``; actions may listen by class (``@action(InputEvent)``)
or by type string (``@action("_input_event")``). A class that does not set ``EVENT_TYPE``
gets its import path (``module.QualName``) as type. A generic ``Event(type="my_type", ...)``
carries a type string without a class of its own; to listen to such a type by string, declare
it once with a class (``class MyEvent(Event): EVENT_TYPE = "my_type"``), so the plan compiler
can tell a typo from a real type.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any, ClassVar
from uuid import UUID, SafeUUID

from pydantic import BaseModel, ConfigDict, Field

_REGISTRY: dict[str, type[Event]] = {}

_RANDOM = random.Random()
# A forked child must not repeat its parent's ids (os.getpid() per id would cost a syscall).
os.register_at_fork(after_in_child=lambda: _RANDOM.seed(os.urandom(32)))


def _new_id() -> UUID:
    """A random (version 4) UUID.

    ``uuid4()`` reads ``os.urandom`` each time, which measured ~8 us per call here (a
    syscall, slower under load) and was the largest single cost of a short run. Event ids
    need uniqueness, not secrecy: a Mersenne Twister seeded from ``os.urandom`` (reseeded
    in a forked child) gives 122 random bits in ~1 us.
    """
    # What UUID(int=..., version=4) does, without its argument checks (a hot path): the
    # immutable UUID's slots are set through their descriptors (~0.3 us against ~0.9 us
    # for two object.__setattr__ calls).
    uid = _new_object(UUID)
    _set_uuid_int(uid, (_random_bits(128) & _VERSION_MASK) | _VERSION_BITS)
    _set_uuid_safe(uid, SafeUUID.unknown)
    return uid


_new_object = object.__new__
_set_uuid_int = UUID.__dict__["int"].__set__
_set_uuid_safe = UUID.__dict__["is_safe"].__set__
_random_bits = _RANDOM.getrandbits
# Version 4 and RFC 4122 variant bits, as uuid.UUID sets them.
_VERSION_MASK = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_VERSION_BITS = (4 << 76) | (0x8000 << 48)


class Event(BaseModel):
    """Base class of all events.

    Attributes:
        id: unique id of this event.
        type: the type string of a generic event (``None`` for subclasses, whose type is
            their ``EVENT_TYPE``).
    """

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    EVENT_TYPE: ClassVar[str] = "_event"

    id: UUID = Field(default_factory=_new_id)
    type: str | None = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if "EVENT_TYPE" not in cls.__dict__:
            # Under `python -m pkg.mod` the class is defined twice (as __main__.X and, when
            # the plan imports the actions, as pkg.mod.X): both must get the same type.
            from flink_agents.api._function import _real_module

            cls.EVENT_TYPE = f"{_real_module(cls.__module__)}.{cls.__qualname__}"
        # The first class to claim a type string keeps it; a test module re-imported
        # under another name must not steal a built-in type.
        _REGISTRY.setdefault(cls.EVENT_TYPE, cls)

    @property
    def event_type(self) -> str:
        """The type string actions are matched against."""
        return self.type or type(self).EVENT_TYPE

    def to_json(self) -> str:
        """Serialize to JSON, including the type string needed to read it back."""
        data = json.loads(self.model_dump_json())
        data["type"] = self.event_type
        return json.dumps(data, sort_keys=True)

    @staticmethod
    def from_json(text: str | bytes | dict[str, Any]) -> Event:
        """Read an event written by :meth:`to_json` back into its class.

        An unknown type string gives a generic :class:`Event` that keeps every field.
        """
        data = json.loads(text) if isinstance(text, (str, bytes)) else dict(text)
        etype = data.get("type")
        cls = event_class_for(etype) if etype else None
        if cls is None:
            return Event.model_validate(data)
        data.pop("type", None)
        return cls.model_validate(data)


def event_class_for(event_type: str) -> type[Event] | None:
    """The event class registered for a type string, importing its module if needed."""
    cls = _REGISTRY.get(event_type)
    if cls is None and "." in event_type:
        import importlib

        module, _, qual = event_type.rpartition(".")
        while module:
            try:
                obj: Any = importlib.import_module(module)
            except ImportError:
                module, _, head = module.rpartition(".")
                qual = f"{head}.{qual}"
                continue
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


class InputEvent(Event):
    """The event a run starts with; ``input`` is the record that arrived."""

    EVENT_TYPE: ClassVar[str] = "_input_event"
    input: Any


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
