"""Durable calls with a reconciler (as Apache Flink Agents documents it): a pending marker
before the call, the reconciler instead of the function after a restore, its outcome
recorded and replayed; and the Flink host saving an outcome that replaces a saved marker."""

from __future__ import annotations

import pytest

from flink_agents.errors import ActionError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner, DurableRecord
from flink_agents.runtime.flink.slot import KeyWork
from tests.runtime import unified_agents

SUBMIT = "tests.runtime.unified_agents.submit_payment"


@pytest.fixture(autouse=True)
def _fresh_payments():
    for calls in unified_agents.PAYMENTS.values():
        calls.clear()


def _runner(agent) -> AgentRunner:
    return AgentRunner(AgentPlan.from_agent(agent))


@pytest.mark.parametrize("agent", ["PaymentAgent", "AsyncPaymentAgent"])
def test_a_call_with_a_reconciler_is_marked_pending_before_it_runs(agent):
    runner = _runner(getattr(unified_agents, agent)())
    seen: list[tuple[str, bool, object]] = []
    result = runner.run_sync(
        "k", "o1", on_record=lambda cid, rec: seen.append((cid, rec.pending, rec.result))
    )
    assert seen == [("1", True, None), ("1", False, "paid:o1")]
    assert result.outputs == ["paid:o1"]
    assert unified_agents.PAYMENTS == {"submitted": ["o1"], "checked": []}
    runner.close()


def test_a_call_without_a_reconciler_writes_no_pending_marker():
    runner = _runner(unified_agents.NoReconcilerPaymentAgent())
    seen: list[bool] = []
    runner.run_sync("k", "o1", on_record=lambda cid, rec: seen.append(rec.pending))
    assert seen == [False]
    runner.close()


@pytest.mark.parametrize("agent", ["PaymentAgent", "AsyncPaymentAgent"])
def test_after_a_restore_a_started_call_asks_the_reconciler_not_the_function(agent):
    runner = _runner(getattr(unified_agents, agent)())
    seen: list[DurableRecord] = []
    restored = {"1": DurableRecord(SUBMIT, pending=True)}
    result = runner.run_sync("k", "o2", durable=restored, on_record=lambda c, r: seen.append(r))
    assert result.outputs == ["found:o2"]
    assert unified_agents.PAYMENTS == {"submitted": [], "checked": ["o2"]}
    assert [(r.pending, r.result) for r in seen] == [(False, "found:o2")]
    # A finished record is replayed: neither the function nor the reconciler runs.
    done = {"1": DurableRecord(SUBMIT, result="paid:o3")}
    assert runner.run_sync("k", "o3", durable=done).outputs == ["paid:o3"]
    assert unified_agents.PAYMENTS == {"submitted": [], "checked": ["o2"]}
    runner.close()


def test_a_reconciler_that_raises_records_the_failure_and_replays_it():
    runner = _runner(unified_agents.PaymentAgent())
    seen: list[DurableRecord] = []
    restored = {"1": DurableRecord(SUBMIT, pending=True)}
    with pytest.raises(ActionError, match="payment lost1 never arrived"):
        runner.run_sync("k", "lost1", durable=restored, on_record=lambda c, r: seen.append(r))
    assert len(seen) == 1 and isinstance(seen[0].error, LookupError)
    # Replayed from the record: the failure comes back without asking the service again.
    with pytest.raises(ActionError, match="never arrived"):
        runner.run_sync("k", "lost1", durable={"1": seen[0]})
    assert unified_agents.PAYMENTS == {"submitted": [], "checked": ["lost1"]}
    runner.close()


def test_a_pending_call_without_a_reconciler_runs_again():
    runner = _runner(unified_agents.NoReconcilerPaymentAgent())
    restored = {"1": DurableRecord(SUBMIT, pending=True)}
    assert runner.run_sync("k", "o4", durable=restored).outputs == ["paid:o4"]
    assert unified_agents.PAYMENTS["submitted"] == ["o4"]
    runner.close()


def test_a_reconciler_must_take_no_arguments():
    runner = _runner(unified_agents.BadReconcilerAgent())
    with pytest.raises(ActionError, match="must be callable with no arguments"):
        runner.run_sync("k", "o5")
    assert unified_agents.PAYMENTS["submitted"] == []
    runner.close()


def test_flink_host_saves_an_outcome_that_replaces_a_saved_pending_marker():
    work = KeyWork("k", {})
    pending, done = DurableRecord(SUBMIT, pending=True), DurableRecord(SUBMIT, result="paid")
    work.record("i1", "1", pending)
    assert work.unpersisted() == [("i1", "1", pending)]
    work.mark_persisted("i1", "1", pending)
    assert work.unpersisted() == []
    work.record("i1", "1", done)
    assert work.unpersisted() == [("i1", "1", done)]
    # A save of the marker that finishes after the outcome came leaves the outcome to save.
    work.mark_persisted("i1", "1", pending)
    assert work.unpersisted() == [("i1", "1", done)]
    work.mark_persisted("i1", "1", done)
    assert work.unpersisted() == [] and work.persisted == {("i1", "1")}
