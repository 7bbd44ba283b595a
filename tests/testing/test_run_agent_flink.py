"""run_agent on a MiniCluster: an injected failure with a restart in both execution modes,
and a cassette replayed by the TaskManager (it travels inside the job) with a secret that
shows up nowhere."""

from __future__ import annotations

import pytest

from flink_agents.api.resource import ResourceDescriptor
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
)
from flink_agents.integrations.embedding_models.openai_embedding_model import (
    OpenAIEmbeddingModelConnection,
)
from flink_agents.testing import (
    Cassette,
    assert_exactly_once,
    assert_memory,
    assert_no_repeated_calls,
    assert_per_key_order,
    assert_secret_absent,
    run_agent,
)
from flink_agents.testing.servers import OpenAIServer
from tests.testing import agents

pytestmark = pytest.mark.flink

N, FAIL_AFTER = 12, 5


@pytest.mark.parametrize("mode", ["thread", "process"])
def test_failure_after_n_inputs_loses_nothing_and_repeats_no_model_call(tmp_path, mode):
    calls = tmp_path / "calls.jsonl"
    records = agents.inputs(N, keys=4)
    run = run_agent(
        agents.weather_agent(latency=0.05, count_file=str(calls)),
        records,
        key="id",
        mode=mode,
        parallelism=2,
        fail_after=FAIL_AFTER,
    )
    assert run.failures == 1
    assert_exactly_once(run, agents.expected_outputs(records))
    assert_per_key_order(run)
    assert_no_repeated_calls(run)
    assert_no_repeated_calls(run, kind="tool")
    assert_memory(run, "k1", {"count": 3, "seen": [1, 5, 9]})
    # Every model call really made is in the count file (the workers append to it):
    # two per input, none twice.
    assert len(calls.read_text().splitlines()) == 2 * N
    metrics = run.metrics
    assert metrics["numOfModelCalls"] == 2 * N
    # Runs of the first inputs that were not committed at the checkpoint ran again,
    # answered from Flink state: that is all the restart repeated.
    assert metrics["numOfRuns"] == N + metrics["numOfCallsReplayed"] // 3
    assert {r["status"] for r in run.event_log.runs()} == {"ok"}


def test_a_failing_job_is_an_error_that_shows_the_agents_exception(flink_mode):
    from tests.testing.test_run_agent import Picky

    with pytest.raises(RuntimeError, match=r"the job failed: [\s\S]*ValueError: no 'bad' here"):
        run_agent(Picky(), ["fine", "bad"], mode=flink_mode)


KEY = "sk-flink-replay-secret-0123456789"
FAST = {"retry_initial_backoff": 0.01, "retry_max_backoff": 0.05, "timeout": 5.0}
QUESTIONS = [{"q": "weather in Oslo?"}, {"q": "hello"}, {"q": "weather in Oslo?"}]


def _agent(url: str):
    return agents.provider_agent(
        ResourceDescriptor(clazz=OpenAIChatModelConnection, api_base_url=url, api_key=KEY, **FAST),
        ResourceDescriptor(
            clazz=OpenAIEmbeddingModelConnection, api_base_url=url, api_key=KEY, **FAST
        ),
    )


def _respond(request):
    from flink_agents.testing import tool_call

    last = request.body["messages"][-1]
    if last["role"] == "tool":
        return f"answer: {last['content']}"
    if "Oslo" in last["content"]:
        return tool_call("counted_lookup", call_id="call-1", city="Oslo")
    return f"echo: {last['content']}"


def test_cassette_recorded_locally_replays_on_the_minicluster_without_the_server(
    tmp_path, flink_mode
):
    path = tmp_path / "provider.yaml"
    with OpenAIServer(respond=_respond, api_key=KEY) as server:
        recorded = run_agent(
            _agent(server.base_url), QUESTIONS, cassette=Cassette(path, mode="record")
        )
    assert KEY not in path.read_text()

    # No server: every call is answered by the wrappers on the TaskManager, from the
    # recordings that came with the job.
    replayed = run_agent(
        _agent("http://127.0.0.1:9/v1"), QUESTIONS, cassette=Cassette(path), mode=flink_mode
    )
    assert replayed.outputs == recorded.outputs
    assert replayed.memory == recorded.memory
    assert replayed.metrics["numOfModelCalls"] == recorded.metrics["numOfModelCalls"] == 5
    assert replayed.metrics["numOfToolCalls"] == 2
    assert KEY not in replayed.plan_json and "__flink_agents_secret__" in replayed.plan_json
    # The TaskManager's log lines came back (the kit routes the workers' logs to the run).
    assert any("asking about hello" in line for line in replayed.logs), replayed.logs
    assert_secret_absent(KEY, replayed, recorded, path)
