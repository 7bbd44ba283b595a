"""Cassettes in the local environment: record, replay offline, mismatches with a diff,
passthrough and new episodes, secrets masked, errors and embeddings and tools replayed.
(Replay on a MiniCluster: test_run_agent_flink.py.)"""

from __future__ import annotations

import json
import tempfile

import pytest
import yaml

from flink_agents.api.resource import ResourceDescriptor
from flink_agents.errors import CassetteError, CassetteMismatchError
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
)
from flink_agents.integrations.embedding_models.openai_embedding_model import (
    OpenAIEmbeddingModelConnection,
)
from flink_agents.testing import Cassette, ScriptedChatModelConnection, run_agent, tool_call
from flink_agents.testing.cassette import CassetteChatModelConnection
from flink_agents.testing.servers import OpenAIServer
from tests.testing import agents

KEY = "sk-cassette-test-0123456789abcdef"
FAST = {"retry_initial_backoff": 0.01, "retry_max_backoff": 0.05, "timeout": 5.0}


def _weather_run(cassette: Cassette, records=None, **config):
    records = records or agents.inputs(4)
    return run_agent(
        agents.weather_agent(name="cassette-weather"),
        records,
        key="id",
        cassette=cassette,
        config=config,
    )


def test_record_then_replay_offline_with_identical_outputs(tmp_path):
    path = tmp_path / "weather.yaml"
    ScriptedChatModelConnection.reset_counts()
    recorded = _weather_run(Cassette(path, mode="record"))
    calls = ScriptedChatModelConnection.call_counts["cassette-weather"]
    assert calls == 8  # 4 inputs x (tool call + answer)

    text = path.read_text()
    assert text.startswith("# flink-agents cassette")
    data = yaml.safe_load(text)
    assert data["version"] == 1
    kinds = [i["kind"] for i in data["interactions"]]
    assert kinds.count("chat") == 8 and kinds.count("tool") == 4
    first = data["interactions"][0]
    assert first["resource"] == "conn"
    assert first["request"]["messages"][0]["content"] == json.dumps(agents.inputs(4)[0])
    assert first["request"]["tools"][0]["name"] == "lookup"

    replay = Cassette(path)
    assert replay.mode == "replay"
    replayed = _weather_run(replay)
    assert replayed.outputs == recorded.outputs == agents.expected_outputs(agents.inputs(4))
    # Offline: the scripted model was not called again.
    assert ScriptedChatModelConnection.call_counts["cassette-weather"] == calls
    assert len(replay.calls("chat", "conn")) == 8 and len(replay.calls("tool")) == 4


def test_a_request_that_differs_fails_with_a_diff(tmp_path):
    path = tmp_path / "weather.yaml"
    _weather_run(Cassette(path, mode="record"))
    changed = agents.inputs(4)
    changed[2]["city"] = "Quito"
    with pytest.raises(Exception) as info:
        _weather_run(Cassette(path), changed)
    message = str(info.value)
    assert "no recording matches this chat call of resource 'conn'" in message
    assert (
        '+      "content": "{\\"id\\": \\"k2\\", \\"i\\": 2, \\"city\\": \\"Quito\\"}"' in message
    )
    assert "mode='record'" in message


def test_a_mismatch_the_agent_swallows_still_fails_the_run(tmp_path):
    path = tmp_path / "weather.yaml"
    _weather_run(Cassette(path, mode="record"))
    changed = agents.inputs(4)
    changed[0]["city"] = "Quito"
    with pytest.raises(CassetteMismatchError, match=r"1 call\(s\) had no recording"):
        _weather_run(Cassette(path), changed, **{"error-handling-strategy": "ignore"})


def test_passthrough_calls_the_real_model_and_new_episodes_records_it(tmp_path):
    path = tmp_path / "weather.yaml"
    _weather_run(Cassette(path, mode="record"), agents.inputs(2))
    before = path.read_text()
    more = agents.inputs(3)  # one input more than recorded

    ScriptedChatModelConnection.reset_counts()
    passed = _weather_run(Cassette(path, mode="passthrough"), more)
    assert passed.outputs == agents.expected_outputs(more)
    assert ScriptedChatModelConnection.call_counts["cassette-weather"] == 2  # the new one only
    assert path.read_text() == before

    _weather_run(Cassette(path, mode="new_episodes"), more)
    grown = yaml.safe_load(path.read_text())["interactions"]
    assert len(grown) == 9  # 6 recorded + the new input's 2 chat calls and 1 tool call
    ScriptedChatModelConnection.reset_counts()
    assert _weather_run(Cassette(path), more).outputs == agents.expected_outputs(more)
    assert ScriptedChatModelConnection.call_counts.get("cassette-weather", 0) == 0


