"""Memory events and the agent-run-begin event in the run loop (the events themselves:
``api/events/memory_event.py``, ``api/events/run_event.py``).

With memory events on, the runner makes each action's context an :class:`ObservedRunContext`
(a plain :class:`RunContext` otherwise: nothing on the memory path changes). It hands the
action memory views that note writes and reads (:class:`ObservedMemoryObject`) and a
long-term memory that notes its operations; when the action succeeds,
:meth:`ObservedRunContext.memory_events` folds them into at most one event per scope and
operation kind, which go after the action's own events. A failed attempt's notes go with its
context (a retry starts afresh). An action triggered by a memory event gets no observation
(no events about events). See docs/ARCHITECTURE.md, section 6.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flink_agents.api.core_options import AgentConfiguration, MemoryEventOptions
from flink_agents.api.events.event import Event
from flink_agents.api.events.memory_event import (
    MEMORY_EVENT_TYPES,
    LongTermGetEvent,
    LongTermSearchEvent,
    LongTermUpdateEvent,
    MemoryEvent,
    SensoryReadEvent,
    SensoryWriteEvent,
    ShortTermReadEvent,
    ShortTermWriteEvent,
    _checked_event,
)
from flink_agents.api.events.run_event import AgentRunBeginEvent
from flink_agents.api.memory.long_term_memory import BaseLongTermMemory
from flink_agents.api.memory_object import MemoryObject
from flink_agents.runtime.core.context import RunContext
from flink_agents.runtime.memory import OBJECT, MemoryStore, ObservedMemoryObject

if TYPE_CHECKING:
    from flink_agents.plan.agent_plan import ActionPlan
    from flink_agents.runtime.core.context import _Run

log = logging.getLogger("flink_agents.runtime")


@dataclass(frozen=True)
class MemoryEventSettings:
    """Which memory operations become events (resolved once per runner).

    Each switch is its own option if set, else ``memory.generate-event`` if set, else its
    default: writes and long-term operations on, short-term and sensory reads off (as
    upstream resolves them).
    """

    short_term_write: bool = True
    short_term_read: bool = False
    sensory_write: bool = True
    sensory_read: bool = False
    long_term_update: bool = True
    long_term_get: bool = True
    long_term_search: bool = True

    @classmethod
    def from_config(cls, config: AgentConfiguration) -> MemoryEventSettings:
        master = config.get(MemoryEventOptions.MEMORY_GENERATE_EVENT)
        values: dict[str, bool] = {}
        for name, option in (
            ("short_term_write", MemoryEventOptions.SHORT_TERM_WRITE),
            ("short_term_read", MemoryEventOptions.SHORT_TERM_READ),
            ("sensory_write", MemoryEventOptions.SENSORY_WRITE),
            ("sensory_read", MemoryEventOptions.SENSORY_READ),
            ("long_term_update", MemoryEventOptions.LONG_TERM_UPDATE),
            ("long_term_get", MemoryEventOptions.LONG_TERM_GET),
            ("long_term_search", MemoryEventOptions.LONG_TERM_SEARCH),
        ):
            own = config.get(option)
            if own is not None:
                values[name] = bool(own)
            elif master is not None:
                values[name] = bool(master)
        return cls(**values)

    @functools.cached_property
    def any(self) -> bool:
        """Whether any operation becomes an event."""
        return any(getattr(self, f.name) for f in dataclasses.fields(self))

    @functools.cached_property
    def long_term_ops(self) -> frozenset[str]:
        """The long-term operations noted: ``update``, ``get``, ``search``."""
        return frozenset(
            op
            for op, on in (
                ("update", self.long_term_update),
                ("get", self.long_term_get),
                ("search", self.long_term_search),
            )
            if on
        )


class ObservedRunContext(RunContext):
    """A :class:`RunContext` whose memory notes what the action reads and writes."""

    # What the action did, made when it first touches that memory (most actions touch
    # none): class defaults, so making a context sets two attributes more than the plain one.
    _short_term_writes: dict[str, Any] | None = None
    _short_term_reads: dict[str, Any] | None = None
    _sensory_writes: dict[str, Any] | None = None
    _sensory_reads: dict[str, Any] | None = None
    _long_term: list[tuple[Any, ...]] | None = None
    #: Whether the action touched memory (the loop asks for events only then).
    noted = False

    def __init__(self, run: _Run, action: ActionPlan, event: Event) -> None:
        # RunContext.__init__ written out (one call less per action execution).
        self._run = run
        self._action = action
        self._event = event
        self._sent: list[Event] = []
        # An action triggered by a memory event makes none (no events about events).
        self._observing = event.type not in MEMORY_EVENT_TYPES

    @property
    def _settings(self) -> MemoryEventSettings:
        return self._run.runner.memory_event_settings  # type: ignore[return-value]

    @staticmethod
    def _view(
        store: MemoryStore, writes: dict[str, Any] | None, reads: dict[str, Any] | None
    ) -> MemoryObject:
        return ObservedMemoryObject(store, "", writes, reads)

    @property
    def short_term_memory(self) -> MemoryObject:
        settings = self._settings
        if self._observing and self._short_term_writes is None and self._short_term_reads is None:
            self._short_term_writes = {} if settings.short_term_write else None
            self._short_term_reads = {} if settings.short_term_read else None
            self.noted = True
        writes, reads = self._short_term_writes, self._short_term_reads
        if writes is None and reads is None:
            return super().short_term_memory
        return self._view(self._run.short_term, writes, reads)

    @property
    def sensory_memory(self) -> MemoryObject:
        settings = self._settings
        if self._observing and self._sensory_writes is None and self._sensory_reads is None:
            self._sensory_writes = {} if settings.sensory_write else None
            self._sensory_reads = {} if settings.sensory_read else None
            self.noted = True
        writes, reads = self._sensory_writes, self._sensory_reads
        if writes is None and reads is None:
            return super().sensory_memory
        return self._view(self._run.sensory, writes, reads)

    @property
    def long_term_memory(self) -> BaseLongTermMemory:
        memory = super().long_term_memory
        ops = self._settings.long_term_ops
        if self._observing and ops:
            if self._long_term is None:
                self._long_term = []
                self.noted = True
            observe = getattr(memory, "observe", None)
            if observe is not None:
                observe(self._long_term, ops)
        return memory

    def memory_events(self) -> list[Event]:
        """The events of what the action did to memory (at most one per scope and kind),
        in upstream's order: writes (sensory, short-term), reads (sensory, short-term),
        long-term (update, get, search)."""
        if not (
            self._short_term_writes
            or self._sensory_writes
            or self._short_term_reads
            or self._sensory_reads
            or self._long_term
        ):
            return []
        key = str(self._run.key)
        events: list[Event] = []
        for cls, values in (
            (SensoryWriteEvent, self._sensory_writes),
            (ShortTermWriteEvent, self._short_term_writes),
            (SensoryReadEvent, self._sensory_reads),
            (ShortTermReadEvent, self._short_term_reads),
        ):
            if values:
                _add(events, cls, key=key, value=values)
        if self._long_term:
            events.extend(long_term_events(key, self._long_term, self._settings))
        return events


def _add(
    events: list[Event], cls: type[MemoryEvent], key: str, value: dict[str, Any], **more: Any
) -> None:
    """Make a memory event of values memory already checked as JSON-like; one that cannot
    be made is skipped with a warning (never its values): observation never fails an
    action."""
    try:
        events.append(_checked_event(cls, key, value, **more))
    except (TypeError, ValueError) as exc:
        log.warning(
            "skipping a %s: its value is not JSON-compatible (%s)", cls.EVENT_TYPE, type(exc)
        )


def long_term_events(
    key: str, records: list[tuple[Any, ...]], settings: MemoryEventSettings
) -> list[Event]:
    """Fold long-term memory records ``(op, set, item id, query, value)`` into at most an
    update, a get and a search event (as upstream's ``MemoryEventBuilder``): the last
    operation on an item wins; clearing a set drops its earlier writes and is listed in
    ``cleared_sets``."""
    updates: dict[str, dict[str, Any]] = {}
    gets: dict[str, dict[str, Any]] = {}
    searches: dict[str, dict[str, Any]] = {}
    cleared: dict[str, None] = {}
    for op, memory_set, item_id, query, value in records:
        if op == "DELETE_SET":
            updates.pop(memory_set, None)
            cleared[memory_set] = None
        elif op in ("ADD", "UPDATE") and item_id:
            updates.setdefault(memory_set, {})[item_id] = value
        elif op == "DELETE" and item_id:
            updates.setdefault(memory_set, {})[item_id] = None
        elif op == "GET" and item_id:
            gets.setdefault(memory_set, {})[item_id] = value
        elif op == "SEARCH" and query:
            searches.setdefault(memory_set, {})[query] = value
    events: list[Event] = []
    if settings.long_term_update and (updates or cleared):
        _add(events, LongTermUpdateEvent, key=key, value=updates, cleared_sets=list(cleared))
    if settings.long_term_get and gets:
        _add(events, LongTermGetEvent, key=key, value=gets)
    if settings.long_term_search and searches:
        _add(events, LongTermSearchEvent, key=key, value=searches)
    return events


def run_begin_event(key: Any, store: MemoryStore) -> AgentRunBeginEvent | None:
    """The :class:`AgentRunBeginEvent` of a run: the key's short-term memory values (not
    its objects) when the run starts. None, with a warning, if it cannot be made."""
    values = {path: value for path, value in store.snapshot().items() if value != OBJECT}
    try:
        return _checked_event(AgentRunBeginEvent, str(key), values)
    except (TypeError, ValueError) as exc:
        log.warning("skipping the agent-run begin event of key %r (%s)", key, type(exc))
        return None
