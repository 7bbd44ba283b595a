"""The memory event and run-begin event classes and their options, as Apache Flink Agents
main has them (types, attributes, checks, reading back from generic events and JSON)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flink_agents.api.core_options import (
    AgentConfiguration,
    AgentExecutionOptions,
    ConfigOption,
    MemoryEventOptions,
)
from flink_agents.api.events.event import Event
from flink_agents.api.events.event_type import EventType
from flink_agents.api.events.memory_event import (
    LongTermGetEvent,
    LongTermSearchEvent,
    LongTermUpdateEvent,
    MemoryEvent,
    SensoryReadEvent,
    SensoryWriteEvent,
    ShortTermReadEvent,
    ShortTermWriteEvent,
)
from flink_agents.api.events.run_event import AgentRunBeginEvent

TYPES = {
    ShortTermWriteEvent: "_short_term_write_event",
    ShortTermReadEvent: "_short_term_read_event",
    SensoryWriteEvent: "_sensory_write_event",
    SensoryReadEvent: "_sensory_read_event",
    LongTermUpdateEvent: "_long_term_update_event",
    LongTermGetEvent: "_long_term_get_event",
    LongTermSearchEvent: "_long_term_search_event",
}


@pytest.mark.parametrize(("cls", "type_string"), TYPES.items())
def test_each_class_has_upstreams_type_and_constant(
    cls: type[MemoryEvent], type_string: str
) -> None:
    assert cls.EVENT_TYPE == type_string
    assert getattr(EventType, cls.__name__) == type_string
    event = cls(key="k", value={})
    assert event.type == type_string and MemoryEvent.is_memory_type(type_string)


def test_not_memory_types() -> None:
    assert not MemoryEvent.is_memory_type("_input_event")
    assert not MemoryEvent.is_memory_type(AgentRunBeginEvent.EVENT_TYPE)
    assert not MemoryEvent.is_memory_type(None)


def test_key_and_value_are_attributes_and_json_copies() -> None:
    original = {"nested": {"value": 1}, "bytes": b"\x01\x02\x03"}
    event = ShortTermWriteEvent(key="user-42", value=original)
    original["nested"]["value"] = 2
    assert event.key == "user-42" and event.attributes["key"] == "user-42"
    assert event.value == {"nested": {"value": 1}, "bytes": "AQID"}  # bytes as base64
    assert event.get_attr("value") is event.value


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), object()])
def test_values_json_cannot_hold_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="JSON serializable"):
        SensoryWriteEvent(key="k", value={"bad": bad})


def test_the_base_class_is_abstract_and_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="abstract"):
        MemoryEvent(key="k", value={})
    with pytest.raises(TypeError, match="key"):
        ShortTermWriteEvent(key=None, value={})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="value"):
        ShortTermWriteEvent(key="k", value=None)  # type: ignore[arg-type]


def test_from_event_picks_the_class_by_type_and_keeps_the_id() -> None:
    generic = Event(
        type=LongTermGetEvent.EVENT_TYPE, attributes={"key": "k", "value": {"s": {"m1": "v"}}}
    )
    typed = MemoryEvent.from_event(generic)
    assert isinstance(typed, LongTermGetEvent) and typed.id == generic.id
    assert typed.value == {"s": {"m1": "v"}}
    assert MemoryEvent.from_event(typed) is typed
    with pytest.raises(ValueError, match="Not a memory event type"):
        MemoryEvent.from_event(Event(type="_input_event", attributes={"key": "k", "value": {}}))
    with pytest.raises(TypeError, match="value"):
        MemoryEvent.from_event(Event(type=ShortTermWriteEvent.EVENT_TYPE, attributes={"key": "k"}))


def test_long_term_update_cleared_sets() -> None:
    event = LongTermUpdateEvent(key="k", value={"prefs": {"m2": "new"}}, cleared_sets=["prefs"])
    again = MemoryEvent.from_event(Event(type=event.type, attributes=dict(event.attributes)))
    assert isinstance(again, LongTermUpdateEvent) and again.cleared_sets == ["prefs"]
    assert LongTermUpdateEvent(key="k", value={}, cleared_sets=None).cleared_sets == []
    for bad in ("prefs", ("prefs",), {"prefs"}, 1):
        with pytest.raises(TypeError, match="must be a list"):
            LongTermUpdateEvent(key="k", value={}, cleared_sets=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="only strings"):
        LongTermUpdateEvent(key="k", value={}, cleared_sets=["prefs", 1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="must be a list"):
        MemoryEvent.from_event(
            Event(type=event.type, attributes={"key": "k", "value": {}, "cleared_sets": "prefs"})
        )


def test_search_results_view() -> None:
    hits = [{"id": "p1", "value": "7-day refund", "score": 0.9}]
    event = LongTermSearchEvent(key="u", value={"policies": {"refund": hits}})
    assert event.results["policies"]["refund"][0]["id"] == "p1"


def test_json_in_upstreams_shape_and_back() -> None:
    event = ShortTermWriteEvent(key="user-42", value={"user.tier": "gold"})
    text = event.model_dump_json()
    assert '"attributes":{"key":"user-42","value":{"user.tier":"gold"}}' in text
    again = Event.from_json(event.to_json())
    assert isinstance(again, ShortTermWriteEvent) and again == event
    begin = AgentRunBeginEvent(key="k", value={"a": 1})
    assert Event.from_json(begin.to_json()) == begin


def test_run_begin_event() -> None:
    assert AgentRunBeginEvent.EVENT_TYPE == EventType.AgentRunBeginEvent == "_agent_run_begin_event"
    event = AgentRunBeginEvent(key="user-42", value={"user.tier": "gold"})
    assert (event.key, event.value) == ("user-42", {"user.tier": "gold"})
    generic = Event(type=event.type, attributes={"key": "k", "value": {"a": 1}})
    typed = AgentRunBeginEvent.from_event(generic)
    assert typed.id == generic.id and typed.value == {"a": 1}
    with pytest.raises(TypeError):
        AgentRunBeginEvent.from_event(Event(type=event.type, attributes={"key": "k"}))


def test_option_keys_and_defaults_are_upstreams() -> None:
    expected = {
        MemoryEventOptions.MEMORY_GENERATE_EVENT: "memory.generate-event",
        MemoryEventOptions.SHORT_TERM_WRITE: "memory.generate-event.short-term-write",
        MemoryEventOptions.SHORT_TERM_READ: "memory.generate-event.short-term-read",
        MemoryEventOptions.SENSORY_WRITE: "memory.generate-event.sensory-write",
        MemoryEventOptions.SENSORY_READ: "memory.generate-event.sensory-read",
        MemoryEventOptions.LONG_TERM_UPDATE: "memory.generate-event.long-term-update",
        MemoryEventOptions.LONG_TERM_GET: "memory.generate-event.long-term-get",
        MemoryEventOptions.LONG_TERM_SEARCH: "memory.generate-event.long-term-search",
    }
    for option, key in expected.items():
        assert isinstance(option, ConfigOption)
        assert option.get_key() == key and option.get_default_value() is None
    assert AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT.get_key() == "agent-run.begin-event"
    assert AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT.get_default_value() is False


def test_upstreams_yaml_configuration_example(tmp_path: Path) -> None:
    from flink_agents.runtime.core.memory_events import MemoryEventSettings

    path = tmp_path / "config.yaml"
    path.write_text(
        "agent:\n"
        "  memory:\n"
        "    generate-event: false\n"
        "    generate-event.short-term-write: true\n"
        "  agent-run:\n"
        "    begin-event: true\n"
    )
    config = AgentConfiguration().load_from_file(path)
    settings = MemoryEventSettings.from_config(config)
    assert settings.short_term_write and not settings.sensory_write
    assert not settings.long_term_search and settings.long_term_ops == frozenset()
    assert config.get(AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT) is True
