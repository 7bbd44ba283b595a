"""Agents written from Apache Flink Agents' documented examples run unchanged here, in the
local environment and on a MiniCluster, against a real local HTTP server that speaks
Ollama's protocol (started by the test)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceType
from flink_agents.api.tools.tool import Tool
from flink_agents.testing.servers import Reply, Request, ScriptedServer
from tests.compat import upstream_examples as ex

EXPECTED_ANALYSES = [
    {"id": "p1", "score": 5, "reasons": []},
    {"id": "p2", "score": 1, "reasons": ["shipping damage"]},
]
EXPECTED_UNIFIED = [
    {"value": "p1:42", "payment": "paid-p1:42", "greeting": "hello"},
    {"value": "p2:42", "payment": "paid-p2:42", "greeting": "hello"},
]


def _ollama() -> ScriptedServer:
    return ScriptedServer(respond=lambda request: Reply(ex.ollama_review_model(request.body)))


def _setup(agents_env: Any, base_url: str) -> None:
    """The quickstarts' environment setup, with the connection at the test's server."""
    agents_env.get_config().set(AgentExecutionOptions.NUM_ASYNC_THREADS, 2)
    agents_env.add_resource(
        "ollama_server", ResourceType.CHAT_MODEL_CONNECTION, ex.ollama_connection(base_url)
    ).add_resource(
        "notify_shipping_manager", ResourceType.TOOL, Tool.from_callable(ex.notify_shipping_manager)
    )


def _tool_results(requests: list[Request]) -> list[dict[str, Any]]:
    """Tool result messages the model received (proof that the tool ran)."""
    return [
        m for r in requests for m in (r.body or {}).get("messages", []) if m.get("role") == "tool"
    ]


def _write_conf(directory: Path) -> None:
    (directory / "config.yaml").write_text(
        "agent:\n  compat:\n    greeting: hello\n  max-retries: 2\n", encoding="utf-8"
    )


def _local(agent: Any, base_url: str, conf: Path) -> list[Any]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    _setup(env, base_url)
    env.get_config(str(conf / "config.yaml"))
    out = env.from_list([{"key": r.id, "value": r} for r in ex.REVIEWS]).apply(agent).to_list()
    env.execute()
    return [next(iter(o.values())) for o in out]


def _dumped(outputs: list[Any]) -> list[Any]:
    dumped = [o.model_dump() if hasattr(o, "model_dump") else o for o in outputs]
    return sorted(dumped, key=lambda o: json.dumps(o, sort_keys=True))


def test_quickstart_agents_and_unified_events_run_locally(tmp_path):
    _write_conf(tmp_path)
    with _ollama() as server:
        workflow = _local(ex.ReviewAnalysisAgent(), server.url, tmp_path)
        assert len(_tool_results(server.requests)) == 1
        react = _local(ex.review_analysis_react_agent(), server.url, tmp_path)
        assert len(_tool_results(server.requests)) == 2
        unified = _local(ex.UnifiedEventsAgent(), server.url, tmp_path)
    assert all(isinstance(o, ex.ProductReviewAnalysisRes) for o in workflow + react)
    assert _dumped(workflow) == _dumped(react) == EXPECTED_ANALYSES
    assert _dumped(unified) == EXPECTED_UNIFIED
    # The prompt was filled from prompt_args, and the model name reached the server (keys
    # run concurrently: the requests come in any order).
    bodies = [r.body for r in server.requests]
    assert {b["model"] for b in bodies} == {"qwen3:8b"}
    user_texts = [m["content"] for b in bodies for m in b["messages"] if m["role"] == "user"]
    assert any('"id": p1' in t for t in user_texts) and not any("{input}" in t for t in user_texts)


@pytest.mark.flink
def test_quickstart_agents_and_unified_events_run_on_a_minicluster(tmp_path, monkeypatch):
    """One job, three agents, as in the local test; the agent options come from
    ``$FLINK_CONF_DIR/config.yaml``."""
    from pyflink.common import Configuration, Types
    from pyflink.datastream import StreamExecutionEnvironment

    from flink_agents.testing.minicluster import collect
    from tests.flink.harness import MODE

    _write_conf(tmp_path)
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(1)
    monkeypatch.setenv("FLINK_CONF_DIR", str(tmp_path))
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": MODE}
    )
    monkeypatch.delenv("FLINK_CONF_DIR")
    assert agents_env.get_config().get("compat.greeting") == "hello"
    with _ollama() as server:
        _setup(agents_env, server.url)
        lines = [r.model_dump_json() for r in ex.REVIEWS]

        def reviews() -> Any:
            # As the quickstarts read them: JSON lines parsed into ProductReview.
            return env.from_collection(lines, type_info=Types.STRING()).map(
                lambda x: ex.ProductReview.model_validate_json(x)
            )

        streams = []
        for name, agent in [
            ("workflow", ex.ReviewAnalysisAgent()),
            ("react", ex.review_analysis_react_agent()),
            ("unified", ex.UnifiedEventsAgent()),
        ]:
            out = (
                agents_env.from_datastream(input=reviews(), key_selector=lambda x: x.id)
                .apply(agent)
                .to_datastream()
            )
            streams.append(
                out.map(
                    lambda o, name=name: json.dumps(
                        [name, o.model_dump() if hasattr(o, "model_dump") else o]
                    ),
                    output_type=Types.STRING(),
                )
            )
        results = [json.loads(r) for r in collect(streams[0].union(*streams[1:]))]
        tool_results = _tool_results(server.requests)
    by_agent: dict[str, list[Any]] = {}
    for name, output in results:
        by_agent.setdefault(name, []).append(output)
    assert _dumped(by_agent["workflow"]) == EXPECTED_ANALYSES
    assert _dumped(by_agent["react"]) == EXPECTED_ANALYSES
    assert _dumped(by_agent["unified"]) == EXPECTED_UNIFIED
    assert len(tool_results) == 2  # the p2 review, once per model-driven agent
