"""The OpenTelemetry export on the local environment and from an event log: spans reach a
real OTLP receiver on 127.0.0.1 (HTTP and gRPC) with the run/action/call structure and the
GenAI attributes, no secret anywhere; sampling, failures and options."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.cli import main
from flink_agents.errors import ConfigurationError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner
from flink_agents.runtime.observability.otel import OtelObserver, sampled, trace_id_of
from flink_agents.runtime.observability.otel_options import attach_otel
from flink_agents.testing.servers import OpenAIServer
from tests.flink.agents import chat_agent
from tests.observability.otel_agents import (
    AGENT_NAME,
    COMPLETION_TOKENS,
    MODEL,
    PROMPT_TOKENS,
    SECRET,
    URL_PASSWORD,
    connection,
    react_agent,
    respond,
)
from tests.observability.otlp_receiver import OTLPReceiver, ReceivedSpan, tree

#: One ReAct run: its spans, as a tree of names.
REACT_TREE = [
    f"invoke_agent {AGENT_NAME}",
    "  action react_start_action",
    "  action chat_model_action",
    f"    chat {MODEL}",
    "  action tool_call_action",
    "    execute_tool lookup",
    "  action chat_model_action",
    f"    chat {MODEL}",
    "  action react_stop_action",
]
SPANS_PER_RUN = len(REACT_TREE)


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as rx:
        yield rx


@pytest.fixture
def model_server() -> Iterator[OpenAIServer]:
    with OpenAIServer(respond=respond, api_key=SECRET) as server:
        yield server


def _run_react(config: dict[str, Any], server: OpenAIServer, keys: list[str]) -> list[Any]:
    env = AgentsExecutionEnvironment.get_execution_environment(**config)
    env.add_resource("openai", connection(server.base_url))
    out = env.from_list([{"key": k, "value": k} for k in keys]).apply(react_agent()).to_list()
    env.execute()
    return out


def _texts(span: ReceivedSpan) -> list[str]:
    """Every text of a span: name, status, attribute and resource keys and values."""
    values: list[Any] = [span.name, span.status_message]
    for attrs in (span.attributes, span.resource):
        for k, v in attrs.items():
            values += [k, *(v if isinstance(v, list) else [v])]
    return [str(v) for v in values]


def assert_no_secret(spans: list[ReceivedSpan]) -> None:
    for span in spans:
        for text in _texts(span):
            assert SECRET not in text and URL_PASSWORD not in text, (span.name, text)


def check_react_traces(spans: list[ReceivedSpan], keys: list[str]) -> dict[str, list[ReceivedSpan]]:
    """The structure and attributes every ReAct run's trace must have; its spans by key."""
    traces: dict[str, list[ReceivedSpan]] = {}
    for trace_id, trace in {s.trace_id: None for s in spans}.items():
        del trace
        trace = [s for s in spans if s.trace_id == trace_id]
        assert tree(trace) == REACT_TREE
        root = next(s for s in trace if s.parent_id is None)
        run_id = root.attributes["flink_agents.run_id"]
        assert int(trace_id, 16) == trace_id_of(run_id)  # the same id from an event log
        assert root.kind == "INTERNAL" and root.status == "UNSET"
        assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert root.attributes["gen_ai.agent.name"] == AGENT_NAME
        assert root.attributes["gen_ai.usage.input_tokens"] == 2 * PROMPT_TOKENS
        assert root.attributes["gen_ai.usage.output_tokens"] == 2 * COMPLETION_TOKENS
        chats = [s for s in trace if s.name.startswith("chat ")]
        for chat in chats:
            assert chat.kind == "CLIENT"
            attrs = chat.attributes
            assert attrs["gen_ai.operation.name"] == "chat"
            assert attrs["gen_ai.provider.name"] == attrs["gen_ai.system"] == "openai"
            assert attrs["gen_ai.request.model"] == attrs["gen_ai.response.model"] == MODEL
            assert attrs["gen_ai.usage.input_tokens"] == PROMPT_TOKENS
            assert attrs["gen_ai.usage.output_tokens"] == COMPLETION_TOKENS
        assert [c.attributes["gen_ai.response.finish_reasons"] for c in chats] == [
            ["tool_calls"],
            ["stop"],
        ]
        tool = next(s for s in trace if s.name == "execute_tool lookup")
        assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
        assert tool.attributes["gen_ai.tool.name"] == "lookup"
        # children lie within their parents
        by_id = {s.span_id: s for s in trace}
        for span in trace:
            if span.parent_id is not None:
                parent = by_id[span.parent_id]
                assert parent.start_ns <= span.start_ns <= span.end_ns <= parent.end_ns + 1000
        traces[root.attributes["flink_agents.key"]] = trace
    assert sorted(traces) == sorted(keys)
    assert_no_secret(spans)
    return traces


