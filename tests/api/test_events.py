"""Events: type strings, custom classes, extra fields, JSON round-trip (golden file)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.context_retrieval_event import ContextRetrievalRequestEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.errors import EventAttributeError
from tests.runtime.agents import CountEvent, TypedEvent

GOLDEN = Path(__file__).parent / "golden" / "events.json"
FIXED = uuid.UUID("00000000-0000-4000-8000-000000000001")


def test_type_strings():
    assert InputEvent.EVENT_TYPE == "_input_event"
    assert OutputEvent.EVENT_TYPE == "_output_event"
    assert ChatRequestEvent.EVENT_TYPE == "_chat_request_event"
    assert ChatResponseEvent.EVENT_TYPE == "_chat_response_event"
    assert ToolRequestEvent.EVENT_TYPE == "_tool_request_event"
    assert ToolResponseEvent.EVENT_TYPE == "_tool_response_event"
    assert ContextRetrievalRequestEvent.EVENT_TYPE == "_context_retrieval_request_event"
    assert CountEvent.EVENT_TYPE == "tests.runtime.agents.CountEvent"
    assert TypedEvent.EVENT_TYPE == "my_typed_event"
    assert Event(type="generic_thing").event_type == "generic_thing"
    assert InputEvent(input=1).type == InputEvent(input=1).get_type() == "_input_event"


def test_ids_are_unique_and_extra_fields_are_kept():
    a, b = InputEvent(input=1), InputEvent(input=1)
    assert a.id != b.id
    e = OutputEvent(output="x", note="extra field")
    assert e.note == "extra field"
    again = Event.from_json(e.to_json())
    assert isinstance(again, OutputEvent) and again.note == "extra field" and again.id == e.id


def test_forked_child_does_not_repeat_parent_ids():
    """Ids come from a seeded generator: a forked child must reseed, not replay the parent."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: send its next id and leave at once
        os.write(write, str(InputEvent(input=1).id).encode())
        os._exit(0)
    os.close(write)
    parent_id = str(InputEvent(input=1).id)
    os.waitpid(pid, 0)
    child_id = os.read(read, 100).decode()
    os.close(read)
    assert uuid.UUID(child_id).version == 4
    assert child_id != parent_id


def test_json_round_trip_of_every_kind_matches_golden():
    events = [
        InputEvent(id=FIXED, input={"a": [1, 2]}),
        ChatRequestEvent(
            id=FIXED,
            model="m",
            messages=[ChatMessage(role=MessageRole.USER, content="hi", extra_args={"x": 1})],
        ),
        ChatRequestEvent(
            id=FIXED, model="m", messages=[ChatMessage()], prompt_args={"input": "a review"}
        ),
        ChatResponseEvent(id=FIXED, request_id=FIXED, response=ChatMessage(content="yo")),
        ToolRequestEvent(
            id=FIXED,
            model="m",
            tool_calls=[
                {"id": "c1", "type": "function", "function": {"name": "t", "arguments": {}}}
            ],
        ),
        ToolResponseEvent(id=FIXED, request_id=FIXED, responses={"c1": 3}),
        CountEvent(id=FIXED, n=4),
        TypedEvent(id=FIXED, text="t"),
        Event(id=FIXED, type="unregistered_type", payload=[1]),
        Event(id=FIXED, type="step2", attributes={"field1": "test", "field2": 42}),
    ]
    texts = [json.loads(e.to_json()) for e in events]
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(texts, indent=2, sort_keys=True) + "\n")
    assert texts == json.loads(GOLDEN.read_text())
    for event in events:
        again = Event.from_json(event.to_json())
        assert type(again) is type(event)
        assert again.to_json() == event.to_json()


def test_json_of_the_earlier_flat_shape_is_still_read():
    """Events written before the upstream shape (attributes beside id and type: event logs,
    files of earlier versions) read back as the same events."""
    flat = json.loads((GOLDEN.parent / "events_flat.json").read_text())
    nested = json.loads(GOLDEN.read_text())
    assert len(flat) == len(nested)
    for old, new in zip(flat, nested, strict=True):
        assert "attributes" not in old and {"id", "type", "attributes"} <= set(new)
        assert Event.from_json(json.dumps(old)).to_json() == json.dumps(new, sort_keys=True)


def test_the_model_serializer_keeps_the_flat_shape_for_the_event_log():
    """The event log's fast path takes id and type from the front of the model's own JSON
    (event_log_writer.uuid_id_of); only the public dump methods nest the attributes."""
    from flink_agents.runtime.observability.event_log_writer import uuid_id_of

    event = InputEvent(id=FIXED, input={"a": 1})
    body = event.__pydantic_serializer__.to_json(event)
    assert uuid_id_of(body) == b'"00000000-0000-4000-8000-000000000001"'
    assert json.loads(body) == {"id": str(FIXED), "type": "_input_event", "input": {"a": 1}}
    assert json.loads(event.model_dump_json()) == {
        "id": str(FIXED),
        "type": "_input_event",
        "attributes": {"input": {"a": 1}},
    }
    assert event.model_dump()["attributes"] == {"input": {"a": 1}}
    assert InputEvent.model_validate_json(event.model_dump_json()) == event


def test_a_user_event_class_dumps_its_declared_fields_at_the_top_level():
    """As upstream's pydantic Event does: only our own events (whose fields upstream keeps
    in attributes) and unified attributes are nested, so user code reading
    ``event.model_dump()["text"]`` keeps working."""
    dumped = TypedEvent(id=FIXED, text="t").model_dump(mode="json", exclude={"id"})
    assert dumped == {"type": "my_typed_event", "text": "t", "attributes": {}}
    extra = Event(type="x", attributes={"a": 1}).model_dump(mode="json")
    assert extra["attributes"] == {"a": 1}
    assert TypedEvent.model_validate(TypedEvent(id=FIXED, text="t").model_dump()).text == "t"


def _shape(event: Event) -> tuple[object, ...]:
    """What pydantic keeps of an event, its id left out."""
    fields = {k: v for k, v in event.__dict__.items() if k != "id"}
    return (
        type(event),
        list(event.__dict__),
        fields,
        event.__pydantic_fields_set__,
        event.__pydantic_extra__,
        event.__pydantic_private__,
        json.loads(event.model_dump_json(exclude={"id"})),
    )


def test_events_the_runtime_makes_without_the_validator_equal_constructed_ones():
    record = {"key": "k", "nested": [1, 2.5, None, {"x": "y"}]}
    made = InputEvent.of_record(record)
    assert _shape(made) == _shape(InputEvent(input=record))
    assert isinstance(made.id, uuid.UUID) and made.id != InputEvent.of_record(record).id
    reply = ChatMessage(role=MessageRole.ASSISTANT, content="hi")
    response = ChatResponseEvent._trusted({"request_id": FIXED, "response": reply})
    assert _shape(response) == _shape(ChatResponseEvent(request_id=FIXED, response=reply))
    # The input's JSON check stays: the same error as the constructor's.
    bad = {"key": "k", "value": object()}
    with pytest.raises(EventAttributeError) as of_record:
        InputEvent.of_record(bad)
    with pytest.raises(EventAttributeError) as constructed:
        InputEvent(input=bad)
    assert str(of_record.value) == str(constructed.value)
    assert "'input'" in str(of_record.value) and "not JSON serializable" in str(of_record.value)
