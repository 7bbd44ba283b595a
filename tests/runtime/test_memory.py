"""Short-term / sensory memory semantics (MemoryObject over a snapshot)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from flink_agents.api.memory_reference import MemoryRef
from flink_agents.errors import MemoryValueError
from flink_agents.runtime.memory import MemoryStore, StoredMemoryObject


class Point(BaseModel):
    x: int
    y: int


def fresh(snapshot=None):
    store = MemoryStore(snapshot)
    return store, StoredMemoryObject(store)


def test_nested_paths_objects_and_field_names():
    store, mem = fresh()
    ref = mem.set("a.b.c", 1)
    assert ref == MemoryRef(path="a.b.c")
    assert mem.get("a.b.c") == 1 and mem.get(ref) == 1 and ref.resolve(mem) == 1
    a = mem.get("a")
    assert a.get_field_names() == ["b"]
    assert a.get("b").get("c") == 1
    assert mem.get_fields() == {"a": {"b": {"c": 1}}}
    assert mem.is_exist("a.b") and not mem.is_exist("a.x")
    assert mem.get("missing") is None


def test_new_object_and_overwrite():
    _, mem = fresh()
    obj = mem.new_object("user")
    obj.set("name", "Ann")
    assert mem.get("user.name") == "Ann"
    assert mem.new_object("user").get("name") == "Ann"  # existing object kept
    mem.set("flag", 1)
    with pytest.raises(MemoryValueError, match="holds a value"):
        mem.new_object("flag")
    mem.new_object("flag", overwrite=True)
    assert mem.get("flag").get_field_names() == []
    mem.set("user", "plain")  # replacing an object by a value drops its fields
    assert mem.get("user") == "plain" and not mem.is_exist("user.name")


def test_values_must_be_json_like():
    _, mem = fresh()
    mem.set("p", Point(x=1, y=2))
    assert mem.get("p") == {"x": 1, "y": 2}
    mem.set("t", (1, "a", None, {"k": [1.5]}))
    assert mem.get("t") == [1, "a", None, {"k": [1.5]}]
    for bad in (object(), {1: "x"}, {1, 2}, float("nan")):
        with pytest.raises(MemoryValueError):
            mem.set("bad", bad)
    with pytest.raises(MemoryValueError, match="invalid memory path"):
        mem.set("a..b", 1)
    mem.set("leaf", 1)
    with pytest.raises(MemoryValueError, match="holds a value, not an object"):
        mem.set("leaf.child", 2)


def test_changes_are_tracked_against_the_snapshot():
    store, mem = fresh({"a": {"__memory_object__": 1}, "a.b": 1, "c": 2})
    mem.set("c", 3)
    mem.set("a", "flat")
    assert store.updates == {"c": 3, "a": "flat"}
    assert store.deletes == {"a.b"}
    assert store.snapshot() == {"a": "flat", "c": 3}


def test_mark_and_reset_undo_a_failed_attempt():
    store, mem = fresh({"x": 1})
    mark = store.mark()
    mem.set("x", 2)
    mem.set("y", 3)
    store.reset(mark)
    assert mem.get("x") == 1 and not mem.is_exist("y")