def test_local_job_exports_runs_as_genai_spans(
    receiver: OTLPReceiver, model_server: OpenAIServer
) -> None:
    keys = ["alice", "mallory"]
    out = _run_react(
        {"otel.enabled": True, "otel.endpoint": receiver.url, "otel.flush-ms": 100},
        model_server,
        keys,
    )
    assert [next(iter(o)) for o in out] == keys
    spans = receiver.wait_for_spans(SPANS_PER_RUN * len(keys))
    assert len(spans) == SPANS_PER_RUN * len(keys)
    assert {s.path for s in spans} == {"/v1/traces"}
    traces = check_react_traces(spans, keys)
    resource = spans[0].resource
    assert resource["service.name"] == "flink-agents"
    assert resource["flink.task.name"] == "local" and resource["flink.subtask.index"] == 0
    assert resource["flink.job.id"].startswith("local-")
    assert {s.scope for s in spans} == {"flink_agents"}
    # mallory's tool call failed: an error span whose message is masked
    failed = next(s for s in traces["mallory"] if s.name == "execute_tool lookup")
    assert failed.status == "ERROR" and failed.attributes["error.type"] == "RuntimeError"
    assert "lookup refused with key ***" in failed.status_message
    assert "https://svc:***@vault.example" in failed.status_message
    ok = next(s for s in traces["alice"] if s.name == "execute_tool lookup")
    assert ok.status == "UNSET" and "error.type" not in ok.attributes


def test_sampling_keeps_the_runs_whose_trace_id_is_below_the_ratio(
    receiver: OTLPReceiver,
) -> None:
    config = AgentConfiguration({"otel.enabled": True, "otel.endpoint": receiver.url})
    config.set_str("otel.sample-ratio", "0.3")
    runner = AgentRunner(AgentPlan.from_agent(chat_agent(), config))
    observer = attach_otel(runner, job_id="sampling", task_name="t", subtask=0)
    assert isinstance(observer, OtelObserver)

    async def go() -> None:
        for i in range(60):
            await runner.run(f"k{i}", {"i": i})

    asyncio.run(go())
    runner.close()  # flushes
    roots = [s for s in receiver.spans if s.parent_id is None]
    run_ids = {s.attributes["flink_agents.run_id"] for s in roots}
    expected = {
        f"{runner._run_prefix}{n:08x}"
        for n in range(1, 61)
        if sampled(trace_id_of(f"{runner._run_prefix}{n:08x}"), 0.3)
    }
    assert run_ids == expected and 5 < len(run_ids) < 40
    # every span of a kept run arrived: root, 3 actions, 1 model call
    assert len(receiver.spans) == 5 * len(run_ids)


def test_ratio_zero_exports_nothing(receiver: OTLPReceiver) -> None:
    config = AgentConfiguration(
        {"otel.enabled": True, "otel.endpoint": receiver.url, "otel.sample-ratio": 0.0}
    )
    runner = AgentRunner(AgentPlan.from_agent(chat_agent(), config))
    attach_otel(runner, job_id="none", task_name="t", subtask=0)
    asyncio.run(runner.run("k", {"i": 1}))
    runner.close()
    assert receiver.requests == []


