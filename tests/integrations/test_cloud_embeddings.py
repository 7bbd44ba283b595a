"""Embedding connections of Azure OpenAI, Amazon Bedrock (Titan, Cohere), Gemini (Gemini API,
Vertex AI) and DashScope through their real SDKs against local servers speaking each wire
format: vectors in order, options, credentials, token counts in the agent's metrics, error
and throttling answers."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.decorators import action
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.errors import ModelCallError
from flink_agents.integrations.embedding_models.azure_openai_embedding_model import (
    AzureOpenAIEmbeddingModelConnection,
    AzureOpenAIEmbeddingModelSetup,
)
from flink_agents.integrations.embedding_models.bedrock_embedding_model import (
    BedrockEmbeddingModelConnection,
    BedrockEmbeddingModelSetup,
)
from flink_agents.integrations.embedding_models.gemini_embedding_model import (
    GeminiEmbeddingModelConnection,
    GeminiEmbeddingModelSetup,
)
from flink_agents.integrations.embedding_models.hashing_embedding_model import hashing_embedding
from flink_agents.integrations.embedding_models.openai_embedding_model import (
    OpenAIEmbeddingModelConnection,
    OpenAIEmbeddingModelSetup,
)
from flink_agents.integrations.embedding_models.tongyi_embedding_model import (
    TongyiEmbeddingModelConnection,
    TongyiEmbeddingModelSetup,
)
from flink_agents.testing.servers import Reply, Request, ScriptedServer
from flink_agents.testing.servers import cloud_formats as cs
from tests.integrations.agents import FAST

DIMS = 16


def _tokens(texts: list[str]) -> int:
    return sum(len(t.split()) for t in texts)


def _openai_like(request: Request) -> Reply:
    texts = request.body["input"]
    data = [
        {"object": "embedding", "index": i, "embedding": hashing_embedding(t, DIMS)}
        for i, t in enumerate(texts)
    ]
    n = _tokens(texts)
    return Reply(
        {
            "object": "list",
            "data": data[::-1],
            "model": request.body["model"],
            "usage": {"prompt_tokens": n, "total_tokens": n},
        }
    )


def _bedrock(request: Request) -> Reply:
    cs.verify_sigv4(request, "bedrock-emb-secret-0123")
    body = json.loads(request.raw)
    if "inputText" in body:
        text = body["inputText"]
        return Reply(
            {
                "embedding": hashing_embedding(text, body.get("dimensions", DIMS)),
                "inputTextTokenCount": _tokens([text]),
            }
        )
    vectors = [hashing_embedding(t, DIMS) for t in body["texts"]]
    return Reply(
        {"id": "e1", "embeddings": {"float": vectors}, "response_type": "embeddings_by_type"},
        headers={"X-Amzn-Bedrock-Input-Token-Count": str(_tokens(body["texts"]))},
    )


def _gemini(request: Request) -> Reply:
    texts = [r["content"]["parts"][0]["text"] for r in request.body["requests"]]
    return Reply(
        {
            "embeddings": [{"values": hashing_embedding(t, DIMS)} for t in texts],
            "usageMetadata": {"promptTokenCount": _tokens(texts)},
        }
    )


def _vertex(request: Request) -> Reply:
    texts = [i["content"] for i in request.body["instances"]]
    return Reply(
        {
            "predictions": [
                {
                    "embeddings": {
                        "values": hashing_embedding(t, DIMS),
                        "statistics": {"token_count": _tokens([t]), "truncated": False},
                    }
                }
                for t in texts
            ]
        }
    )


def _dashscope(request: Request) -> Reply:
    texts = request.body["input"]["texts"]
    return Reply(
        {
            "request_id": "r1",
            "output": {
                "embeddings": [
                    {"text_index": i, "embedding": hashing_embedding(t, DIMS)}
                    for i, t in reversed(list(enumerate(texts)))
                ]
            },
            "usage": {"total_tokens": _tokens(texts)},
        }
    )


@dataclass
class Case:
    connection: type
    setup: type
    base: Callable[[str], dict[str, Any]]
    setup_args: dict[str, Any]
    respond: Callable[[Request], Reply]
    path: str
    throttle: Callable[[], Reply]
    error: Callable[[str], Reply]
    requires: str | None = None


CASES = {
    "openai": Case(
        OpenAIEmbeddingModelConnection,
        OpenAIEmbeddingModelSetup,
        lambda url: {"api_base_url": url + "/v1", "api_key": "sk-emb-0123456789"},
        {"model": "text-embedding-3-small"},
        _openai_like,
        "/v1/embeddings",
        cs.openai_throttle,
        lambda msg: Reply(cs.openai_error(msg), status=400),
    ),
    "azure_openai": Case(
        AzureOpenAIEmbeddingModelConnection,
        AzureOpenAIEmbeddingModelSetup,
        lambda url: {
            "azure_endpoint": url,
            "api_version": "2024-10-21",
            "api_key": "azure-emb-0123456789",
        },
        {"model": "emb-dep"},
        _openai_like,
        "/openai/deployments/emb-dep/embeddings?api-version=2024-10-21",
        cs.openai_throttle,
        lambda msg: Reply(cs.openai_error(msg), status=400),
    ),
    "bedrock-titan": Case(
        BedrockEmbeddingModelConnection,
        BedrockEmbeddingModelSetup,
        lambda url: {
            "endpoint_url": url,
            "region": "us-west-2",
            "aws_access_key_id": "AKIDEMB",
            "aws_secret_access_key": "bedrock-emb-secret-0123",
        },
        {"model": "amazon.titan-embed-text-v2:0", "dimensions": DIMS},
        _bedrock,
        "/model/amazon.titan-embed-text-v2%3A0/invoke",
        cs.bedrock_throttle,
        lambda msg: cs.bedrock_error_reply(msg, 400),
        requires="boto3",
    ),
    "bedrock-cohere": Case(
        BedrockEmbeddingModelConnection,
        BedrockEmbeddingModelSetup,
        lambda url: {
            "endpoint_url": url,
            "region": "us-west-2",
            "aws_access_key_id": "AKIDEMB",
            "aws_secret_access_key": "bedrock-emb-secret-0123",
        },
        {"model": "cohere.embed-english-v3", "input_type": "search_query"},
        _bedrock,
        "/model/cohere.embed-english-v3/invoke",
        cs.bedrock_throttle,
        lambda msg: cs.bedrock_error_reply(msg, 400),
        requires="boto3",
    ),
    "gemini": Case(
        GeminiEmbeddingModelConnection,
        GeminiEmbeddingModelSetup,
        lambda url: {"base_url": url, "api_version": "v1beta", "api_key": "AIza-emb-0123456789"},
        {"model": "gemini-embedding-001", "task_type": "RETRIEVAL_DOCUMENT"},
        _gemini,
        "/v1beta/models/gemini-embedding-001:batchEmbedContents",
        cs.gemini_throttle,
        lambda msg: Reply(cs.gemini_error(msg, 400), status=400),
        requires="google.genai",
    ),
    "gemini-vertex": Case(
        GeminiEmbeddingModelConnection,
        GeminiEmbeddingModelSetup,
        lambda url: {
            "base_url": url,
            "vertex_ai": True,
            "project": "proj-1",
            "location": "us-central1",
            "access_token": "ya29.emb-token-0123",
        },
        {"model": "text-embedding-005"},
        _vertex,
        "/v1beta1/projects/proj-1/locations/us-central1/publishers/google/models/"
        "text-embedding-005:predict",
        cs.gemini_throttle,
        lambda msg: Reply(cs.gemini_error(msg, 400), status=400),
        requires="google.genai",
    ),
    "tongyi": Case(
        TongyiEmbeddingModelConnection,
        TongyiEmbeddingModelSetup,
        lambda url: {"base_url": url + "/api/v1", "api_key": "sk-dash-emb-0123456789"},
        {"model": "text-embedding-v3", "dimension": DIMS, "text_type": "document"},
        _dashscope,
        "/api/v1/services/embeddings/text-embedding/text-embedding",
        cs.dashscope_throttle,
        lambda msg: Reply(cs.dashscope_error(msg, "InvalidParameter"), status=400),
        requires="dashscope",
    ),
}


def _installed(module: str | None) -> bool:
    if module is None:
        return True
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


pytestmark = pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            n,
            marks=[]
            if _installed(c.requires)
            else [pytest.mark.skip(reason=f"{c.requires} is not installed")],
        )
        for n, c in CASES.items()
    ],
)

TEXTS = ["Flink keeps keyed state", "checkpoints are consistent", "bananas are yellow"]


class EmbedAgent(Agent):
    """Embeds its input with the ``embedder`` setup; outputs the vector's size."""

    @action(InputEvent)
    @staticmethod
    def embed(event: InputEvent, ctx: RunnerContext) -> None:
        model = ctx.get_resource("embedder", ResourceType.EMBEDDING_MODEL)
        vectors = model.embed(event.input.split("|"))
        ctx.send_event(OutputEvent(output=[len(v) for v in vectors]))


