"""The OpenTelemetry export from a Flink MiniCluster job: every run's spans reach a real
OTLP/HTTP receiver on 127.0.0.1 from the subtasks, with the run/action/call structure, the
GenAI attributes, the Flink job and subtask as resource attributes, no secret anywhere."""

from __future__ import annotations

import re

import pytest

from flink_agents.testing import run_agent
from flink_agents.testing.servers import OpenAIServer
from tests.observability.otel_agents import SECRET, connection, react_agent, respond
from tests.observability.otlp_receiver import OTLPReceiver
from tests.observability.test_otel import SPANS_PER_RUN, check_react_traces

pytestmark = pytest.mark.flink


def test_minicluster_job_exports_spans_per_subtask(flink_mode: str) -> None:
    keys = ["alice", "mallory", "bob", "carol"]
    with OTLPReceiver() as receiver, OpenAIServer(respond=respond, api_key=SECRET) as server:
        run = run_agent(
            react_agent(),
            keys,
            key=lambda k: k,
            mode=flink_mode,
            parallelism=2,
            resources={"openai": connection(server.base_url)},
            config={"otel.enabled": True, "otel.endpoint": receiver.url, "otel.flush-ms": 200},
        )
        assert sorted(run.outputs) == sorted(keys)
        assert all(len(run.outputs_of(k)) == 1 for k in keys)
        # The subtasks flush when their runner closes, at the end of the bounded input.
        spans = receiver.wait_for_spans(SPANS_PER_RUN * len(keys), timeout=60)
    assert len(spans) == SPANS_PER_RUN * len(keys)
    traces = check_react_traces(spans, keys)
    for key, trace in traces.items():
        resource = trace[0].resource
        assert re.fullmatch(r"[0-9a-f]{32}", resource["flink.job.id"]), resource
        assert resource["flink.subtask.index"] in (0, 1)
        assert "flink-agents" in resource["flink.task.name"], resource  # the operator's name
        root = next(s for s in trace if s.parent_id is None)
        assert root.attributes["flink_agents.job_id"] == resource["flink.job.id"]
        assert root.attributes["flink_agents.key"] == key
    assert {s.resource["flink.job.id"] for s in spans} == {run.event_log.records[0]["jobId"]}