def test_a_failing_collector_is_counted_and_warned_about_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with OTLPReceiver(refuse=100) as refusing:
        config = AgentConfiguration(
            {"otel.enabled": True, "otel.endpoint": refusing.url, "otel.batch-size": 4}
        )
        runner = AgentRunner(AgentPlan.from_agent(chat_agent(), config))
        observer = attach_otel(runner, job_id="down", task_name="t", subtask=0)
        assert isinstance(observer, OtelObserver)

        async def go() -> list[Any]:
            return [await runner.run(f"k{i}", {"i": i}) for i in range(3)]

        with caplog.at_level(logging.WARNING, logger="flink_agents.otel"):
            results = asyncio.run(go())
            observer.flush()
            asyncio.run(go())
            runner.close()
    assert [r.outputs for r in results] == [[{"i": i}] for i in range(3)]  # the job goes on
    metrics = runner.metrics
    assert metrics.get_counter("otelExportErrors").get_count() == 2  # one per flush
    assert metrics.get_counter("otelSpansDropped").get_count() == 2 * 3 * 5
    assert metrics.get_counter("otelSpansExported").get_count() == 0
    assert len([r for r in caplog.records if "export failed" in r.getMessage()]) == 1


def test_a_full_queue_drops_runs_and_counts_them(
    receiver: OTLPReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    config = AgentConfiguration(
        {
            "otel.enabled": True,
            "otel.endpoint": receiver.url,
            "otel.queue-size": 12,
            "otel.flush-ms": 60_000,
        }
    )
    runner = AgentRunner(AgentPlan.from_agent(chat_agent(), config))
    attach_otel(runner, job_id="full", task_name="t", subtask=0)

    async def go() -> None:
        for i in range(5):
            await runner.run(f"k{i}", {"i": i})

    with caplog.at_level(logging.WARNING, logger="flink_agents.otel"):
        asyncio.run(go())
        runner.close()
    dropped = runner.metrics.get_counter("otelSpansDropped").get_count()
    exported = runner.metrics.get_counter("otelSpansExported").get_count()
    assert dropped > 0 and exported == len(receiver.spans) > 0
    assert len({s.trace_id for s in receiver.spans}) * 5 == exported  # whole runs only
    assert any("queue full" in r.getMessage() for r in caplog.records)


def test_console_exporter_prints_one_json_span_per_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = AgentsExecutionEnvironment.get_execution_environment(
        **{"otel.enabled": True, "otel.exporter": "console"}
    )
    env.from_list([{"key": "a", "value": {"x": 1}}]).apply(chat_agent()).to_list()
    env.execute()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    assert sorted(s["name"] for s in lines) == [
        "action answer",
        "action ask_model",
        "action chat_model_action",
        "chat",  # the scripted setup names no model
        "invoke_agent",
    ]
    chat = next(s for s in lines if s["name"] == "chat")
    assert chat["attributes"]["gen_ai.provider.name"] == "scripted"


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("otel.sample-ratio", "1.5", "must be from 0.0 to 1.0"),
        ("otel.exporter", "zipkin", "must be one of otlp-http, otlp-grpc, console"),
        ("otel.endpoint", "127.0.0.1:4318", "must be an http:// or https:// URL"),
        ("otel.endpoint", "https://u:p@collector:4318", "OTEL_EXPORTER_OTLP_HEADERS"),
        ("otel.batch-size", "0", "must be positive"),
    ],
)
def test_bad_options_are_clear_errors(key: str, value: str, expected: str) -> None:
    config = AgentConfiguration()
    with pytest.raises(ConfigurationError, match=expected) as info:
        config.set_str(key, value)
    assert key in str(info.value)
    assert "p@collector" not in str(info.value) or key != "otel.endpoint"


