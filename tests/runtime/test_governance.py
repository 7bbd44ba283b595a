"""Token budgets and the response cache of the built-in chat action, on the core and the
local host, against a real OpenAI stand-in (each reply reports 11 + 7 = 18 tokens)."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.errors import BudgetExhaustedError, ConfigurationError, MemoryValueError
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime import governance
from flink_agents.runtime.core import AgentRunner
from flink_agents.runtime.governance import KEY_BUDGET_PATH
from flink_agents.runtime.local.runner import LocalRunner
from flink_agents.runtime.memory import MemoryStore, StoredMemoryObject
from flink_agents.testing.servers import OpenAIServer
from tests.integrations.agents import ChatAgent
from tests.observability.agents import dump

TOKENS = 18  # 11 prompt + 7 completion, the stand-in's default usage


def _agent(server: OpenAIServer, **setup: Any) -> Agent:
    agent = ChatAgent()
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=OpenAIChatModelConnection, api_base_url=server.base_url, api_key="sk-t"
        ),
    )
    agent.add_resource(
        "model",
        ResourceDescriptor(clazz=OpenAIChatModelSetup, connection="conn", model="m", **setup),
    )
    return agent


def _plan(server: OpenAIServer, config: dict[str, Any], **setup: Any) -> AgentPlan:
    return AgentPlan.from_agent(_agent(server, **setup), config)


def _outputs(results: list[Any]) -> list[tuple[Any, dict[str, Any]]]:
    return [(r.key, o) for r in results for o in r.outputs]


def _log(directory: Path) -> list[dict[str, Any]]:
    files = sorted(directory.glob("events-*.log"))
    assert len(files) == 1, files
    return dump(str(files[0]))


# -- budgets -------------------------------------------------------------------------------------


def test_a_key_over_its_budget_follows_the_error_strategy_and_other_keys_go_on(tmp_path):
    config = {
        "budget.tokens-per-key-per-day": 40,  # a third call crosses it; a fourth is refused
        "error-handling-strategy": "ignore",
        "event-log.enabled": True,
        "baseLogDir": str(tmp_path),
    }
    with OpenAIServer(["ok"]) as server, LocalRunner(_plan(server, config)) as runner:
        inputs = [("a", "q1"), ("b", "q1"), ("a", "q2"), ("a", "q3"), ("b", "q2"), ("a", "q4")]
        out = _outputs(runner.run(inputs))
        memory = runner.memory
        metrics = runner.runner.metrics.to_dict()
        requests = len(server.chat_requests)
    by_key: dict[str, list[dict[str, Any]]] = {}
    for key, o in out:
        by_key.setdefault(key, []).append(o)
    assert [("content" in o) for o in by_key["a"]] == [True, True, True, False]
    refused = by_key["a"][3]
    assert refused["type"] == "BudgetExhaustedError"
    assert "used 54 of its 40 tokens (budget.tokens-per-key-per-day)" in refused["error"]
    assert all("content" in o for o in by_key["b"])
    assert requests == 5
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    assert memory["a"][KEY_BUDGET_PATH] == {"day": today, "tokens": 3 * TOKENS}
    assert memory["b"][KEY_BUDGET_PATH] == {"day": today, "tokens": 2 * TOKENS}
    assert metrics["numOfBudgetExhausted"] == 1
    notes = [r for r in _log(tmp_path) if r["record"] == "budget"]
    assert len(notes) == 1
    note = notes[0]
    assert note["key"] == "a" and note["action"] == "chat_model_action"
    assert (note["budget"], note["used"], note["limit"], note["then"]) == ("key", 54, 40, "error")
    assert note["option"] == "budget.tokens-per-key-per-day" and note["resetsAt"] > time.time()


def test_the_key_count_is_kept_across_batches_and_hidden_from_actions():
    config = {"budget.tokens-per-key-per-day": 30, "error-handling-strategy": "ignore"}
    with OpenAIServer(["ok"]) as server, LocalRunner(_plan(server, config)) as runner:
        first = _outputs(runner.run([("a", "q1")]))
        second = _outputs(runner.run([("a", "q2"), ("a", "q3")]))
        memory = dict(runner.memory["a"])
    assert "content" in first[0][1]
    assert ["content" in o for _, o in second] == [True, False]  # 36 >= 30 after the 2nd
    # The reserved path is not among the memory's fields and cannot be written.
    store = MemoryStore(memory)
    assert StoredMemoryObject(store).get_field_names() == []
    with pytest.raises(MemoryValueError, match="reserved"):
        StoredMemoryObject(store).set(KEY_BUDGET_PATH, {"tokens": 0})
    with pytest.raises(MemoryValueError, match="reserved"):
        StoredMemoryObject(store).new_object("__flink_agents__")


def test_a_restored_run_counts_its_replayed_calls_exactly_once():
    # A run whose model call completed before a failure is run again from its durable
    # records after the restore: the count it commits is that of the first attempt.
    config = {"budget.tokens-per-key-per-day": 1000}
    with OpenAIServer(["ok"]) as server:
        plan = _plan(server, config)
        first = AgentRunner(plan)
        done = first.run_sync("k", "question", memory={})
        first.close()
        again = AgentRunner(plan)
        replayed = again.run_sync("k", "question", memory={}, durable=done.durable_records)
        again.close()
        calls = len(server.chat_requests)
    assert calls == 1
    assert replayed.memory_updates[KEY_BUDGET_PATH]["tokens"] == TOKENS
    assert replayed.memory_updates == done.memory_updates


def test_a_replayed_call_is_answered_from_the_log_even_when_the_budget_is_spent_now():
    # A restore may find the key's budget spent by now (a job budget restarted, a day
    # over): the recorded call is still replayed, so the run repeats what it did.
    config = {"budget.tokens-per-job-per-hour": 10, "budget.on-job-exhausted": "error"}
    with OpenAIServer(["ok"]) as server:
        plan = _plan(server, config)
        first = AgentRunner(plan)
        done = first.run_sync("k", "question", memory={})
        first.close()
        again = AgentRunner(plan)
        again.governance.count_job(50)  # spent before the replay
        replayed = again.run_sync("k", "question", memory={}, durable=done.durable_records)
        again.close()
    assert replayed.outputs == done.outputs and "content" in replayed.outputs[0]


def _moments_before(boundary: float, seconds: float, monkeypatch: Any) -> None:
    """Move the budget clock so that ``boundary`` (a window's end) is ``seconds`` away.

    The fake clock starts at its first reading (the first call's budget check), not when the
    test sets it up: a loaded machine that takes longer than ``seconds`` to start the runner
    would otherwise put the first call past the boundary and pause the second one for a
    whole day (the test hung that way under load).
    """
    started: list[float] = []

    def now() -> float:
        if not started:
            started.append(time.time())
        return boundary - seconds + (time.time() - started[0])

    monkeypatch.setattr(governance, "_now", now)


def test_pause_holds_the_key_until_its_day_ends(monkeypatch, tmp_path):
    now = time.time()
    _moments_before((int(now // 86400) + 1) * 86400.0, 2.0, monkeypatch)
    config = {
        "budget.tokens-per-key-per-day": 10,
        "budget.on-key-exhausted": "pause",
        "event-log.enabled": True,
        "baseLogDir": str(tmp_path),
    }
    with OpenAIServer(["ok"]) as server, LocalRunner(_plan(server, config)) as runner:
        out = _outputs(runner.run([("a", "q1"), ("a", "q2"), ("b", "q1")]))
        metrics = runner.runner.metrics.to_dict()
        memory = runner.memory
    assert all("content" in o for _, o in out)  # the second call of a waited, then went
    assert metrics["numOfBudgetExhausted"] == 1 and metrics["callsPausedForBudget"] == 0
    # The second run's call went after midnight: the new day's count holds its tokens only.
    count = memory["a"][KEY_BUDGET_PATH]
    assert count["tokens"] == TOKENS and count["day"] == governance._day(governance._now())
    notes = [r for r in _log(tmp_path) if r["record"] == "budget"]
    assert [(n["key"], n["then"]) for n in notes] == [("a", "pause")]


def test_the_jobs_hourly_budget_pauses_every_key_by_default(monkeypatch):
    now = time.time()
    _moments_before((int(now // 3600) + 1) * 3600.0, 2.0, monkeypatch)
    config = {"budget.tokens-per-job-per-hour": 3 * TOKENS}
    with OpenAIServer(["ok"]) as server, LocalRunner(_plan(server, config)) as runner:
        left_before = runner.runner.metrics.to_dict()["budgetJobTokensLeft"]
        # Calls are checked when they start: the first three run at once and spend it.
        out = _outputs(runner.run([(f"k{i}", "q") for i in range(3)]))
        out += _outputs(runner.run([(f"k{i}", "q") for i in range(3, 5)]))
        metrics = runner.runner.metrics.to_dict()
    assert left_before == 3 * TOKENS
    assert len(out) == 5 and all("content" in o for _, o in out)
    assert metrics["numOfBudgetExhausted"] == 2  # k3 and k4 waited for the next hour
    assert metrics["budgetJobTokensLeft"] == 3 * TOKENS - 2 * TOKENS


def test_the_jobs_budget_can_raise_instead():
    config = {
        "budget.tokens-per-job-per-hour": 2 * TOKENS,
        "budget.on-job-exhausted": "error",
        "error-handling-strategy": "ignore",
    }
    with OpenAIServer(["ok"]) as server, LocalRunner(_plan(server, config)) as runner:
        out = _outputs(runner.run([("k1", "q"), ("k2", "q")]))
        out += _outputs(runner.run([("k3", "q")]))
        # Parallelism 4: each subtask's share is a quarter of the budget.
        runner.runner.resources.place(parallelism=4, subtask_index=0)
        assert runner.runner.governance.job_share() == 2 * TOKENS // 4
    kinds = sorted("content" if "content" in o else o["type"] for _, o in out)
    assert kinds == ["BudgetExhaustedError", "content", "content"]


def test_the_jobs_hourly_count_goes_into_operator_state_and_back_also_after_a_rescale(
    monkeypatch,
):
    from flink_agents.api.core_options import AgentConfiguration
    from flink_agents.runtime.governance import ModelGovernance
    from flink_agents.runtime.metric_groups import SimpleMetricGroup

    def gov() -> ModelGovernance:
        config = AgentConfiguration()
        config.set_str("budget.tokens-per-job-per-hour", "1000")
        return ModelGovernance(config, SimpleMetricGroup())

    now = (time.time() // 3600) * 3600 + 10  # never at the end of an hour
    monkeypatch.setattr(governance, "_now", lambda: now)
    old = [gov(), gov()]
    old[0].count_job(100)
    old[1].count_job(30)
    entries = [g.job_snapshot(i, 2) for i, g in enumerate(old)]
    assert all(e is not None for e in entries)
    # The same parallelism: each subtask goes on with its own count.
    same = gov()
    same.restore_job([e for e in entries if e], 1, 2)
    assert same._job_used(now) == 30
    # Rescaled to 3: each takes a third of the job's 130, rounded up.
    rescaled = gov()
    rescaled.restore_job([e for e in entries if e], 2, 3)
    assert rescaled._job_used(now) == 44
    # An hour that has passed is not carried over; without a job budget nothing is kept.
    past = gov()
    past.restore_job(['{"subtask": 0, "parallelism": 2, "window_end": 3600.0, "tokens": 9}'], 0, 2)
    assert past._job_used(now) == 0
    assert ModelGovernance(AgentConfiguration(), SimpleMetricGroup()).job_snapshot(0, 1) is None


def test_bad_budget_options_are_clear_errors():
    from flink_agents.api.core_options import AgentConfiguration

    config = AgentConfiguration()
    with pytest.raises(ConfigurationError, match="budget.tokens-per-key-per-day"):
        config.set_str("budget.tokens-per-key-per-day", "-5")
    with pytest.raises(ConfigurationError, match="budget.on-key-exhausted"):
        config.set_str("budget.on-key-exhausted", "explode")
    with pytest.raises(ConfigurationError, match="model-cache.max-entries"):
        config.set_str("model-cache.max-entries", "0")


def test_budget_exhausted_error_pickles():
    import pickle

    err = BudgetExhaustedError("spent", budget="key", used=5, limit=4, resets_at=1.0, key="a")
    again = pickle.loads(pickle.dumps(err))
    assert (again.budget, again.used, again.limit, again.key) == ("key", 5, 4, "a")
    assert not again.retryable


# -- the cache -------------------------------------------------------------------------------------


def test_identical_requests_at_temperature_0_are_answered_from_the_cache(tmp_path):
    config = {"model-cache.enabled": True, "event-log.enabled": True, "baseLogDir": str(tmp_path)}
    with OpenAIServer(["first", "second", "third"]) as server:
        with LocalRunner(_plan(server, config, temperature=0)) as runner:
            out = _outputs(runner.run([("a", "same"), ("b", "same"), ("c", "other")]))
            out += _outputs(runner.run([("d", "same")]))
            metrics = runner.runner.metrics.to_dict()
        requests = len(server.chat_requests)
    contents = {k: o["content"] for k, o in out}
    assert requests == 2  # "same" once, "other" once
    assert contents["a"] == contents["b"] == contents["d"]
    hits = [o for _, o in out if o["extra"].get("cached")]
    assert len(hits) == 2
    assert all("usage" not in o["extra"] and o["extra"]["cached_usage"] for o in hits)
    assert (metrics["modelCacheHits"], metrics["modelCacheMisses"]) == (2, 2)
    assert metrics["modelCacheSize"] == 2
    calls = [r for r in _log(tmp_path) if r["record"] == "call" and r["kind"] == "model"]
    assert sorted(bool(c.get("rate", {}).get("cached")) for c in calls) == [
        False,
        False,
        True,
        True,
    ]


@pytest.mark.parametrize(
    ("temperature", "config", "cached"),
    [
        (0.7, {}, False),
        (None, {}, False),
        (0.7, {"model-cache.any-temperature": True}, True),
    ],
)
def test_only_temperature_0_is_cached_unless_allowed(temperature, config, cached):
    config = {"model-cache.enabled": True, **config}
    with OpenAIServer(["ok"]) as server:
        with LocalRunner(_plan(server, config, temperature=temperature)) as runner:
            runner.run([("a", "same")])
            runner.run([("b", "same")])
        assert len(server.chat_requests) == (1 if cached else 2)


def test_the_cache_is_bounded():
    config = {"model-cache.enabled": True, "model-cache.max-entries": 2}
    with OpenAIServer(["ok"]) as server:
        with LocalRunner(_plan(server, config, temperature=0)) as runner:
            runner.run([("k", "q1"), ("k", "q2"), ("k", "q3")])  # q1 is evicted
            runner.run([("k", "q3"), ("k", "q1")])
            size = runner.runner.metrics.to_dict()["modelCacheSize"]
        assert len(server.chat_requests) == 4 and size == 2


def test_a_cached_answer_is_replayed_from_the_durable_log_after_a_restore():
    config = {"model-cache.enabled": True}
    with OpenAIServer(["the answer"]) as server:
        plan = _plan(server, config, temperature=0)
        slot = AgentRunner(plan)
        slot.run_sync("a", "same")
        hit = slot.run_sync("b", "same")  # answered from the cache, recorded durably
        slot.close()
        (record,) = hit.durable_records.values()
        assert record.result.extra_args["cached"] is True
        # After a restore the slot's cache is empty; b's run replays its log.
        restored = AgentRunner(plan)
        again = restored.run_sync("b", "same", durable=hit.durable_records)
        metrics = restored.metrics.to_dict()
        restored.close()
        calls = len(server.chat_requests)
    assert calls == 1
    assert again.outputs == hit.outputs
    assert again.outputs[0]["extra"]["cached"] is True
    assert (metrics["modelCacheHits"], metrics["modelCacheMisses"]) == (0, 0)
    assert metrics["numOfCallsReplayed"] == 1
