"""The Flink function's restore path without a cluster (fake keyed state, a real slot
runtime): a key's pending inputs from before a restore run first, in their order, before
the input that found them, also when they are more than ``max-in-flight``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

pytest.importorskip("pyflink")

from flink_agents.plan.agent_plan import AgentPlan  # noqa: E402
from flink_agents.runtime.flink import function as fn  # noqa: E402
from flink_agents.runtime.flink.output import KEEP_TIMESTAMP  # noqa: E402
from flink_agents.runtime.flink.slot import Item, SlotRuntime  # noqa: E402
from flink_agents.runtime.flink.state import KeyedState  # noqa: E402
from tests.fakes import FakeListState, FakeMapState, FakePythonBackend, FakeValueState  # noqa: E402
from tests.flink import agents  # noqa: E402
from tests.runtime.test_flink_approval_paths import _Ctx  # noqa: E402


def test_more_restored_inputs_than_in_flight_places_run_first_in_order() -> None:
    # One in-flight place, three inputs of u1 pending from before the restore: each takes
    # the place in turn (the chain runs the first while the next waits for it), then the
    # new input.
    plan = AgentPlan.from_agent(agents.memory_agent(latency=0.01), {"max-in-flight": 1})
    backend = FakePythonBackend("u1")
    pending = FakeListState(backend)
    for i in range(3):
        pending.add(Item(f"old-{i}", KEEP_TIMESTAMP, {"key": "u1", "i": i}).to_state())
    function = fn.AgentProcessFunction(plan.model_dump_json(), {}, key_of=lambda r: r["key"])
    slot = SlotRuntime(plan)
    function.bind(
        KeyedState(
            memory=FakeValueState(backend),
            pending=pending,
            durable=FakeMapState(backend),
            approval=FakeValueState(backend),
            check_restored=True,
        ),
        slot,
    )
    ctx = _Ctx(backend)
    sent: list[Any] = []
    operator = threading.Thread(
        target=lambda: sent.extend(function.process_element({"key": "u1", "i": 3}, ctx))
    )
    try:
        operator.start()
        operator.join(20)
        assert not operator.is_alive(), "the operator thread waited for a place for good"
        assert sent == []  # the runs wait on the model: a timer collects them
        work = function._active["u1"]
        assert work.wait_idle(10)
        outputs = [out for _, out in function.on_timer(work.timer_at or 0, ctx)]
        assert [(o["i"], o["count"]) for o in outputs] == [(0, 1), (1, 2), (2, 3), (3, 4)]
        assert "u1" not in function._active and slot._in_flight == 0
        assert pending.get() == []
    finally:
        slot.close()
