"""The agent function's keyed state: short-term memory, pending inputs, durable records.

:class:`KeyedState` is the one place that reads and writes them, always for the state
backend's current key (switched lazily to a batch input's key, and to each key with work in
flight before a checkpoint barrier). The function gets it in ``open()``; tests build one from
fake state objects. The layout is described in docs/ARCHITECTURE.md; it carries a version
(:data:`LAYOUT_VERSION`, :data:`LAYOUTS`), the rule for changing it is at the constant.
"""

from __future__ import annotations

import logging
import pickle
import time
from collections.abc import Iterable
from typing import Any

from pyflink.common.typeinfo import Types
from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor

from flink_agents.api._function import dumps
from flink_agents.runtime.core import DurableRecord
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.runtime.flink.slot import Item, KeyWork

log = logging.getLogger("flink_agents.runtime.flink")

#: Names of the keyed states.
MEMORY = "fa-memory-v2"
MEMORY_TOUCHED = "fa-memory-touched"
PENDING = "fa-pending"
DURABLE = "fa-durable"
APPROVAL = "fa-approval"
#: Layout 1's memory (a MapState read by iterating it), read and migrated key by key.
MEMORY_V1 = "fa-memory"

#: The version of the keyed state layout: the states below, their kinds and the form of
#: their values. Flink maps a savepoint's keyed state to a job by operator uid and state
#: name, and each state's serializer is checked on restore, so the layout of a version is
#: what a savepoint of it holds. A change of a state's kind, of its key or value form, or a
#: state given another meaning is a new version: its states get new names (``fa-<name>-v2``),
#: :data:`LAYOUTS` keeps the older versions' entries, and ``open()`` registers the older
#: states too, reads a key's old entries when it first meets the key, writes them in the
#: new form and clears them (Flink drops a state no job registers at its next savepoint).
#: A new state with a new name needs no new version. ``tests/versions/test_state_layout.py``
#: pins the layout of this version, so a change that forgets the version fails there.
#:
#: Version 2: layout 1 kept a key's memory in a MapState of paths, read by iterating it on
#: every run (on RocksDB an iterator seek per run, whose cost grew with the state; point
#: lookups of the paths through PyFlink's MapState measured as slow: docs/benchmarks.md,
#: state at scale). Version 2 keeps the key's memory as one value, ``{path: value}``: a run
#: reads it with one point lookup (none while no key has memory) and a run that changed
#: memory writes it once, as a keyed function holding the same bytes does.
LAYOUT_VERSION = 2

_LAYOUT_1_COMMON: dict[str, tuple[str, str, str]] = {
    MEMORY_TOUCHED: ("value", "", "DOUBLE: time of the last memory change (ttl only)"),
    PENDING: ("list", "", "PICKLED: (input id, timestamp code, record) of Item.to_state"),
    DURABLE: ("map", "STRING: <input id>/<call id>", "PICKLED: dumps(DurableRecord)"),
    APPROVAL: ("value", "", "STRING: id of the approval request the paused run emitted"),
}

#: Each layout version: state name -> (kind, key form, value form), as registered.
LAYOUTS: dict[int, dict[str, tuple[str, str, str]]] = {
    1: {
        MEMORY_V1: ("map", "STRING: a flattened memory path", "PICKLED: the path's value"),
        **_LAYOUT_1_COMMON,
    },
    2: {
        MEMORY: ("value", "", "PICKLED: dict of the key's memory, flattened path -> value"),
        **_LAYOUT_1_COMMON,
    },
}

#: The states of older layouts that ``open()`` registers too, to migrate what they hold.
MIGRATED = (MEMORY_V1,)


