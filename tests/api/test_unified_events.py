"""Unified events as in Apache Flink Agents: Event(type=, attributes=), get_type, get_attr /
set_attr, from_event of every built-in, upstream-style event classes, JSON checks, Rows."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticSerializationError
from pyflink.common import Row

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import (
    ErrorEvent,
    Event,
    InputEvent,
    OutputEvent,
    registered_event_types,
)
from flink_agents.api.events.event_type import EventType
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.errors import EventAttributeError
from tests.runtime.agents import CountEvent

ID = uuid.UUID("00000000-0000-4000-8000-000000000002")


class MyEvent(Event):
    """A custom event written as upstream's documentation shows it."""

    EVENT_TYPE: ClassVar[str] = "my_event"

    def __init__(self, value: str) -> None:
        super().__init__(type=MyEvent.EVENT_TYPE, attributes={"value": value})

    @classmethod
    def from_event(cls, event: Event) -> MyEvent:
        assert "value" in event.attributes
        result = cls(value=event.attributes["value"])
        return result.reconstruct_from(event)

    @property
    def value(self) -> str:
        return self.get_attr("value")


class Loose(BaseModel):
    """A pydantic model that may hold anything (its fields are not pydantic's to judge)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    thing: Any


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Color(enum.Enum):
    RED = "red"


def test_unified_event_has_type_attributes_and_accessors():
    e = Event(type="my_event", attributes={"field1": "test", "field2": 42})
    assert e.type == e.get_type() == "my_event"
    assert e.get_attr("field1") == "test" and e.get_attr("field2") == 42
    assert e.get_attr("missing") is None
    assert dict(e.attributes) == {"field1": "test", "field2": 42}
    e.set_attr("field3", [1, {"a": None}])
    e.attributes["field4"] = 1.5
    assert dict(e.attributes) == {
        "field1": "test",
        "field2": 42,
        "field3": [1, {"a": None}],
        "field4": 1.5,
    }
    del e.attributes["field4"]
    assert "field4" not in e.attributes and len(e.attributes) == 3
    # Extra keyword arguments are attributes too (our earlier style).
    assert Event(type="t", payload=[1]).get_attr("payload") == [1]


def test_every_builtin_event_has_its_type_string():
    made = [
        (InputEvent(input=1), "_input_event"),
        (OutputEvent(output=1), "_output_event"),
        (ChatRequestEvent(model="m", messages=[]), "_chat_request_event"),
        (
            ChatResponseEvent(request_id=ID, response=ChatMessage(content="x")),
            "_chat_response_event",
        ),
        (ToolRequestEvent(model="m", tool_calls=[]), "_tool_request_event"),
        (ToolResponseEvent(request_id=ID, responses={}), "_tool_response_event"),
        (
            ContextRetrievalRequestEvent(query="q", vector_store="v"),
            "_context_retrieval_request_event",
        ),
        (
            ContextRetrievalResponseEvent(request_id=ID, query="q", documents=[]),
            "_context_retrieval_response_event",
        ),
        (ErrorEvent(), "_error_event"),
    ]
    for event, etype in made:
        assert event.type == event.get_type() == type(event).EVENT_TYPE == etype
    assert EventType.InputEvent == "_input_event"
    assert EventType.ChatResponseEvent == ChatResponseEvent.EVENT_TYPE
    assert {"_input_event", "my_event", CountEvent.EVENT_TYPE} <= set(registered_event_types())
    # A class with typed fields takes an explicit type too (then it routes by that type).
    assert CountEvent(n=1, type="other").type == "other"


def test_builtin_fields_are_attributes():
    event = InputEvent(input={"a": 1})
    assert event.get_attr("input") == {"a": 1} and dict(event.attributes) == {"input": {"a": 1}}
    event.set_attr("input", "changed")
    assert event.input == "changed"
    event.set_attr("note", "extra")
    assert dict(event.attributes) == {"input": "changed", "note": "extra"}
    with pytest.raises(TypeError, match="is a field"):
        del event.attributes["input"]


def test_from_event_reads_a_generic_event_as_each_builtin():
    msg = {"role": "user", "content": "hi", "tool_calls": [], "extra_args": {}}
    cases: list[tuple[type[Event], dict[str, Any]]] = [
        (InputEvent, {"input": {"x": 1}}),
        (OutputEvent, {"output": [1, 2]}),
        (ChatRequestEvent, {"model": "m", "messages": [msg], "prompt_args": {"input": "x"}}),
        (ChatResponseEvent, {"request_id": str(ID), "response": msg}),
        (ToolRequestEvent, {"model": "m", "tool_calls": [{"id": "c1"}]}),
        (ToolResponseEvent, {"request_id": str(ID), "responses": {"c1": 3}}),
        (ContextRetrievalRequestEvent, {"query": "q", "vector_store": "v", "max_results": 2}),
        (
            ContextRetrievalResponseEvent,
            {"request_id": str(ID), "query": "q", "documents": [{"content": "d", "id": "1"}]},
        ),
    ]
    for cls, attributes in cases:
        generic = Event(type=cls.EVENT_TYPE, attributes=attributes)
        typed = cls.from_event(generic)
        assert type(typed) is cls and typed.id == generic.id and typed.type == cls.EVENT_TYPE
        for name in attributes:
            assert typed.get_attr(name) is not None
    request = ChatRequestEvent.from_event(
        Event(type="_chat_request_event", attributes={"model": "m", "messages": [msg]})
    )
    assert request.messages[0] == ChatMessage(role=MessageRole.USER, content="hi")
    assert request.prompt_args == {}
    response = ChatResponseEvent.from_event(
        Event(type="_chat_response_event", attributes={"request_id": str(ID), "response": msg})
    )
    assert response.request_id == ID and response.response.content == "hi"
    docs = ContextRetrievalResponseEvent.from_event(Event(type="x", attributes=cases[-1][1]))
    assert docs.documents == [Document(content="d", id="1")]
    # An event that already is of the class comes back as it is.
    same = InputEvent(input=1)
    assert InputEvent.from_event(same) is same


def test_from_event_without_the_needed_attributes_is_a_clear_error():
    with pytest.raises(EventAttributeError, match=r"as InputEvent: input: Field required"):
        InputEvent.from_event(Event(type="_input_event", attributes={"other": 1}))
    with pytest.raises(EventAttributeError, match="as ChatRequestEvent"):
        ChatRequestEvent.from_event(Event(type="x", attributes={"model": "m"}))


def test_tool_response_has_upstreams_success_and_error_views():
    event = ToolResponseEvent(
        request_id=ID, responses={"c1": 3, "c2": "Error: x"}, errors={"c2": "Error: x"}
    )
    assert event.success == {"c1": True, "c2": False}
    assert event.error == {"c2": "Error: x"}


def test_upstream_style_event_class_works_and_round_trips():
    event = MyEvent("hello")
    assert event.type == "my_event" and event.value == "hello"
    assert dict(event.attributes) == {"value": "hello"}
    generic = Event(type="my_event", attributes={"value": "from a generic event"})
    typed = MyEvent.from_event(generic)
    assert isinstance(typed, MyEvent) and typed.id == generic.id
    assert typed.value == "from a generic event"
    again = Event.from_json(event.to_json())
    assert type(again) is MyEvent and again.value == "hello" and again.id == event.id
    # An id may still be assigned (Apache Flink Agents 0.3.1 examples do it).
    typed.id = ID
    assert typed.id == ID


def test_json_accepts_upstreams_attributes_object_and_needs_a_type():
    text = json.dumps(
        {"id": str(ID), "type": "_output_event", "attributes": {"output": {"score": 4}}}
    )
    event = Event.from_json(text)
    assert type(event) is OutputEvent and event.output == {"score": 4} and event.id == ID
    unknown = Event.from_json(json.dumps({"type": "order.created", "attributes": {"n": 1}}))
    assert type(unknown) is Event and unknown.get_attr("n") == 1
    assert Event.model_validate({"type": "x", "attributes": {"a": 1}}).get_attr("a") == 1
    with pytest.raises(ValueError, match="non-empty 'type'"):
        Event.from_json(json.dumps({"attributes": {"n": 1}}))


def test_values_json_can_hold_are_accepted():
    event = Event(
        type="ok",
        attributes={
            "model": ChatMessage(content="x"),
            "point": Point(1, 2),
            "when": datetime.datetime(2026, 1, 2, 3, 4, 5),
            "uid": ID,
            "color": Color.RED,
            "tuple": (1, "a"),
            "set": {1},
            "int_keys": {1: "a"},
            "deep": [[[{"a": [1.5, None, True]}]]],
        },
    )
    data = json.loads(event.to_json())["attributes"]
    assert data["point"] == {"x": 1, "y": 2} and data["color"] == "red"
    assert data["when"] == "2026-01-02T03:04:05" and data["tuple"] == [1, "a"]


@pytest.mark.parametrize(
    "bad",
    [
        object(),
        {"a": object()},
        [1, {"b": {2, object()}}],
        Loose(thing=object()),
        lambda: 1,
    ],
    ids=["object", "nested-dict", "nested-set", "loose-model", "function"],
)
def test_a_value_json_cannot_hold_is_an_error_at_construction(bad):
    with pytest.raises(EventAttributeError, match="not JSON serializable"):
        Event(type="bad", attributes={"value": bad})
    with pytest.raises(EventAttributeError, match=r"attribute 'input' of InputEvent"):
        InputEvent(input=bad)
    with pytest.raises(EventAttributeError, match="'extra'"):
        OutputEvent(output=1, extra=bad)
    with pytest.raises(EventAttributeError):
        ChatRequestEvent(model="m", messages=[], prompt_args={"input": bad})


def test_a_value_json_cannot_hold_is_an_error_at_set_attr_and_assignment():
    # pydantic's PydanticSerializationError, as upstream raises when an event is changed
    event = Event(type="t", attributes={"a": 1})
    with pytest.raises(PydanticSerializationError, match="attribute 'b' of Event"):
        event.set_attr("b", object())
    with pytest.raises(PydanticSerializationError):
        event.attributes["c"] = {"x": object()}
    with pytest.raises(PydanticSerializationError):
        event.d = object()
    out = OutputEvent(output=1)
    with pytest.raises(PydanticSerializationError):
        out.output = object()
    with pytest.raises(PydanticSerializationError, match="not JSON serializable"):
        out.set_attr("output", [object()])
    assert dict(event.attributes) == {"a": 1} and out.output == 1


def test_construction_errors_are_pydantic_validation_errors_too():
    """``except ValidationError`` code written for Apache Flink Agents keeps working; the
    error also belongs to our tree, pickles, and says what is wrong."""
    import pickle

    from pydantic import ValidationError

    from flink_agents.errors import FlinkAgentsError

    for make in (
        lambda: Event(a=1),
        lambda: Event(type="t", b=object()),
        lambda: InputEvent(input=object()),
    ):
        with pytest.raises(ValidationError) as info:
            make()
        err = info.value
        assert isinstance(err, EventAttributeError) and isinstance(err, FlinkAgentsError)
        assert err.errors()[0]["type"] == "value_error"
        again = pickle.loads(pickle.dumps(err))
        assert type(again) is EventAttributeError and str(again) == str(err)
    with pytest.raises(ValidationError, match="a plain Event needs a type"):
        Event(a=1)


def test_reserved_and_malformed_attributes_are_errors():
    with pytest.raises(EventAttributeError, match="a plain Event needs a type"):
        Event(attributes={"a": 1})
    with pytest.raises(EventAttributeError, match="'type' cannot be an attribute name"):
        Event(type="t", attributes={"type": "x"})
    with pytest.raises(EventAttributeError, match="given twice"):
        Event(type="t", a=1, attributes={"a": 2})
    with pytest.raises(EventAttributeError, match="must be a dict"):
        Event(type="t", attributes=[1, 2])
    with pytest.raises(EventAttributeError, match="own field"):
        Event(type="t").set_attr("id", ID)


def test_pyflink_rows_are_attributes_and_come_back_as_rows():
    row = Row(id="r1", score=4)
    event = InputEvent(input=row)
    data = json.loads(event.to_json())["attributes"]
    assert data["input"] == {"type": "Row", "values": ["r1", 4], "fields": ["id", "score"]}
    again = Event.from_json(event.to_json())
    assert isinstance(again.input, Row) and again.input.as_dict() == {"id": "r1", "score": 4}
    positional = Event.from_json(Event(type="t", attributes={"r": Row(1, [2])}).to_json())
    assert isinstance(positional.get_attr("r"), Row) and list(positional.get_attr("r")) == [1, [2]]
    with pytest.raises(EventAttributeError, match="not JSON serializable"):
        Event(type="t", attributes={"r": Row(1, object())})


def test_chat_request_keeps_a_schema_class_and_writes_its_json_schema():
    class Answer(BaseModel):
        score: int

    request = ChatRequestEvent(model="m", messages=[], output_schema=Answer)
    assert request.output_schema is Answer
    assert json.loads(request.to_json())["attributes"]["output_schema"]["properties"]["score"][
        "type"
    ] == ("integer")
