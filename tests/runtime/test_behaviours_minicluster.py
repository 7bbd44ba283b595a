"""Interceptors, hooks and text ReAct in one MiniCluster job (several assertions per job).

Here rather than in tests/flink: nothing in it depends on the operator or the execution
mode, so it runs once (the thread-mode suite), not again in process mode.
"""

from __future__ import annotations

import json

import pytest

from flink_agents.testing.minicluster import collect, local_outputs, make_env, source
from tests.runtime import behaviour_agents as ba

pytestmark = pytest.mark.flink

RECORDS = [
    {"key": "a", "q": "mail ann@example.com"},
    {"key": "b", "q": "mail ann@example.com"},
    {"key": "c", "q": "delete_all rows"},
    {"key": "d", "q": "add 2 and 3"},
    {"key": "a", "q": "mail bob@example.com"},
    *[{"key": "e", "q": f"note {i}"} for i in range(4)],
]


def question(record):
    return record["q"]


def test_interceptors_hooks_and_text_react_on_a_minicluster(tmp_path) -> None:
    ba.reset()
    count_file = tmp_path / "calls.jsonl"
    env, agents_env = make_env()
    out = collect(
        agents_env.from_datastream(source(env, RECORDS), lambda r: r["key"])
        .apply(ba.every_behaviour_agent(count_file=str(count_file)))
        .to_datastream()
    )
    by_key: dict = {}
    for o in out:
        by_key.setdefault(o["key"], []).append(o)
    # The redacting interceptor changed what the model saw (the script echoes it); the
    # chat history (keyed state) gave a's second question the first one, not b's.
    assert [o["out"] for o in by_key["a"]] == ["echo:mail <email> #0", "echo:mail <email> #1"]
    assert [o["out"] for o in by_key["b"]] == ["echo:mail <email> #0"]
    # History of at most 4 messages: the fourth input sees two earlier turns, not three.
    assert [o["out"] for o in by_key["e"]] == [f"echo:note {i} #{min(i, 2)}" for i in range(4)]
    # The tool interceptor refused delete_all; the model saw the refusal.
    assert by_key["c"][0]["out"] == "refused: delete_all is not allowed"
    # Text ReAct: a malformed reply went back as an observation, then add(2, 3+1) ran.
    assert by_key["d"][0]["out"] == "6"
    # Hooks in order, per run; the trail is the key's short-term memory (Flink keyed state).
    assert by_key["d"][0]["trail"] == [
        "before_agent",
        *["before_model1", "after_model1"] * 3,  # each ReAct step is one chat request
        "after_agent",
    ]
    assert (
        by_key["a"][1]["trail"]
        == ["before_agent", "before_model1", "after_model1", "after_agent"] * 2
    )
    # The cache (behind the redaction) answered b's question (the same as a's first, with
    # no history either) without the model: a(1) + b(0) + c(2) + d(3) + a(1) + e(4) calls.
    calls = [json.loads(line) for line in count_file.read_text().splitlines()]
    assert len(calls) == 11
    assert sorted(map(json.dumps, out)) == sorted(
        map(json.dumps, local_outputs(ba.every_behaviour_agent(), RECORDS, "key"))
    )