def test_vectors_in_order_and_tokens_in_the_metrics(name: str):
    case = CASES[name]
    agent = EmbedAgent()
    with ScriptedServer(respond=case.respond) as server:
        agent.add_resource(
            "emb_conn", ResourceDescriptor(clazz=case.connection, **case.base(server.url), **FAST)
        )
        agent.add_resource(
            "embedder",
            ResourceDescriptor(clazz=case.setup, connection="emb_conn", **case.setup_args),
        )
        env = AgentsExecutionEnvironment.get_execution_environment()
        builder = env.from_list(
            [{"key": "a", "value": "|".join(TEXTS)}, {"key": "b", "value": "one more text"}]
        ).apply(agent)
        out = builder.to_list()
        env.execute()
        conn = case.connection(**case.base(server.url), **FAST)
        setup = case.setup(connection="c", **case.setup_args, get_resource=lambda n, t: conn)
        vectors = setup.embed(TEXTS)
        usage = conn.embed_with_usage(TEXTS, **setup.model_kwargs).token_usage
    assert vectors == [hashing_embedding(t, DIMS) for t in TEXTS]
    assert sorted(json.dumps(o, sort_keys=True) for o in out) == sorted(
        [json.dumps({"a": [DIMS] * 3}), json.dumps({"b": [DIMS]})]
    )
    assert all(q.path == case.path for q in server.requests)
    assert usage is not None and usage.prompt_tokens == _tokens(TEXTS)
    group = builder.get_metric_group().to_dict()["embedding_model"]["embedder"]
    assert group["numOfEmbeddingCalls"] == 2
    assert group["embeddingPromptTokens"] == _tokens(TEXTS) + _tokens(["one more text"])
    assert group["embeddingTotalTokens"] >= group["embeddingPromptTokens"]


