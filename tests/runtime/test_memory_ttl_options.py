"""Short-term memory TTL options as upstream names them: state-ttl.ms, its update type
(ON_READ_AND_WRITE restarts it on every run of the key), and our seconds alias."""

from __future__ import annotations

import time

import pytest

from flink_agents.api.core_options import AgentExecutionOptions, ShortTermMemoryTtlUpdate
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.local.runner import LocalRunner
from tests.runtime import unified_agents


@pytest.mark.parametrize(
    ("update_type", "last_read"),
    [(ShortTermMemoryTtlUpdate.ON_READ_AND_WRITE, "x"), ("ON_CREATE_AND_WRITE", None)],
)
def test_memory_ttl_restarts_on_reads_only_with_on_read_and_write(update_type, last_read):
    config = {
        "short-term-memory.state-ttl.ms": 400,
        "short-term-memory.state-ttl.update-type": update_type,
    }
    runner = LocalRunner(AgentPlan.from_agent(unified_agents.MemoAgent(), config))
    outputs = [runner.run([("k", "write:x")])[0].outputs[0]]
    for _ in range(2):
        time.sleep(0.25)  # each read comes before the TTL; the second one after 0.5 s
        outputs.append(runner.run([("k", "read")])[0].outputs[0])
    assert outputs == ["written", "x", last_read]
    runner.close()


def test_ttl_in_seconds_is_the_same_option_in_milliseconds():
    plan = AgentPlan.from_agent(unified_agents.MemoAgent(), {"short-term-memory.ttl": 1.5})
    config = plan.get_config()
    assert plan.config == {"short-term-memory.state-ttl.ms": 1500}
    assert config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_TTL) == 1.5
