"""Timeouts on a MiniCluster: a hung synchronous tool is abandoned at its timeout and a
hung async model call is cancelled, while other keys go on (one job)."""

from __future__ import annotations

import time

import pytest

from flink_agents.testing.minicluster import collect, make_env, source
from tests.flink.harness import MODE
from tests.runtime import timeout_agents

pytestmark = pytest.mark.flink

#: How long the hung tool blocks its thread: a job that waited for it would take longer.
HANG = 45


def test_a_hung_sync_tool_and_a_hung_async_model_call_time_out(tmp_path) -> None:
    log_file = tmp_path / "cancelled.txt"
    records = [
        {"key": "tool", "tool": "hang", "args": {"seconds": HANG}},
        {"key": "model", "tool": "multiply", "args": {"a": 2, "b": 3}, "note": "sleep"},
        {"key": "fine", "tool": "multiply", "args": {"a": 6, "b": 7}},
    ]
    env, agents_env = make_env(**{"model.timeout": 0.5, "error-handling-strategy": "ignore"})
    out = (
        agents_env.from_datastream(source(env, records), lambda r: r["key"])
        .apply(timeout_agents.flink_timeout_agent(str(log_file)))
        .to_datastream()
    )
    start = time.monotonic()
    results = collect(out)
    wall = time.monotonic() - start
    print(f"\n[{MODE}] timeouts job: {wall:.1f}s")
    assert len(results) == 3, results
    hung = [r for r in results if r.startswith("hang[c1]=")]
    assert len(hung) == 1 and "CallTimeoutError" in hung[0] and "0.5s" in hung[0]
    assert "multiply[c1]=42" in results
    model = [r for r in results if r.startswith("CallTimeoutError")]
    assert len(model) == 1 and "chat model 'model'" in model[0], results
    # The hung model call was cancelled (not left running); the job did not wait for the
    # tool's thread (job start-up is 5-9 s here, 30 s on a loaded machine).
    assert log_file.read_text().splitlines() == ["cancelled"]
    assert wall < HANG, wall
