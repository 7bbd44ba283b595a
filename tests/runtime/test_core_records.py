"""Durable records keep the class path earlier versions pickled into keyed state."""

from __future__ import annotations

import pickle

from flink_agents.runtime.core import DurableRecord


def test_durable_record_pickles_under_its_first_module_path() -> None:
    data = pickle.dumps(DurableRecord("m.f", result={"a": 1}))
    # fa-durable of savepoints taken before runtime/core/ was a package holds this path.
    assert b"flink_agents.runtime.core\x94\x8c\rDurableRecord" in data
    again = pickle.loads(data)
    assert again == DurableRecord("m.f", result={"a": 1})
