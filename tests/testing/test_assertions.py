"""The assertions fail, with a message that says what is wrong, on runs that break what
they check (runs put together here), and pass on a real one (test_run_agent.py)."""

from __future__ import annotations

import pytest

from flink_agents.testing import (
    AgentRun,
    EventLog,
    RunCapture,
    assert_exactly_once,
    assert_memory,
    assert_no_repeated_calls,
    assert_per_key_order,
    assert_secret_absent,
    run_agent,
)
from tests.testing import agents

INPUTS = [{"id": "a", "n": 0}, {"id": "b", "n": 1}, {"id": "a", "n": 2}]


def _run(captures, records=(), logs=(), plan="{}") -> AgentRun:
    return AgentRun(
        mode="thread",
        inputs=list(INPUTS),
        keys=[i["id"] for i in INPUTS],
        captures=list(captures),
        event_log=EventLog(list(records)),
        logs=list(logs),
        plan_json=plan,
    )


GOOD = [
    RunCapture("a", 0, ["x0"], {"count": 1}),
    RunCapture("b", 1, ["x1"], {"count": 1}),
    RunCapture("a", 2, ["x2"], {"count": 2, "deep": {"er": True}}),
]


def test_per_key_order():
    assert_per_key_order(_run(GOOD))
    swapped = [GOOD[2], GOOD[1], GOOD[0]]
    with pytest.raises(AssertionError, match=r"out of input order .*'a': \[2, 0\]"):
        assert_per_key_order(_run(swapped))


def test_exactly_once():
    assert_exactly_once(_run(GOOD), {"a": ["x0", "x2"], "b": ["x1"]})
    with pytest.raises(AssertionError, match=r"1 input\(s\) lost .*positions \[1\]"):
        assert_exactly_once(_run([GOOD[0], GOOD[2]]))
    with pytest.raises(AssertionError, match=r"more than once .*\{2: 2\}"):
        assert_exactly_once(_run([*GOOD, GOOD[2]]))
    with pytest.raises(AssertionError, match=r"outputs differ for 1 key\(s\).*'b'"):
        assert_exactly_once(_run(GOOD), {"a": ["x0", "x2"], "b": ["other"]})


def _input(run_id, key, payload):
    return {
        "record": "event",
        "eventType": "_input_event",
        "runId": run_id,
        "key": key,
        "payload": {"input": payload},
    }


def _call(run_id, key, replayed=False, name="model", t=0.0):
    return {
        "record": "call",
        "kind": "model",
        "name": name,
        "runId": run_id,
        "key": key,
        "replayed": replayed,
        "timestamp": t,
    }


def test_no_repeated_calls():
    first = [_input("r1", "a", INPUTS[0]), _call("r1", "a")]
    # the restart ran input 0 again; its call was answered from state
    replayed = [_input("r9", "a", INPUTS[0]), _call("r9", "a", replayed=True)]
    assert_no_repeated_calls(_run(GOOD, first + replayed))
    # ... or really made again
    again = [_input("r9", "a", INPUTS[0]), _call("r9", "a")]
    with pytest.raises(AssertionError, match=r"key a, model 'model' \(call 1 of its run\) made 2"):
        assert_no_repeated_calls(_run(GOOD, first + again))
    # a second call of the same run is not a repetition
    two = [_input("r1", "a", INPUTS[0]), _call("r1", "a", t=1), _call("r1", "a", t=2)]
    assert_no_repeated_calls(_run(GOOD, two))


def test_equal_inputs_of_a_key_may_each_call_once():
    records = agents.inputs(2, keys=1)
    records[1] = dict(records[0])
    run = run_agent(agents.weather_agent(), records, key="id")
    assert_no_repeated_calls(run)
    assert run.metrics["numOfModelCalls"] == 4


def test_memory():
    run = _run(GOOD)
    assert_memory(run, "a", {"count": 2, "deep.er": True})
    assert_memory(run, "a", {"count": 2, "deep": {"er": True}}, exact=True)
    with pytest.raises(AssertionError, match=r"differs at \{'count': \{'actual': 2, 'expected': 3"):
        assert_memory(run, "a", {"count": 3})
    with pytest.raises(AssertionError, match="'actual': '<missing>'"):
        assert_memory(run, "a", {"nope.x": 1})
    with pytest.raises(AssertionError, match="differs:\nexpected"):
        assert_memory(run, "a", {"count": 2}, exact=True)
    with pytest.raises(AssertionError, match="no committed run of key 'zzz'"):
        assert_memory(run, "zzz", {})


def test_secret_absent_names_where_and_masks_it(tmp_path):
    secret = "sk-very-secret-value-123"
    assert_secret_absent(secret, _run(GOOD), "clean text", tmp_path)
    (tmp_path / "dump.txt").write_text(f"key={secret}")
    leaky = _run(
        [RunCapture("a", 0, [{"echo": secret}], {})],
        records=[{"record": "event", "payload": {"q": secret}}],
        logs=[f"connecting with {secret}"],
        plan=f'{{"api_key": "{secret}"}}',
    )
    with pytest.raises(AssertionError) as info:
        assert_secret_absent(secret, leaky, tmp_path)
    message = str(info.value)
    assert secret not in message
    for where in ("plan JSON", "output of key 'a'", "logs", "event log", "dump.txt"):
        assert where in message
    assert "sk-... (24 characters)" in message and "connecting with ***" in message
    with pytest.raises(ValueError, match="at least 4"):
        assert_secret_absent("ab", "text")