def test_throttling_is_retried_then_recognised(name: str):
    case = CASES[name]
    replies = iter([case.throttle()])

    def respond(request: Request) -> Reply:
        return next(replies, None) or case.respond(request)

    with ScriptedServer(respond=respond) as server:
        conn = case.connection(**case.base(server.url), **FAST)
        assert conn.embed(["alpha"], **_options(case)) == [hashing_embedding("alpha", DIMS)]
    assert len(server.requests) == 2

    with ScriptedServer([case.throttle()]) as server:
        # Throttled retries are counted apart from max_retries (max_throttled_retries).
        conn = case.connection(
            **case.base(server.url), **{**FAST, "max_retries": 0, "max_throttled_retries": 1}
        )
        with pytest.raises(ModelCallError) as info:
            conn.embed(["alpha"], **_options(case))
    assert info.value.throttled and info.value.status == 429 and len(server.requests) == 2


def test_error_answer_is_a_clear_model_call_error(name: str):
    case = CASES[name]
    with ScriptedServer([case.error("the input is too long for this model")]) as server:
        # A long attempt timeout: a cold SDK client (boto3 loads its service models) on a
        # loaded machine took more than FAST's 10 s, and a timed-out attempt is retried.
        conn = case.connection(
            **case.base(server.url), **{**FAST, "max_retries": 3, "timeout": 60.0}
        )
        with pytest.raises(ModelCallError) as info:
            conn.embed(["alpha"], **_options(case))
    err = info.value
    assert err.status == 400 and not err.throttled
    assert "the input is too long" in str(err) and len(server.requests) == 1
    secret = next(v for k, v in case.base("").items() if "key" in k or "token" in k)
    assert secret not in str(err)


def _options(case: Case) -> dict[str, Any]:
    setup = case.setup(connection="c", **case.setup_args)
    return setup.model_kwargs