def test_off_imports_no_opentelemetry_and_adds_no_observer() -> None:
    script = textwrap.dedent(
        """
        import sys
        from flink_agents.api.execution_environment import AgentsExecutionEnvironment
        from flink_agents.runtime.local.runner import LocalRunner
        from flink_agents.plan.agent_plan import AgentPlan
        from tests.flink.agents import chat_agent
        env = AgentsExecutionEnvironment.get_execution_environment()
        out = env.from_list([{"key": "a", "value": {"x": 1}}]).apply(chat_agent()).to_list()
        env.execute()
        assert out == [{"a": {"x": 1}}], out
        runner = LocalRunner(AgentPlan.from_agent(chat_agent())).runner
        assert runner.observer is runner.agent_metrics, runner.observer
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))
        assert not loaded, loaded
        print("ok")
        """
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# -- from an event log: flink-agents trace --otlp -------------------------------------------------
def test_trace_otlp_exports_what_the_live_export_did(
    tmp_path: Path,
    receiver: OTLPReceiver,
    model_server: OpenAIServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    keys = ["alice", "mallory", "bob"]
    _run_react(
        {
            "otel.enabled": True,
            "otel.endpoint": receiver.url,
            "event-log.enabled": True,
            "baseLogDir": str(tmp_path),
        },
        model_server,
        keys,
    )
    live = receiver.wait_for_spans(SPANS_PER_RUN * len(keys))
    with OTLPReceiver() as offline:
        code = main(["trace", str(tmp_path), "--otlp", offline.url, "--agent-name", AGENT_NAME])
        assert code == 0
        assert capsys.readouterr().out.strip() == (
            f"exported {SPANS_PER_RUN * len(keys)} spans of 3 runs to {offline.url}"
        )
        from_log = offline.spans
    check_react_traces(from_log, keys)
    # the same traces, spans and attributes as the live export (event ids aside: the log
    # knows the executions' trigger ids)
    assert {s.trace_id for s in from_log} == {s.trace_id for s in live}

    def shape(spans: list[ReceivedSpan]) -> list[tuple[str, str, str, list[str]]]:
        return sorted(
            (s.trace_id, s.name, s.status, sorted(set(s.attributes) - {"flink_agents.event.id"}))
            for s in spans
        )

    assert shape(from_log) == shape(live)


def test_trace_otlp_sample_ratio_and_errors(
    tmp_path: Path, model_server: OpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _run_react(
        {"event-log.enabled": True, "baseLogDir": str(tmp_path)}, model_server, ["a", "b", "c"]
    )
    with OTLPReceiver() as rx:
        assert main(["trace", str(tmp_path), "--otlp", rx.url, "--sample-ratio", "0"]) == 0
        assert rx.requests == []
        assert "exported 0 spans of 0 runs" in capsys.readouterr().out
    assert main(["trace", str(tmp_path), "--otlp", "localhost:4318"]) == 2
    assert "must be an http:// or https:// URL" in capsys.readouterr().err
    with OTLPReceiver(refuse=10) as refusing:
        assert main(["trace", str(tmp_path), "--otlp", refusing.url]) == 1
        assert "did not accept 27 of 27 spans" in capsys.readouterr().err


# -- gRPC ------------------------------------------------------------------------------------------
class _GrpcReceiver:
    """A real OTLP/gRPC trace service on 127.0.0.1."""

    def __init__(self) -> None:
        import grpc
        from opentelemetry.proto.collector.trace.v1 import (
            trace_service_pb2,
            trace_service_pb2_grpc,
        )

        received = self.spans = []  # type: list[Any]

        class Service(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's name
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        received.extend(ss.spans)
                return trace_service_pb2.ExportTraceServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()


def test_otlp_grpc_exporter() -> None:
    grpc_rx = _GrpcReceiver()
    try:
        config = AgentConfiguration(
            {
                "otel.enabled": True,
                "otel.exporter": "otlp-grpc",
                "otel.endpoint": f"http://127.0.0.1:{grpc_rx.port}",
            }
        )
        runner = AgentRunner(AgentPlan.from_agent(chat_agent(), config))
        attach_otel(runner, job_id="grpc", task_name="t", subtask=0)
        asyncio.run(runner.run("k", {"i": 1}))
        runner.close()
        assert sorted(s.name for s in grpc_rx.spans) == [
            "action answer",
            "action ask_model",
            "action chat_model_action",
            "chat",
            "invoke_agent",
        ]
        assert runner.metrics.get_counter("otelSpansExported").get_count() == 5
    finally:
        grpc_rx.server.stop(0)