def test_provider_calls_errors_embeddings_and_tools_recorded_with_secrets_masked(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-from-the-environment-42")
    path = tmp_path / "provider.yaml"
    questions = [
        {"q": "weather in Oslo? Bearer abcdefghijklmnop1234"},
        {"q": "mention tok-from-the-environment-42"},
        {"q": "unknown model please"},
    ]

    def respond(request):
        content = request.body["messages"][-1]["content"]
        if request.body["messages"][-1]["role"] == "tool":
            return f"answer: {content}"
        if "unknown" in content:
            return OpenAIServer.error("model 'm' is not available", status=404)
        if "Oslo" in content:
            return tool_call("counted_lookup", call_id="call-1", city="Oslo")
        return f"echo: {content}"

    def agent(url: str):
        return agents.provider_agent(
            ResourceDescriptor(
                clazz=OpenAIChatModelConnection, api_base_url=url, api_key=KEY, **FAST
            ),
            ResourceDescriptor(
                clazz=OpenAIEmbeddingModelConnection, api_base_url=url, api_key=KEY, **FAST
            ),
        )

    agents.LOOKUPS.clear()
    with OpenAIServer(respond=respond, api_key=KEY) as server:
        recorded = run_agent(
            agent(server.base_url),
            questions,
            cassette=Cassette(path, mode="record"),
            config={"error-handling-strategy": "ignore"},
        )
    assert agents.LOOKUPS == ["Oslo"]
    assert recorded.outputs[2][0]["error"] == "ModelCallError"
    text = path.read_text()
    for secret in (KEY, "abcdefghijklmnop1234", "tok-from-the-environment-42"):
        assert secret not in text
    data = yaml.safe_load(text)
    assert {i["kind"] for i in data["interactions"]} == {"chat", "embed", "tool"}
    error = next(i["error"] for i in data["interactions"] if "error" in i)
    assert error["type"] == "flink_agents.errors.ModelCallError"
    assert error["attributes"]["status"] == 404
    embed = next(i for i in data["interactions"] if i["kind"] == "embed")
    assert embed["request"]["options"] == {"model": "emb-1", "dimensions": 8}
    assert len(embed["response"][0]) == 8

    # Replay: no server at all (the URL points nowhere), the same outputs and memory.
    agents.LOOKUPS.clear()
    replayed = run_agent(
        agent("http://127.0.0.1:9/v1"),
        questions,
        cassette=Cassette(path),
        config={"error-handling-strategy": "ignore"},
    )
    assert agents.LOOKUPS == []
    masked = [
        {"q": "weather in Oslo? Bearer ***"},
        {"q": "mention ***"},
        {"q": "unknown model please"},
    ]
    assert replayed.memory == recorded.memory
    assert replayed.outputs[0] == recorded.outputs[0]
    # The recorded error is raised again (the event id in its location is the run's own).
    (error_out,) = replayed.outputs[2]
    assert error_out["error"] == "ModelCallError"
    assert error_out["message"].split(" [key=")[0] == (
        "provider=openai, model=m, status=404: HTTP 404: model 'm' is not available"
    )
    # What was masked in the recording comes back masked.
    assert replayed.outputs[1] == [{"answer": f"echo: {masked[1]['q']}"}]


def test_missing_or_bad_cassettes_are_clear_errors(tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"  # where run_agent and the cassette make their directories
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.raises(CassetteError, match="does not exist: record it first"):
        _weather_run(Cassette(tmp_path / "none.yaml"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ninteractions:\n- kind: telepathy\n")
    with pytest.raises(CassetteError, match="is not a valid cassette: interactions.0"):
        _weather_run(Cassette(bad))
    with pytest.raises(CassetteError, match="mode must be one of"):
        Cassette(bad, mode="rewind")
    old = tmp_path / "old.yaml"
    old.write_text("version: 0\ninteractions: []\n")
    with pytest.raises(CassetteError, match="version 0"):
        _weather_run(Cassette(old))
    assert list(scratch.iterdir()) == []  # nothing left behind by the failed runs


def test_mode_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("FLINK_AGENTS_CASSETTE_MODE", "record")
    assert Cassette(tmp_path / "x.yaml").mode == "record"
    assert Cassette(tmp_path / "x.yaml", mode="replay").mode == "replay"
    monkeypatch.setenv("FLINK_AGENTS_CASSETTE_MODE", "sideways")
    with pytest.raises(CassetteError, match="FLINK_AGENTS_CASSETTE_MODE must be one of"):
        Cassette(tmp_path / "x.yaml")


def test_wrap_and_context_manager_without_run_agent(tmp_path):
    """The cassette of a job built by hand: wrap the agent and the environment."""
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    path = tmp_path / "by-hand.yaml"
    for mode in ("record", "replay"):
        with Cassette(path, mode=mode) as cassette:
            env = AgentsExecutionEnvironment.get_execution_environment()
            env.add_resource(
                "spare",
                ResourceDescriptor(clazz=ScriptedChatModelConnection, replies=["unused"]),
            )
            cassette.wrap_environment(env)
            spare = env.resources[next(iter(env.resources))]["spare"]
            assert spare.class_path.endswith("CassetteChatModelConnection")
            out = (
                env.from_list([{"key": "k0", "value": agents.inputs(1)[0]}])
                .apply(cassette.wrap(agents.weather_agent()))
                .to_list()
            )
            env.execute()
        assert out == [{"k0": agents.expected_outputs(agents.inputs(1))["k0"][0]}]
    assert len(Cassette(path).calls("chat")) == 2


def test_the_wrapper_keeps_the_wrapped_secret_out_of_its_repr():
    wrapper = CassetteChatModelConnection(
        resource="conn",
        wrapped={"clazz": "x.Y", "arguments": {"api_key": KEY}},
        tape={"mode": "replay", "recorded": []},
    )
    assert KEY not in repr(wrapper)
