"""Token metrics are booked to the action whose call used them (request-scoped, as upstream
main): embedding tokens reported by a real HTTP embeddings endpoint, from direct calls,
durable calls on the loop and on worker threads, with runs of several keys interleaved;
model calls through interceptors count as model calls."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.embedding_models.embedding_model import EmbeddingResult, EmbeddingTokenUsage
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.integrations.embedding_models.openai_embedding_model import (
    OpenAIEmbeddingModelConnection,
    OpenAIEmbeddingModelSetup,
)
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner
from flink_agents.testing.servers import Reply, ScriptedServer
from tests.runtime import behaviour_agents


def _embeddings(request: Any) -> Reply:
    """OpenAI's embeddings reply; one token per word of the inputs."""
    texts = request.body["input"]
    words = sum(len(t.split()) for t in texts)
    return Reply(
        {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": [0.5, 0.5]}
                for i in range(len(texts))
            ],
            "model": request.body["model"],
            "usage": {"prompt_tokens": words, "total_tokens": words},
        }
    )


def route(event: InputEvent, ctx: RunnerContext) -> None:
    ctx.send_event(Event(type=event.input["kind"], attributes={"text": event.input["text"]}))


async def embed_direct(event: Event, ctx: RunnerContext) -> None:
    """Calls the setup itself (no durable call), on the loop."""
    setup = ctx.get_resource("embedder", ResourceType.EMBEDDING_MODEL)
    vector = await setup.aembed(event.get_attr("text"))  # type: ignore[attr-defined]
    ctx.send_event(OutputEvent(output=len(vector)))


async def embed_durable_thread(event: Event, ctx: RunnerContext) -> None:
    """A durable call of the synchronous embed: runs on a worker thread."""
    setup = ctx.get_resource("embedder", ResourceType.EMBEDDING_MODEL)
    vectors = await ctx.durable_execute_async(setup.embed, [event.get_attr("text")])  # type: ignore[attr-defined]
    ctx.send_event(OutputEvent(output=len(vectors)))


def embedding_agent(base_url: str) -> Agent:
    agent = Agent()
    agent.add_action("route", InputEvent, route)
    agent.add_action("embed_direct", "direct", embed_direct)
    agent.add_action("embed_durable_thread", "thread", embed_durable_thread)
    agent.add_resource(
        "emb_conn",
        ResourceDescriptor(
            clazz=OpenAIEmbeddingModelConnection, api_base_url=base_url, api_key="test-key"
        ),
    )
    agent.add_resource(
        "embedder",
        ResourceDescriptor(clazz=OpenAIEmbeddingModelSetup, connection="emb_conn", model="emb-1"),
    )
    return agent


def test_embedding_tokens_are_booked_to_the_calling_action() -> None:
    inputs = [
        ("a", {"kind": "direct", "text": "one two three"}),
        ("b", {"kind": "thread", "text": "four five"}),
        ("c", {"kind": "direct", "text": "six"}),
        ("d", {"kind": "thread", "text": "seven eight nine ten"}),
    ] * 5
    with ScriptedServer(respond=_embeddings, latency=(0.01, 0.05)) as server:
        plan = AgentPlan.from_agent(embedding_agent(server.url + "/v1"), AgentConfiguration({}))
        runner = AgentRunner(plan)
        try:

            async def all_keys() -> None:  # every key at once: runs interleave on the loop
                await asyncio.gather(
                    *(runner.run(f"{key}{i}", value) for i, (key, value) in enumerate(inputs))
                )

            asyncio.run(all_keys())
            actions = runner.metrics.to_dict()["action"]
        finally:
            runner.close()
    assert len(server.requests) == len(inputs)
    direct = actions["embed_direct"]["model"]["embedder"]
    thread = actions["embed_durable_thread"]["model"]["embedder"]
    assert direct == {"promptTokens": (3 + 1) * 5, "totalTokens": (3 + 1) * 5}
    assert thread == {"promptTokens": (2 + 4) * 5, "totalTokens": (2 + 4) * 5}
    assert "model" not in actions["route"]


def test_no_usage_scope_without_metrics_or_embedding_models() -> None:
    agent = embedding_agent("http://127.0.0.1:9/v1")
    off = AgentRunner(AgentPlan.from_agent(agent, AgentConfiguration({"metrics.enabled": False})))
    plain = AgentRunner(AgentPlan.from_agent(behaviour_agents.chat_agent(), AgentConfiguration({})))
    try:
        assert off._usage_scoped is False and plain._usage_scoped is False
    finally:
        off.close()
        plain.close()


def test_embedding_result_api() -> None:
    from flink_agents.api.embedding_models.embedding_model import (
        BaseEmbeddingModelConnection,
        BaseEmbeddingModelSetup,
    )

    class Counting(BaseEmbeddingModelConnection):
        def embed(self, texts: Any, **kwargs: Any) -> list[list[float]]:
            return [[1.0] for _ in texts]

        def embed_with_usage(self, texts: Any, **kwargs: Any) -> EmbeddingResult:
            return EmbeddingResult(
                self.embed(texts), EmbeddingTokenUsage(len(texts), 2 * len(texts))
            )

    class Plain(BaseEmbeddingModelConnection):
        def embed(self, texts: Any, **kwargs: Any) -> list[list[float]]:
            return [[2.0] for _ in texts]

    class Setup(BaseEmbeddingModelSetup):
        pass

    counting, plain = Counting(), Plain()
    setup = Setup(connection="c", get_resource=lambda name, rtype: counting)
    one = setup.embed_with_usage("hi")
    assert one == EmbeddingResult([1.0], EmbeddingTokenUsage(1, 2))
    assert setup.embed(["a", "b"]) == [[1.0], [1.0]]
    assert setup.embed_with_usage(["a", "b"]).token_usage == EmbeddingTokenUsage(2, 4)
    assert asyncio.run(setup.aembed(["a"])) == [[1.0]]
    setup = Setup(connection="c", get_resource=lambda name, rtype: plain)
    assert setup.embed_with_usage("hi") == EmbeddingResult([2.0], None)
    assert asyncio.run(setup.aembed("hi")) == [2.0]


def reply_with_usage(messages: list[Any], tools: list[Any]) -> Any:
    from flink_agents.api.chat_message import ChatMessage, MessageRole

    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    return ChatMessage(role=MessageRole.ASSISTANT, content="ok", extra_args={"usage": usage})


@pytest.mark.parametrize("with_interceptor", [False, True])
def test_model_calls_through_interceptors_count_their_tokens(with_interceptor: bool) -> None:
    interceptors = [behaviour_agents.outer] if with_interceptor else []
    agent = behaviour_agents.chat_agent(model_interceptors=interceptors)
    for name, descriptor in behaviour_agents.scripted_model(respond=reply_with_usage).items():
        agent.add_resource(name, descriptor)
    runner = AgentRunner(AgentPlan.from_agent(agent, AgentConfiguration({})))
    try:
        runner.run_sync("k", "hello")
        metrics = runner.metrics.to_dict()
    finally:
        runner.close()
    assert metrics["numOfModelCalls"] == 1
    tokens = metrics["action"]["chat_model_action"]["model"]["model"]
    assert tokens["promptTokens"] == 5 and tokens["completionTokens"] == 3
