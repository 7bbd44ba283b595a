"""The keyed state layout carries a version: the states the agent function registers are
pinned here against ``state.LAYOUTS[state.LAYOUT_VERSION]``, so changing a state's name,
kind or types without a new layout version (and its migration) fails."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyflink")

from flink_agents.runtime.flink import state  # noqa: E402

#: What each layout version registers: name -> (kind, Flink type info as PyFlink prints it).
#: Version 2 registers layout 1's memory map too (``state.MIGRATED``: moved key by key).
REGISTERED = {
    1: {
        "fa-memory": ("map", "MapTypeInfo<String, PickledByteArrayTypeInfo>"),
        "fa-memory-touched": ("value", "Double"),
        "fa-pending": ("list", "ListTypeInfo<PickledByteArrayTypeInfo>"),
        "fa-durable": ("map", "MapTypeInfo<String, PickledByteArrayTypeInfo>"),
        "fa-approval": ("value", "String"),
    },
    2: {
        "fa-memory": ("map", "MapTypeInfo<String, PickledByteArrayTypeInfo>"),
        "fa-memory-v2": ("value", "PickledByteArrayTypeInfo"),
        "fa-memory-touched": ("value", "Double"),
        "fa-pending": ("list", "ListTypeInfo<PickledByteArrayTypeInfo>"),
        "fa-durable": ("map", "MapTypeInfo<String, PickledByteArrayTypeInfo>"),
        "fa-approval": ("value", "String"),
    },
}


class _Recording:
    """A runtime context that records the states asked for (no backend: the layout only)."""

    def __init__(self) -> None:
        self.registered: dict[str, tuple[str, str]] = {}

    def _record(self, kind: str, descriptor: Any) -> object:
        self.registered[descriptor.get_name()] = (kind, str(descriptor.type_info))
        return object()

    def get_map_state(self, descriptor: Any) -> object:
        return self._record("map", descriptor)

    def get_list_state(self, descriptor: Any) -> object:
        return self._record("list", descriptor)

    def get_state(self, descriptor: Any) -> object:
        return self._record("value", descriptor)


def test_the_registered_states_are_the_layout_of_its_version() -> None:
    context = _Recording()
    state.KeyedState.open(context, ttl=60.0, keyless=False)
    assert state.LAYOUT_VERSION == max(state.LAYOUTS)
    assert context.registered == REGISTERED[state.LAYOUT_VERSION]
    layout = state.LAYOUTS[state.LAYOUT_VERSION]
    current = {n: kind for n, (kind, _) in context.registered.items() if n not in state.MIGRATED}
    assert current == {name: kind for name, (kind, _, _) in layout.items()}
    # The older states registered for their migration are those of older layouts.
    older = {n: kind for n, (kind, _) in context.registered.items() if n in state.MIGRATED}
    assert older == {
        name: state.LAYOUTS[v][name][0]
        for v in range(1, state.LAYOUT_VERSION)
        for name in state.LAYOUTS[v]
        if name in state.MIGRATED
    }


def test_a_layout_version_keeps_what_its_savepoints_hold() -> None:
    """Each version's states are what REGISTERED pins (minus the migrated older ones)."""
    for version, layout in state.LAYOUTS.items():
        registered = {n for n in REGISTERED[version] if version == 1 or n not in state.MIGRATED}
        assert set(layout) == registered


def test_every_layout_version_is_described() -> None:
    assert sorted(state.LAYOUTS) == list(range(1, state.LAYOUT_VERSION + 1))
    assert sorted(REGISTERED) == sorted(state.LAYOUTS)
