"""Apache Flink Agents' YAML agents run unchanged here: its YAML quickstart
(``yaml_review_analysis_agent.yaml``) and the two files of its YAML end-to-end tests (one
agent with a tool-using and a plain model; two chained agents sharing a file-level
connection and action), loaded with ``load_yaml`` and applied by name, locally and on a
MiniCluster.

The files leave the Ollama connection at its default address, as the quickstart does (it
expects ``ollama serve``): the tests serve Ollama's protocol on ``127.0.0.1:11434`` with a
real HTTP server that answers like a model would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.testing.ports import held_port
from flink_agents.testing.servers import Reply, Request, ScriptedServer, ollama_reply
from tests.compat import upstream_examples as ex
from tests.compat.yaml_test_actions import YamlChatInput, YamlChatOutput

FIXTURES = Path(__file__).parent / "yaml"
QUICKSTART = FIXTURES / "yaml_review_analysis_agent.yaml"
SINGLE = FIXTURES / "yaml_test_agent.yaml"
MULTI = FIXTURES / "yaml_multi_agent.yaml"

QUESTIONS = [
    YamlChatInput(id=1, text="calculate the sum of 1 and 2."),
    YamlChatInput(id=2, text="Tell me a joke about cats."),
]
JOKE = "Why did the cat sit on the computer? To keep an eye on the mouse."
EXPECTED_ANALYSES = [
    {"id": "p1", "score": 5, "reasons": []},
    {"id": "p2", "score": 1, "reasons": ["shipping damage"]},
]


def _model(body: dict[str, Any]) -> dict[str, Any]:
    """What a model answers: the quickstart's review analysis (``qwen3:8b``), or for the
    end-to-end files (``qwen3:1.7b``): a call of the ``add`` tool, then the sum; a joke; the
    number of a restated answer."""
    if body.get("model") == "qwen3:8b":
        return ex.ollama_review_model(body)
    messages = body.get("messages") or []
    tool_results = [m for m in messages if m.get("role") == "tool"]
    user = next(m["content"] for m in reversed(messages) if m.get("role") == "user")
    if tool_results:
        return ollama_reply(
            f"<think>add returned it</think>The sum is {tool_results[-1]['content']}."
        )
    if "another assistant" in user:
        return ollama_reply(re.findall(r"\d+", user)[-1])
    if "sum" in user and body.get("tools"):
        return ollama_reply("", [("add", {"a": 1, "b": 2})])
    return ollama_reply(JOKE)


@contextmanager
def _ollama() -> Iterator[ScriptedServer]:
    """A model server where Ollama listens by default."""
    with (
        held_port(11434),
        ScriptedServer(respond=lambda request: Reply(_model(request.body)), port=11434) as server,
    ):
        yield server


def _env(*files: Path, env: Any = None, **config: Any) -> Any:
    """The quickstart's setup: options, then the YAML files."""
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env, **config)
    agents_env.get_config().set(AgentExecutionOptions.NUM_ASYNC_THREADS, 2)
    agents_env.load_yaml(list(files))
    return agents_env


def _tool_calls(requests: list[Request]) -> list[str]:
    """Names of the tools whose results went back to the model (proof that they ran)."""
    return [
        call["function"]["name"]
        for r in requests
        for m in (r.body or {}).get("messages", [])
        if m.get("role") == "assistant"
        for call in m.get("tool_calls") or []
    ]


def _dump(outputs: list[Any]) -> list[Any]:
    dumped = [o.model_dump() if hasattr(o, "model_dump") else o for o in outputs]
    return sorted(dumped, key=lambda o: json.dumps(o, sort_keys=True))


def _local(agents_env: Any, agent: str, records: list[Any], key: Any) -> list[Any]:
    out = agents_env.from_list([{"key": key(r), "value": r} for r in records]).apply(agent)
    outputs = out.to_list()
    agents_env.execute()
    return [next(iter(o.values())) for o in outputs]


def _answers(outputs: list[Any]) -> dict[int, str]:
    return {o["id"]: o["answer"] for o in _dump(outputs)}


