"""Memory events: what an action read from and wrote to memory, as events (as in Apache
Flink Agents).

When an action finishes, the runtime folds the memory operations it made into at most one
event per memory scope and operation kind and sends them after the action's own events:

- ``_short_term_write_event`` (:class:`ShortTermWriteEvent`): ``{"a.b": value}``, dotted
  paths with the last value written to each (``new_object`` writes ``None``);
- ``_short_term_read_event`` (:class:`ShortTermReadEvent`): the values read (``get`` of a
  value, ``get_fields``), the last read of each path;
- ``_sensory_write_event`` / ``_sensory_read_event`` (:class:`SensoryWriteEvent`,
  :class:`SensoryReadEvent`): the same for sensory memory;
- ``_long_term_update_event`` (:class:`LongTermUpdateEvent`): ``{set: {item id: value}}``
  (``None``: the item was deleted), and ``cleared_sets``: sets deleted whole;
- ``_long_term_get_event`` (:class:`LongTermGetEvent`): ``{set: {item id: value}}``;
- ``_long_term_search_event`` (:class:`LongTermSearchEvent`): ``{set: {query: [{"id",
  "value", "score"}, ...]}}``, the last search of each query.

Every memory event has two attributes: ``key`` (the run's key as text) and ``value``. Which
operations become events is configured by :class:`~flink_agents.api.core_options.MemoryEventOptions`
(writes and long-term operations on, reads off by default). Actions may listen to them
(``@action(EventType.ShortTermWriteEvent)``); the memory operations of such an action do not
become events again. See docs/user-guide/memory.md, "Memory events".
"""

from __future__ import annotations

import base64
import json
from typing import Any, ClassVar, TypeVar

from pydantic import Field
from pydantic_core import from_json, to_json

from flink_agents.api.events.event import Event

_M = TypeVar("_M", bound=Event)


def observation_attributes(key: Any, value: Any) -> dict[str, Any]:
    """``{"key", "value"}`` of a memory or run-begin event: ``value`` checked and copied
    into its JSON form (bytes as base64 text, as upstream writes them).

    Raises:
        TypeError: ``key`` is not a str, ``value`` not a dict.
        ValueError: ``value`` holds something JSON cannot (NaN, infinity, an object).
    """
    if not isinstance(key, str):
        raise TypeError("Memory observation attribute 'key' must be a string")
    if not isinstance(value, dict):
        raise TypeError("Memory observation attribute 'value' must be a dict")
    try:
        normalized = json.loads(
            json.dumps(value, ensure_ascii=False, allow_nan=False, default=_encode_json_value)
        )
    except (TypeError, ValueError) as error:
        raise ValueError(f"Memory observation value must be JSON serializable ({error})") from None
    return {"key": key, "value": normalized}


def _checked_event(cls: type[_M], key: str, value: dict[str, Any], **more: Any) -> _M:
    """A memory (or run-begin) event of values the runtime already checked as JSON-like
    (memory values, long-term memory texts and hits): copied through pydantic_core (about a
    fifth of a json.dumps/loads round trip), without the constructor's checks."""
    event = cls.__new__(cls)
    copied = from_json(to_json(value, inf_nan_mode="null"))
    Event.__init__(event, type=cls.EVENT_TYPE, key=key, value=copied, **more)
    return event


