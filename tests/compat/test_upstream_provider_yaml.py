"""Apache Flink Agents YAML files that use its ``vllm``, ``tongyi`` and ``azure_openai``
aliases load and run here, with upstream's argument names
(``tests/compat/yaml/yaml_provider_agents.yaml``: its YAML end-to-end agent on each).

Each provider is served by a stand-in speaking its wire format, reached the way an
unchanged file reaches the real service: vLLM at its default address
(``localhost:8000``), DashScope and Azure through the environment variables their SDKs read
(``DASHSCOPE_HTTP_BASE_URL`` / ``DASHSCOPE_API_KEY``, ``AZURE_OPENAI_ENDPOINT`` /
``AZURE_OPENAI_API_KEY``). The model calls the ``add`` tool for the sum, answers a joke
otherwise.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.yaml.loader import build_agents
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.testing import servers as fs
from flink_agents.testing.ports import held_port
from flink_agents.testing.servers import Reply, Request, ScriptedServer
from flink_agents.testing.servers import cloud_formats as cs
from tests.compat.yaml_test_actions import YamlChatInput

FILE = Path(__file__).parent / "yaml" / "yaml_provider_agents.yaml"
QUESTIONS = [
    YamlChatInput(id=1, text="calculate the sum of 1 and 2."),
    YamlChatInput(id=2, text="Tell me a joke about cats."),
]
JOKE = "Why did the cat sit on the computer? To keep an eye on the mouse."
DASHSCOPE_KEY = "sk-dashscope-from-env-0123"
AZURE_KEY = "azure-key-from-env-0123"


def _openai_model(request: Request) -> Reply:
    messages = request.body["messages"]
    results = [m for m in messages if m["role"] == "tool"]
    if results:
        return Reply(fs.openai_reply(f"The sum is {results[-1]['content']}."))
    if request.body.get("tools"):
        return Reply(fs.openai_reply(None, [("call_1", "add", {"a": 1, "b": 2})]))
    return Reply(fs.openai_reply(JOKE))


def _dashscope_model(request: Request) -> Reply:
    messages = request.body["input"]["messages"]
    results = [m for m in messages if m["role"] == "tool"]
    if results:
        return Reply(cs.dashscope_reply(f"The sum is {results[-1]['content']}.", reasoning="+"))
    if request.body.get("parameters", {}).get("tools"):
        return Reply(cs.dashscope_reply("", [("call_9", "add", {"a": 1, "b": 2})]))
    return Reply(cs.dashscope_reply(JOKE))


def _run(agent: str) -> dict[int, str]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(FILE)
    out = env.from_list([{"key": q.id, "value": q} for q in QUESTIONS]).apply(agent).to_list()
    env.execute()
    answers = [next(iter(o.values())) for o in out]
    return {a.id: a.answer for a in answers}


def test_the_file_loads_with_upstreams_classes_and_arguments():
    built = build_agents(FILE)
    classes: dict[str, set[str]] = {}
    for name in ("vllm_agent", "tongyi_agent", "azure_agent"):
        plan = json.loads(AgentPlan.from_agent(built.agents[name][0]).model_dump_json())
        for providers in plan["resource_providers"].values():
            for provider in providers.values():
                classes.setdefault(name, set()).add(provider.get("clazz", "").rsplit(".", 1)[-1])
    assert {"VLLMChatModelConnection", "VLLMChatModelSetup"} <= classes["vllm_agent"]
    assert {"TongyiChatModelConnection", "TongyiChatModelSetup"} <= classes["tongyi_agent"]
    assert {"AzureOpenAIChatModelConnection", "AzureOpenAIChatModelSetup"} <= classes["azure_agent"]


def test_vllm_agent_runs_against_the_default_vllm_address():
    with held_port(8000), ScriptedServer(respond=_openai_model, port=8000) as server:
        answers = _run("vllm_agent")
    assert answers == {1: "The sum is 3.", 2: JOKE}
    bodies = [q.body for q in server.requests]
    assert {q.path for q in server.requests} == {"/v1/chat/completions"}
    assert all(q.headers["authorization"] == "Bearer EMPTY" for q in server.requests)
    assert {b["model"] for b in bodies} == {"Qwen/Qwen3-8B"}
    assert any(b.get("top_k") == 20 for b in bodies)  # additional_kwargs reach the body
    assert any(b.get("max_tokens") == 512 and b.get("temperature") == 0.1 for b in bodies)


@pytest.mark.skipif(importlib.util.find_spec("dashscope") is None, reason="needs dashscope")
def test_tongyi_agent_runs_with_dashscope_settings_from_the_environment(monkeypatch):
    with ScriptedServer(respond=_dashscope_model) as server:
        monkeypatch.setenv("DASHSCOPE_HTTP_BASE_URL", server.url + "/api/v1")
        monkeypatch.setenv("DASHSCOPE_API_KEY", DASHSCOPE_KEY)
        answers = _run("tongyi_agent")
    assert answers == {1: "The sum is 3.", 2: JOKE}
    assert all(q.headers["authorization"] == f"Bearer {DASHSCOPE_KEY}" for q in server.requests)
    params = [q.body["parameters"] for q in server.requests]
    assert any(p.get("temperature") == 0.2 for p in params)
    assert any(p.get("top_p") == 0.8 for p in params)


def test_azure_agent_runs_with_the_endpoint_and_key_from_the_environment(monkeypatch):
    with ScriptedServer(respond=_openai_model) as server:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.url)
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
        answers = _run("azure_agent")
    assert answers == {1: "The sum is 3.", 2: JOKE}
    assert {q.path for q in server.requests} == {
        "/openai/deployments/my-gpt-4o-deployment/chat/completions?api-version=2024-10-21"
    }
    assert all(q.headers["api-key"] == AZURE_KEY for q in server.requests)
    assert any(q.body.get("seed") == 7 for q in server.requests)


def test_store_and_provider_aliases_and_java_vector_stores_load(tmp_path):
    """Our aliases for the stores and for Bedrock / Gemini, and ``type: java`` vector
    stores (upstream's Java wrapper class) resolve to their classes."""
    from flink_agents.api.resource import ResourceType

    path = tmp_path / "stores.yaml"
    path.write_text(
        """
agents:
  - name: a
    actions:
      - {name: act, function: "tests.compat.yaml_test_actions:process_input", listen_to: [input]}
    chat_model_connections:
      - {name: bedrock_conn, clazz: bedrock, region: us-east-1}
      - {name: gemini_conn, clazz: gemini, vertex_ai: true, project: p, location: l}
    embedding_model_connections:
      - {name: titan, clazz: bedrock, region: us-east-1}
    embedding_model_setups:
      - {name: embedder, clazz: bedrock, connection: titan, model: amazon.titan-embed-text-v2:0}
    vector_stores:
      - {name: q, clazz: qdrant, path: /tmp/q, embedding_model: embedder}
      - {name: m, clazz: milvus, uri: /tmp/m.db, embedding_model: embedder}
      - {name: pg, clazz: pgvector, host: db, embedding_model: embedder}
      - {name: es, clazz: elasticsearch, hosts: ["http://es:9200"], embedding_model: embedder}
      - {name: os, clazz: opensearch, hosts: ["http://os:9200"], embedding_model: embedder}
      - {name: r, clazz: redis, url: "redis://cache:6379/0", embedding_model: embedder}
      - name: m0
        clazz: mem0
        provider: qdrant
        provider_config: {path: /tmp/m0}
        embedding_model: embedder
      - name: java_store
        type: java
        clazz: org.flinkagents.examples.InMemoryJavaVectorStore
        embedding_model: embedder
"""
    )
    agent, _ = build_agents(path).agents["a"]
    stores = agent.resources[ResourceType.VECTOR_STORE]
    names = {n: d.class_path.rsplit(".", 1)[-1] for n, d in stores.items()}
    assert names == {
        "q": "QdrantVectorStore",
        "m": "MilvusVectorStore",
        "pg": "PGVectorStore",
        "es": "ElasticsearchVectorStore",
        "os": "OpenSearchVectorStore",
        "r": "RedisVectorStore",
        "m0": "Mem0VectorStore",
        "java_store": "JavaVectorStore",
    }
    assert stores["java_store"].arguments["java_clazz"].endswith("InMemoryJavaVectorStore")
    connections = agent.resources[ResourceType.CHAT_MODEL_CONNECTION]
    assert connections["bedrock_conn"].class_path.endswith("BedrockChatModelConnection")
    assert connections["gemini_conn"].class_path.endswith("GeminiChatModelConnection")