class _Counted:
    """A keyed state whose method calls are counted by name (``KeyedState.count_accesses``:
    tests check which accesses a run makes, e.g. that no run iterates a key's memory)."""

    def __init__(self, state: Any, name: str, counts: dict[str, int]) -> None:
        self._state, self._name, self._counts = state, name, counts

    def __getattr__(self, method: str) -> Any:
        call = getattr(self._state, method)
        label, counts = f"{self._name}.{method}", self._counts

        def counted(*args: Any) -> Any:
            counts[label] = counts.get(label, 0) + 1
            return call(*args)

        return counted


class _Deferred:
    """A keyed state registered with the runtime context when first used; it then takes
    its place in the owning :class:`KeyedState` (``attr``), so later calls go straight to it.

    For process mode after a fresh start: PyFlink's process-mode backend makes an internal
    state object (a protobuf state key) and caches it for every registered state at every
    key switch, whether the function uses the state or not.
    """

    __slots__ = ("_attr", "_make", "_owner", "_state")

    def __init__(self, owner: Any, attr: str, make: Any) -> None:
        self._owner, self._attr, self._make = owner, attr, make
        self._state: Any = None

    def __getattr__(self, method: str) -> Any:
        state = self._state
        if state is None:
            state = self._state = self._make()
            if getattr(self._owner, self._attr, None) is self:
                setattr(self._owner, self._attr, state)
        return getattr(state, method)


#: Keys :class:`KeyedState` remembers as looked up in layout 1 (see ``_legacy_seen``).
_LEGACY_SEEN_MAX = 100_000