def _encode_json_value(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class MemoryEvent(Event):
    """Base class of the seven memory events; make one of its subclasses.

    Attributes:
        key: the key of the run, as text.
        value: the operation's folded JSON map (see the module docstring).
    """

    EVENT_TYPE: ClassVar[str] = "_memory_event"
    # Normalized by the constructor (a JSON copy): no second check per event.
    _json_exempt: ClassVar[frozenset[str]] = frozenset({"value"})

    key: str
    value: dict[str, Any]

    def __init__(self, /, **data: Any) -> None:
        cls = type(self)
        if cls is MemoryEvent:
            raise TypeError("MemoryEvent is abstract; instantiate one of its subclasses")
        if "attributes" in data:
            data = cls._arguments(data)
        data.update(observation_attributes(data.get("key"), data.get("value")))
        data.setdefault("type", cls.EVENT_TYPE)
        super().__init__(**data)

    @classmethod
    def is_memory_type(cls, type: str | None) -> bool:  # noqa: A002 - upstream's name
        """Whether ``type`` is one of the seven memory event types."""
        return type in _TYPE_TO_CLASS

    @classmethod
    def from_event(cls, event: Event) -> Any:
        """``event`` as its memory event class (chosen by its type, whichever class this
        is called on), with the same id.

        Raises:
            ValueError: ``event`` is no memory event.
            TypeError: its ``key`` / ``value`` / ``cleared_sets`` are of the wrong kind.
        """
        subclass = _TYPE_TO_CLASS.get(event.type)
        if subclass is None:
            raise ValueError(f"Not a memory event type: {event.type}")
        if isinstance(event, subclass):
            return event
        attributes = event.attributes
        kwargs: dict[str, Any] = {"key": attributes.get("key"), "value": attributes.get("value")}
        if subclass is LongTermUpdateEvent:
            kwargs["cleared_sets"] = attributes.get("cleared_sets", [])
        return subclass(**kwargs).reconstruct_from(event)


class ShortTermWriteEvent(MemoryEvent):
    """The short-term memory writes of one action execution."""

    EVENT_TYPE: ClassVar[str] = "_short_term_write_event"


class ShortTermReadEvent(MemoryEvent):
    """The short-term memory reads of one action execution."""

    EVENT_TYPE: ClassVar[str] = "_short_term_read_event"


class SensoryWriteEvent(MemoryEvent):
    """The sensory memory writes of one action execution."""

    EVENT_TYPE: ClassVar[str] = "_sensory_write_event"


class SensoryReadEvent(MemoryEvent):
    """The sensory memory reads of one action execution."""

    EVENT_TYPE: ClassVar[str] = "_sensory_read_event"


class LongTermUpdateEvent(MemoryEvent):
    """Long-term memory adds, updates and deletes of one action execution.

    Attributes:
        cleared_sets: memory sets deleted whole; writes to such a set made after its
            clearing stay in ``value``.
    """

    EVENT_TYPE: ClassVar[str] = "_long_term_update_event"

    cleared_sets: list[str] = Field(default_factory=list)

    def __init__(self, /, **data: Any) -> None:
        cleared = data.get("cleared_sets")
        if cleared is None:
            data["cleared_sets"] = []
        elif not isinstance(cleared, list):
            raise TypeError("Long-term update 'cleared_sets' must be a list")
        elif not all(isinstance(name, str) for name in cleared):
            raise TypeError("Long-term update 'cleared_sets' must contain only strings")
        else:
            data["cleared_sets"] = list(cleared)
        super().__init__(**data)


class LongTermGetEvent(MemoryEvent):
    """Long-term memory items read by id or filter in one action execution."""

    EVENT_TYPE: ClassVar[str] = "_long_term_get_event"


class LongTermSearchEvent(MemoryEvent):
    """Long-term memory searches of one action execution: ``value`` (also ``results``)
    maps each memory set to ``{query: [{"id", "value", "score"}, ...]}``, best first."""

    EVENT_TYPE: ClassVar[str] = "_long_term_search_event"

    @property
    def results(self) -> dict[str, dict[str, list[dict[str, Any]]]]:
        """Memory set -> query -> hits, best first (the same map as ``value``)."""
        return self.value


_TYPE_TO_CLASS: dict[str, type[MemoryEvent]] = {
    cls.EVENT_TYPE: cls
    for cls in (
        ShortTermWriteEvent,
        ShortTermReadEvent,
        SensoryWriteEvent,
        SensoryReadEvent,
        LongTermUpdateEvent,
        LongTermGetEvent,
        LongTermSearchEvent,
    )
}

#: The seven memory event type strings.
MEMORY_EVENT_TYPES: frozenset[str] = frozenset(_TYPE_TO_CLASS)