def test_yaml_quickstarts_run_locally():
    with _ollama() as server:
        review = _local(_env(QUICKSTART), "review_analysis_agent", ex.REVIEWS, lambda r: r.id)
        assert _tool_calls(server.requests).count("notify_shipping_manager") == 1
        single = _local(_env(SINGLE), "yaml_test_agent", QUESTIONS, lambda r: r.id)
        # Chained: math_agent's outputs are commentator_agent's inputs (as in upstream's
        # test, re-validated into the pydantic model between the two).
        math = _local(_env(MULTI), "math_agent", QUESTIONS[:1], lambda r: r.id)
        final = _local(
            _env(MULTI),
            "commentator_agent",
            [YamlChatOutput.model_validate(m) for m in math],
            lambda r: r.id,
        )
        bodies = [r.body for r in server.requests]
    assert all(isinstance(o, ex.ProductReviewAnalysisRes) for o in review)
    assert _dump(review) == EXPECTED_ANALYSES
    assert _answers(single) == {1: "The sum is 3.", 2: JOKE}
    assert _answers(math) == {1: "The sum is 3."} and _answers(final) == {1: "3"}
    # The YAML's models, prompt and tools reached the server: the quickstart's prompt was
    # filled from prompt_args, only the math models were offered the add tool.
    assert {b["model"] for b in bodies} == {"qwen3:8b", "qwen3:1.7b"}
    systems = [m["content"] for b in bodies for m in b["messages"] if m["role"] == "system"]
    assert any("satisfaction score (1-5)" in s for s in systems)
    offered = {
        b["messages"][0]["content"]: [t["function"]["name"] for t in b.get("tools") or []]
        for b in bodies
        if b["model"] == "qwen3:1.7b"
    }
    assert offered[QUESTIONS[0].text] == ["add"] and offered[QUESTIONS[1].text] == []


@pytest.mark.flink
def test_yaml_quickstarts_run_on_a_minicluster():
    """One job: the quickstart agent, the single-file agent and the two chained agents."""
    from pyflink.common import Configuration, Types
    from pyflink.datastream import StreamExecutionEnvironment

    from flink_agents.testing.minicluster import collect
    from tests.flink.harness import MODE

    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(1)
    agents_env = _env(QUICKSTART, SINGLE, MULTI, env=env, **{"python.execution-mode": MODE})

    def parsed(records: list[Any], model: type) -> Any:
        # As upstream's jobs read them: JSON lines parsed into the pydantic model.
        lines = [r.model_dump_json() for r in records]
        return env.from_collection(lines, type_info=Types.STRING()).map(
            lambda x: model.model_validate_json(x)
        )

    def agent(stream: Any, name: str) -> Any:
        return (
            agents_env.from_datastream(input=stream, key_selector=lambda x: x.id)
            .apply(name)
            .to_datastream()
        )

    def tagged(stream: Any, tag: str) -> Any:
        return stream.map(
            lambda o, tag=tag: json.dumps([tag, o.model_dump()]), output_type=Types.STRING()
        )

    math = agent(parsed(QUESTIONS[:1], YamlChatInput), "math_agent")
    final = agent(math.map(lambda x: YamlChatOutput.model_validate(x)), "commentator_agent")
    streams = [
        tagged(agent(parsed(ex.REVIEWS, ex.ProductReview), "review_analysis_agent"), "review"),
        tagged(agent(parsed(QUESTIONS, YamlChatInput), "yaml_test_agent"), "single"),
        tagged(final, "chained"),
    ]
    with _ollama() as server:
        results = [json.loads(r) for r in collect(streams[0].union(*streams[1:]))]
        tool_calls = _tool_calls(server.requests)
    by_tag: dict[str, list[Any]] = {}
    for tag, output in results:
        by_tag.setdefault(tag, []).append(output)
    assert _dump(by_tag["review"]) == EXPECTED_ANALYSES
    assert _answers(by_tag["single"]) == {1: "The sum is 3.", 2: JOKE}
    assert _answers(by_tag["chained"]) == {1: "3"}
    assert sorted(tool_calls) == ["add", "add", "notify_shipping_manager"]