class KeyedState:
    """The function's keyed state, of the state backend's current key.

    Args:
        memory: ``ValueState`` of the committed short-term memory, ``{path: value}``
            (flattened; None: the key has none).
        pending: ``ListState`` of the inputs accepted and not committed yet
            (:meth:`Item.to_state` form), in arrival order.
        durable: ``MapState`` ``"<input id>/<call id>"`` -> pickled :class:`DurableRecord`,
            the durable calls of runs not committed yet.
        touched: ``ValueState`` time of the last memory change (only with ``ttl``).
        ttl: seconds after the last change that a key's memory expires (None: never).
        ttl_on_read: whether a run that reads the key's memory starts its TTL again
            (``ON_READ_AND_WRITE``), not only a run that changes it.
        keys: the backend's current key (None: it could not be reached; no barrier hook).
        check_restored: whether a new input must look for inputs a restore left in
            ``pending`` (False when keyed state certainly holds none: one read less).
        memory_unused: whether no key has memory yet (a fresh start, or keyless input):
            memory is not read until a run commits some.
        approval: ``ValueState`` id of the approval request the key's paused run emitted
            (so that the run paused again after a restore does not emit it twice).
        legacy_memory: layout 1's memory ``MapState`` while it may hold entries (a restore
            from a savepoint of layout 1): a key without ``memory`` is looked up there once,
            and what it holds is moved to ``memory``. None: nothing to move.
    """

    def __init__(
        self,
        *,
        memory: Any,
        pending: Any,
        durable: Any,
        touched: Any = None,
        ttl: float | None = None,
        ttl_on_read: bool = False,
        keys: internals.StateKeys | None = None,
        check_restored: bool = True,
        memory_unused: bool = False,
        approval: Any = None,
        legacy_memory: Any = None,
    ) -> None:
        self.approval = approval
        self.memory = memory
        self.legacy_memory = legacy_memory
        self.pending = pending
        self.durable = durable
        self.touched = touched
        self.ttl = ttl
        self.ttl_on_read = ttl_on_read
        self.keys = keys
        self.check_restored = check_restored
        self.memory_unused = memory_unused
        self._batch_key: Any = None
        #: The current key's committed memory as this batch input last read or wrote it
        #: (None: not known). Valid only while the input is processed: setting
        #: ``batch_key`` (the next input, or None at the batch's end) forgets it.
        self._known: dict[str, Any] | None = None
        #: Keys whose layout-1 memory was looked up (nothing is left there: it moved, or
        #: there was none; layout 1 is never written): not looked up again, so a key that
        #: never writes memory costs one lookup, not one per run (in process mode, each a
        #: request to the JVM). Bounded: forgotten all at once when full (a key looked up
        #: again finds nothing there: one request more).
        self._legacy_seen: set[Any] = set()
        #: Why ``keys`` is None, or why ``check_restored`` / ``memory_unused`` could not be
        #: decided (set by :meth:`open`; None: no problem).
        self.keys_problem: str | None = None
        self.probe_problem: str | None = None
        #: Set by :meth:`open` when the operator said it started without state (process
        #: mode, the bridge jar's operator): nothing from before is looked for.
        self.started_fresh = False
        #: Set by :meth:`open` when the operator is the bridge jar's process-mode one (it
        #: said whether it was restored), which hands the function a barrier timer before
        #: every checkpoint barrier: what keyed state must hold at a checkpoint can be
        #: written then.
        self.barriers = False

    @classmethod
    def open(
        cls,
        runtime_context: Any,
        *,
        ttl: float | None,
        keyless: bool,
        ttl_on_read: bool = False,
    ) -> KeyedState:
        """The states of ``runtime_context`` (the function's ``open()``)."""
        pickled = Types.PICKLED_BYTE_ARRAY()
        # Process mode with the bridge jar's operator, started without state: nothing from
        # before to look for, for any key (otherwise a blocking request to the JVM per new
        # key: its pending inputs, layout 1's memory, its memory), and each state is
        # registered when first used: PyFlink's process-mode backend does work for every
        # registered state at every key switch, used or not (docs/benchmarks.md).
        restored = internals.operator_restored(runtime_context)
        fresh = restored is False
        makers: dict[str, Any] = {
            "memory": lambda: runtime_context.get_state(ValueStateDescriptor(MEMORY, pickled)),
            "pending": lambda: runtime_context.get_list_state(
                ListStateDescriptor(PENDING, pickled)
            ),
            "durable": lambda: runtime_context.get_map_state(
                MapStateDescriptor(DURABLE, Types.STRING(), pickled)
            ),
        }
        if ttl:
            # Short-term memory TTL is ours, for the key's memory as a whole (Flink's
            # per-entry state TTL would expire single paths, and did not expire entries in a
            # test through PyFlink): the time of the key's last memory change, checked when
            # memory is loaded.
            makers["touched"] = lambda: runtime_context.get_state(
                ValueStateDescriptor(MEMORY_TOUCHED, Types.DOUBLE())
            )
        makers["approval"] = lambda: runtime_context.get_state(
            ValueStateDescriptor(APPROVAL, Types.STRING())
        )
        # Layout 1's memory is registered too: a restore from one of its savepoints holds it.
        legacy = (
            None
            if fresh
            else runtime_context.get_map_state(
                MapStateDescriptor(MEMORY_V1, Types.STRING(), pickled)
            )
        )
        state = cls(
            memory=None,
            pending=None,
            durable=None,
            ttl=ttl,
            ttl_on_read=ttl_on_read,
            memory_unused=keyless or fresh,
            legacy_memory=None if keyless else legacy,
            check_restored=not fresh,
        )
        for name, make in makers.items():
            setattr(state, name, _Deferred(state, name, make) if fresh else make())
        state.started_fresh = fresh
        state.barriers = restored is not None
        try:
            state.keys = internals.state_keys(runtime_context)
        except internals.InternalsChanged as exc:
            state.keys_problem = str(exc)
            return state
        if fresh:
            return state
        try:
            # A state read per record is skipped while keyed state certainly holds nothing
            # to read: pending inputs of a restore, memory of any key (either layout).
            state.check_restored = internals.state_may_hold(state.keys, PENDING)
            if not keyless and not internals.state_may_hold(state.keys, MEMORY_V1):
                state.legacy_memory = None
            state.memory_unused = keyless or (
                state.legacy_memory is None and not internals.state_may_hold(state.keys, MEMORY)
            )
        except internals.InternalsChanged as exc:
            state.probe_problem = str(exc)
        if state.check_restored:
            log.info("keyed state may hold pending inputs from before a restore")
        if state.legacy_memory is not None and state.keys.java:
            log.info("keyed state holds memory of layout 1: moved to layout 2 key by key")
        return state

    def count_accesses(self) -> dict[str, int]:
        """Count every call on the keyed states from now on, by ``"<state>.<method>"``
        (e.g. ``"memory.value"``); the counts, filled as calls are made (tests)."""
        counts: dict[str, int] = {}
        for name in ("memory", "legacy_memory", "pending", "durable", "touched"):
            inner = getattr(self, name)
            if inner is not None:
                setattr(self, name, _Counted(inner, name, counts))
        if self.approval is not None:
            self.approval = _Counted(self.approval, "approval", counts)
        return counts

    # -- the current key -----------------------------------------------------------------------
    @property
    def batch_key(self) -> Any:
        """The key of the batch input being processed, until the backend is switched to it
        (:meth:`use_key`); the function sets it per input and to None after the batch."""
        return self._batch_key

    @batch_key.setter
    def batch_key(self, key: Any) -> None:
        self._batch_key = key
        self._known = None

    def use_key(self) -> None:
        """Switch the backend to the current batch input's key (if not yet)."""
        key = self._batch_key
        if key is not None:
            self._batch_key = None
            self.keys.switch(key)  # type: ignore[union-attr]  # batches need keys

    def current_key(self) -> Any:
        """The current key as the backend holds it (the Java backend: a Row that PyFlink's
        key selector makes for each record, never reused)."""
        self.use_key()
        return self.keys.current()  # type: ignore[union-attr]  # callers check keys

    # -- short-term memory --------------------------------------------------------------------
    def load_memory(self, key: Any = None) -> dict[str, Any]:
        """The key's committed memory (one point lookup); cleared first when its TTL has
        passed. The caller may not change the dict returned. ``key`` (the current key)
        lets layout 1's memory be looked up once per key instead of per run."""
        if self.memory_unused:
            return {}
        # Known for the commit below only when this input switched the backend to its key
        # here: until the next input nothing else switches it (timers and barriers come
        # between batches; barrier saves put the key back).
        switching = self._batch_key is not None
        self.use_key()
        memory: dict[str, Any] | None = self.memory.value()
        if memory is None:
            if self.legacy_memory is None or (key is not None and key in self._legacy_seen):
                memory = {}
            else:
                memory = self._migrate()
                if key is not None:
                    if len(self._legacy_seen) >= _LEGACY_SEEN_MAX:
                        self._legacy_seen.clear()
                    self._legacy_seen.add(key)
        elif self._expired():
            self.memory.clear()
            memory = {}
        if switching:
            self._known = memory
        return memory

    def _expired(self) -> bool:
        """Whether the key's memory TTL has passed (its time is cleared then)."""
        if self.touched is None:
            return False
        last = self.touched.value()
        if last is not None and time.time() - last > self.ttl:
            self.touched.clear()
            return True
        return False

    def _migrate(self) -> dict[str, Any]:
        """The key's memory of layout 1 (iterated, once per key), moved to layout 2."""
        legacy = self.legacy_memory
        memory = dict(legacy.items())
        if not memory:
            return {}
        legacy.clear()
        if self._expired():
            return {}
        self.memory.update(memory)
        return memory

    def commit_memory(self, updates: dict[str, Any], deletes: list[str]) -> None:
        """Write a run's memory changes: the key's memory with them, once. The memory they
        apply to is read again unless this batch input loaded it (one point lookup less per
        run: on RocksDB at 100,000 keys the second read was 40 % of the operator thread,
        docs/benchmarks.md "State at scale") or no key has memory yet."""
        self.use_key()
        # A key of layout 1 was moved when its memory was loaded, before its run.
        if self._known is not None:
            memory = dict(self._known)
        elif self.memory_unused:
            memory = {}
        else:
            memory = dict(self.memory.value() or {})
        if updates:
            self.memory_unused = False
        for path in deletes:
            memory.pop(path, None)
        memory.update(updates)
        if memory:
            self.memory.update(memory)
        else:
            self.memory.clear()
        if self._known is not None:
            self._known = memory
        if self.touched is not None:
            self.touched.update(time.time())

    def touch_memory(self) -> None:
        """Start the key's memory TTL again (a run read it; ``ttl_on_read``)."""
        if self.touched is not None and not self.memory_unused:
            self.use_key()
            self.touched.update(time.time())

    # -- pending inputs -----------------------------------------------------------------------
    def add_pending(self, item: Item) -> None:
        """Keep ``item`` until its run is committed."""
        self.use_key()
        self.pending.add(item.to_state())

    def restored_pending(self) -> list[Item]:
        """The key's pending inputs (after a restore: the runs to do again)."""
        self.use_key()
        raw = self.pending.get()
        return [Item.from_state(r) for r in raw] if raw is not None else []

    def clear_pending(self) -> None:
        """Drop every pending input of the key."""
        self.pending.clear()

    def remove_pending(self, ids: set[str]) -> None:
        """Drop the pending inputs of the key with these ids."""
        self.pending.update([r for r in self.pending.get() if r[0] not in ids])

    # -- approval -------------------------------------------------------------------------------
    def note_request(self, request_id: str) -> None:
        """Note that the key's paused run emitted ``request_id`` (the key's protocol reads it
        back after a restore, so that the run paused again does not emit it twice)."""
        if self.approval is not None:
            self.use_key()
            self.approval.update(request_id)

    def emitted_request(self) -> str | None:
        """The id of the request the key's paused run emitted, if any."""
        if self.approval is None:
            return None
        self.use_key()
        value: str | None = self.approval.value()
        return value

    def clear_request(self) -> None:
        """The key's paused run resumed."""
        if self.approval is not None:
            self.use_key()
            self.approval.clear()

    # -- durable records ----------------------------------------------------------------------
    def load_durable(self) -> dict[str, dict[str, DurableRecord]]:
        """The key's durable records, by input id and call id."""
        durable: dict[str, dict[str, DurableRecord]] = {}
        for name, raw in self.durable.items():
            item_id, _, call_id = name.rpartition("/")
            durable.setdefault(item_id, {})[call_id] = pickle.loads(raw)
        return durable

    def save_durable(self, work: KeyWork, records: list[tuple[str, str, Any]]) -> None:
        """Write ``records`` of ``work``'s key (the backend's current key)."""
        for item_id, call_id, rec in records:
            try:
                self.durable.put(f"{item_id}/{call_id}", dumps(rec))
            except Exception as exc:  # noqa: BLE001 - an unpicklable error result
                log.warning("durable call %s of key %r not saved: %s", call_id, work.key, exc)
            work.mark_persisted(item_id, call_id, rec)

    def remove_durable(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Drop the key's records ``(input id, call id)``."""
        for item_id, call_id in pairs:
            self.durable.remove(f"{item_id}/{call_id}")

    def save_before_barrier(self, works: Iterable[KeyWork]) -> int:
        """Save the records that keyed state does not hold yet of every work with a state
        key, each under its key; the backend's key is put back. Returns how many."""
        keys = self.keys
        if keys is None:
            return 0
        previous: Any = None
        switched = False
        saved = 0
        try:
            for work in works:
                if work.state_key is None:
                    continue
                records = work.unpersisted()
                if not records:
                    continue
                if not switched:
                    previous = keys.current()
                    switched = True
                    self._known = None  # (the key is put back, but no reliance on it)
                keys.switch(work.state_key)
                self.save_durable(work, records)
                saved += len(records)
        finally:
            if switched and previous is not None:
                keys.switch(previous)
        return saved
