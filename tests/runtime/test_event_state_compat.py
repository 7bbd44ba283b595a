"""Events pickled into keyed state (durable records, pending runs) by earlier versions still
load: savepoints taken before the event JSON took upstream's shape stay restorable.

``golden/durable_record_events_v1.pickle`` is a :class:`DurableRecord` whose result is a list
of built-in and unified events, pickled by flink-agents at main 279bb61 (before this change).
"""

from __future__ import annotations

import json
import pickle
import uuid
from pathlib import Path

from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import ErrorEvent, Event, InputEvent, OutputEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.runtime.core.records import DurableRecord

OLD = Path(__file__).parent / "golden" / "durable_record_events_v1.pickle"
FIXED = uuid.UUID("00000000-0000-4000-8000-000000000001")


def test_events_pickled_by_an_earlier_version_load_and_serialize_in_the_new_shape():
    record = pickle.loads(OLD.read_bytes())
    assert isinstance(record, DurableRecord) and record.signature == "mod.fn"
    kinds = [type(e) for e in record.result]
    assert kinds == [
        InputEvent,
        OutputEvent,
        ChatRequestEvent,
        ChatResponseEvent,
        ToolRequestEvent,
        ToolResponseEvent,
        ErrorEvent,
        Event,
    ]
    inp, out, chat, _, tools, _, error, unified = record.result
    assert all(e.id == FIXED for e in record.result)
    assert inp.input == {"a": [1, 2]} and out.output == "x" and out.get_attr("note") == "extra"
    assert chat.messages[0].content == "hi" and chat.prompt_args == {"input": "r"}
    assert tools.tool_calls[0]["function"]["name"] == "t"
    assert error.error == "boom"
    assert unified.type == "step2" and unified.attributes == {"field1": "test", "field2": 42}
    # Loaded events are ordinary events: upstream's JSON shape, and a round trip.
    dumped = json.loads(unified.model_dump_json())
    assert dumped == {
        "id": str(FIXED),
        "type": "step2",
        "attributes": {"field1": "test", "field2": 42},
    }
    for event in record.result:
        again = Event.from_json(event.to_json())
        assert type(again) is type(event) and again == event
    # And they pickle again as they did.
    assert pickle.loads(pickle.dumps(record)).result == record.result
