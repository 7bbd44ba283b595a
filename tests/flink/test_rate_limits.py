"""Rate governance on a MiniCluster: a declared limit is for the whole job (parallelism 2
stays under it, as the quota server counts), and a key over its token budget is handled
by the error strategy while the other keys go on."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pyflink.common.typeinfo import Types

from flink_agents.api.resource import ResourceDescriptor
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.testing.minicluster import collect, make_env
from flink_agents.testing.servers import OpenAIServer, QuotaServer
from tests.flink.harness import MODE
from tests.integrations.agents import ChatAgent

pytestmark = pytest.mark.flink


def _agent(base_url: str, **connection: Any) -> ChatAgent:
    agent = ChatAgent()
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=OpenAIChatModelConnection, api_base_url=base_url, api_key="sk-t", **connection
        ),
    )
    agent.add_resource(
        "model", ResourceDescriptor(clazz=OpenAIChatModelSetup, connection="conn", model="m")
    )
    return agent


def _run(env: Any, agents_env: Any, agent: ChatAgent, records: list[str]) -> list[Any]:
    stream = env.from_collection(records, type_info=Types.STRING())
    out = (
        agents_env.from_datastream(stream, key_selector=lambda r: r.split()[0])
        .apply(agent)
        .to_datastream()
    )
    return collect(out)


def test_parallelism_2_stays_under_the_job_wide_limit() -> None:
    # 20 requests a second with one second of burst. Each subtask paces at 10 a second:
    # a subtask pacing at the whole limit would make the two send 40 a second and get 429s.
    with QuotaServer(requests_per_minute=1200, latency=(0.02, 0.05)) as server:
        env, agents_env = make_env(parallelism=2)
        agent = _agent(server.base_url, requests_per_minute=1200, adaptive=False)
        started = time.monotonic()
        results = _run(env, agents_env, agent, [f"k{i} question {i}" for i in range(100)])
        wall = time.monotonic() - started
    print(
        f"\n[{MODE}] parallelism 2 under 20 req/s: {server.accepted} answers, "
        f"{server.refused} refused, most in one second {server.max_accepted_in(1.0)}, "
        f"{wall:.1f}s"
    )
    assert len(results) == 100 and all("content" in r for r in results), results[:3]
    # Not adaptive: a 429 would be retried with backoff, but the server counts it.
    assert server.refused == 0 and server.accepted == 100


def test_a_key_over_its_budget_is_handled_by_the_error_strategy_and_others_go_on() -> None:
    # Each reply reports 18 tokens: key a's third call crosses 40, its fourth is refused.
    with OpenAIServer(["ok"]) as server:
        env, agents_env = make_env(
            **{"budget.tokens-per-key-per-day": 40, "error-handling-strategy": "ignore"}
        )
        records = [f"a q{i}" for i in range(4)] + [f"{k} q" for k in ("b", "c", "d")]
        results = _run(env, agents_env, _agent(server.base_url), records)
        calls = len(server.chat_requests)
    refused = [r for r in results if "error" in r]
    print(f"\n[{MODE}] budget job: {len(results)} outputs, {len(refused)} refused, {calls} calls")
    assert len(results) == 7 and calls == 6
    assert len(refused) == 1 and refused[0]["type"] == "BudgetExhaustedError"
    assert "key 'a' used 54 of its 40 tokens" in refused[0]["error"]


def test_a_keys_budget_count_survives_a_failure_and_restore() -> None:
    from flink_agents.testing.run import run_agent

    # 40 tokens a day for key a, 18 a call: its third call crosses the budget and the
    # fourth is refused. The job fails once after the first two inputs (their count
    # committed and checkpointed) and restarts from that checkpoint: the fourth input is
    # refused only if the count survived the restore.
    inputs = ["a q0", "a q1", "a q2", "a q3", "b q0"]
    with OpenAIServer(["ok"]) as server:
        run = run_agent(
            _agent(server.base_url),
            inputs,
            key=lambda r: r.split()[0],
            mode=MODE,
            config={"budget.tokens-per-key-per-day": 40, "error-handling-strategy": "ignore"},
            fail_after=2,
        )
        calls = len(server.chat_requests)
    outputs = run.outputs
    print(f"\n[{MODE}] budget across a restore: {calls} calls, failures {run.failures}")
    assert run.failures == 1
    assert ["content" in o for o in outputs["a"]] == [True, True, True, False]
    assert outputs["a"][3]["type"] == "BudgetExhaustedError"
    assert "used 54 of its 40 tokens" in outputs["a"][3]["error"]
    assert ["content" in o for o in outputs["b"]] == [True]
    # Calls of runs committed before the restored checkpoint were not made again.
    assert calls == 4
