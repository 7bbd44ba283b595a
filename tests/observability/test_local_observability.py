"""Built-in and user metrics, and the event log, on the local environment."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.runtime.observability.trace import load_runs
from tests.observability import agents
from tests.observability.agents import SECRET, dump, tool_agent


def _run(names: list[str], **config: Any) -> tuple[list[Any], Any]:
    env = AgentsExecutionEnvironment.get_execution_environment(**config)
    builder = env.from_list([{"key": n, "value": {"name": n}} for n in names]).apply(tool_agent())
    out = builder.to_list()
    env.execute()
    return out, builder.get_metric_group()


WRITERS = pytest.mark.parametrize("writer", ["process", "thread"])


def _log(directory: Path) -> list[dict[str, Any]]:
    files = sorted(directory.glob("events-*.log"))
    assert len(files) == 1, files
    return dump(str(files[0]))


def test_builtin_and_user_metrics() -> None:
    out, group = _run(["alice", "bob", "carol"])
    assert len(out) == 3
    m = group.to_dict()
    n = 3
    assert m["numOfEventProcessed"] == agents.EVENTS_PER_INPUT * n
    assert m["numOfEventProcessedPerSec"] == agents.EVENTS_PER_INPUT * n
    assert m["numOfActionsExecuted"] == agents.ACTIONS_PER_INPUT * n
    assert group.get_meter("numOfActionsExecutedPerSec").get_rate() > 0
    actions = m["action"]
    assert {a: v["numOfActionsExecuted"] for a, v in actions.items()} == {
        "ask": n,
        "note_audit": n,
        "chat_model_action": 2 * n,
        "tool_call_action": n,
        "answer": n,
        "context_retrieval_action": 0,  # a built-in action of every plan
    }
    tokens = actions["chat_model_action"]["model"]["model"]
    assert tokens == {
        "promptTokens": agents.PROMPT_TOKENS_PER_INPUT * n,
        "completionTokens": agents.COMPLETION_TOKENS_PER_INPUT * n,
        "retryCount": 0,
    }
    assert actions["tool_call_action"]["tool"]["lookup"] == {"numOfToolCalls": n}
    assert m["numOfRuns"] == n and m["numOfRunsFailed"] == 0
    assert m["numOfModelCalls"] == 2 * n and m["numOfToolCalls"] == n
    assert len(m["runLatencyMs"]) == n and all(v > 0 for v in m["runLatencyMs"])
    assert len(m["modelCallLatencyMs"]) == 2 * n and len(m["toolCallLatencyMs"]) == n
    assert m["runsInFlight"] == 0
    # user metrics, agent scope and action scope (key-value group action=answer)
    assert m["auditEvents"] == n and m["answersPerSec"] == n
    assert actions["answer"]["answerLength"] == [len(o[k]) for o in out for k in o]


def test_metrics_off_leaves_user_metrics_only() -> None:
    _, group = _run(["alice"], **{"metrics.enabled": False})
    m = group.to_dict()
    assert "numOfEventProcessed" not in m and "numOfActionsExecuted" not in m
    assert m["auditEvents"] == 1


@WRITERS
def test_event_log_content_and_order_of_a_tool_calling_run(tmp_path: Path, writer: str) -> None:
    _run(
        ["alice"],
        **{"event-log.enabled": True, "baseLogDir": str(tmp_path), "event-log.writer": writer},
    )
    records = _log(tmp_path)
    assert {r["key"] for r in records} == {"alice"}
    assert len({r["runId"] for r in records}) == 1
    steps = [
        (
            r["record"],
            r.get("eventType") if r["record"] in ("event", "action") else r.get("name"),
            r.get("action"),
        )
        for r in records
    ]
    # An action execution that sent events is in its events (action, parentEventId,
    # actionStart, durationMs); one that sent none (note_audit) has a record of its own.
    assert steps == [
        ("event", "_input_event", None),
        ("event", "audit", "ask"),
        ("event", "_chat_request_event", "ask"),
        ("action", "audit", "note_audit"),
        ("call", "model", "chat_model_action"),
        ("event", "_tool_request_event", "chat_model_action"),
        # the tool loop's state, kept in sensory memory (a memory event, as upstream's)
        ("event", "_sensory_write_event", "chat_model_action"),
        ("call", "lookup", "tool_call_action"),
        ("event", "_tool_response_event", "tool_call_action"),
        ("call", "model", "chat_model_action"),
        ("event", "_chat_response_event", "chat_model_action"),
        ("event", "_output_event", "answer"),
        ("run", None, None),
    ]
    for r in records:
        if r["record"] == "event" and r["action"] is not None:
            assert r["actionStart"] <= r["timestamp"] and r["durationMs"] >= 0
    # and the trace finds every action execution again, in order, with what it handled
    (run,) = load_runs(tmp_path)
    assert [(a.name, a.event_type) for a in run.actions] == [
        ("ask", "_input_event"),
        ("note_audit", "audit"),
        ("chat_model_action", "_chat_request_event"),
        ("tool_call_action", "_tool_request_event"),
        ("chat_model_action", "_tool_response_event"),
        ("answer", "_chat_response_event"),
    ]
    assert [[c.name for c in a.calls] for a in run.actions] == [
        [],
        [],
        ["model"],
        ["lookup"],
        ["model"],
        [],
    ]
    assert run.actions[0].sent == ["audit", "_chat_request_event"]
    events = [r for r in records if r["record"] == "event"]
    by_type = {r["eventType"]: r for r in events}
    # parent links: each event names the event whose action sent it
    assert by_type["_input_event"]["parentEventId"] is None
    chain = ["_input_event", "_chat_request_event", "_tool_request_event"]
    chain += ["_tool_response_event", "_chat_response_event", "_output_event"]
    for parent, child in zip(chain, chain[1:]):
        assert by_type[child]["parentEventId"] == by_type[parent]["eventId"]
    assert by_type["_input_event"]["payload"]["input"] == {"name": "alice"}
    assert by_type["_output_event"]["payload"]["output"].startswith("answer: alice")
    # token usage and duration of the model call that produced a response
    assert by_type["_chat_response_event"]["usage"] == {
        "prompt_tokens": 20,
        "completion_tokens": 5,
        "total_tokens": 25,
    }
    assert by_type["_tool_request_event"]["usage"]["prompt_tokens"] == 10
    assert by_type["_chat_response_event"]["durationMs"] > 0
    calls = [r for r in records if r["record"] == "call"]
    assert [c["kind"] for c in calls] == ["model", "tool", "model"]
    assert all(c["durationMs"] > 0 and not c["replayed"] for c in calls)
    assert records[-1]["status"] == "ok" and records[-1]["durationMs"] > 0
    times = [r["timestamp"] for r in records if r["record"] == "event"]
    assert times == sorted(times)


def test_event_log_truncates_at_standard_and_levels_per_type(tmp_path: Path) -> None:
    standard = tmp_path / "standard"
    _run(["alice"], **{"event-log.enabled": True, "baseLogDir": str(standard)})
    response = next(r for r in _log(standard) if r.get("eventType") == "_tool_response_event")
    text = next(iter(response["payload"]["responses"].values()))
    assert response["truncated"] is True and response["logLevel"] == "STANDARD"
    assert len(text) < 2100 and text.endswith("more chars]")

    verbose = tmp_path / "verbose"
    _run(
        ["alice"],
        **{
            "event-log.enabled": True,
            "baseLogDir": str(verbose),
            "event-log.type._tool_response_event.level": "VERBOSE",
            "event-log.type.audit.level": "OFF",
            "event-log.standard.max-string-length": 10,
        },
    )
    records = _log(verbose)
    response = next(r for r in records if r.get("eventType") == "_tool_response_event")
    assert response["logLevel"] == "VERBOSE" and "truncated" not in response
    assert len(next(iter(response["payload"]["responses"].values()))) > 3000
    assert not [r for r in records if r["record"] == "event" and r["eventType"] == "audit"]
    response = next(r for r in records if r.get("eventType") == "_chat_response_event")
    assert response["truncated"] is True  # 10 characters at most per string
    assert response["payload"]["response"]["content"] == "answer: al...[18 more chars]"


def test_event_log_redacts_secrets(tmp_path: Path) -> None:
    _run(["alice"], **{"event-log.enabled": True, "baseLogDir": str(tmp_path)})
    text = next(tmp_path.glob("events-*.log")).read_text()
    assert SECRET not in text
    audit = next(r for r in _log(tmp_path) if r.get("eventType") == "audit")
    assert audit["payload"] == {"api_key": "***", "note": "called with ***"}


@WRITERS
def test_event_log_on_a_failing_disk_does_not_fail_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, writer: str
) -> None:
    # A directory that cannot be made (its parent is a file): every write fails, as on a
    # read-only or full disk (root ignores permission bits, so chmod would not do).
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with caplog.at_level(logging.WARNING, logger="flink_agents.event_log"):
        out, group = _run(
            ["alice", "bob"],
            **{
                "event-log.enabled": True,
                "baseLogDir": str(blocker / "log"),
                "event-log.writer": writer,
            },
        )
    assert sorted(k for o in out for k in o) == ["alice", "bob"]
    m = group.to_dict()
    assert m["eventLogWriteErrors"] > 0 and m["eventLogRecordsWritten"] == 0
    warnings = [r for r in caplog.records if "cannot write the event log" in r.message]
    assert len(warnings) == 1


@WRITERS
def test_event_log_rotates_by_size(tmp_path: Path, writer: str) -> None:
    _run(
        [f"name{i}" for i in range(6)],
        **{
            "event-log.enabled": True,
            "event-log.writer": writer,
            "baseLogDir": str(tmp_path),
            "event-log.rotation.max-file-bytes": 4000,
            "event-log.rotation.max-files": 2,
            # No timed flush: the whole run reaches the writer as one batch at close.
            "event-log.flush-ms": 600_000,
        },
    )
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 3, names
    assert names[0].endswith(".log") and names[1].endswith(".log.1")
    assert names[2].endswith(".log.2")
    for p in tmp_path.iterdir():
        # A drain may batch many records into one write; the batch is split at the limit.
        assert p.stat().st_size <= 4000, (p.name, p.stat().st_size)
        for line in p.read_text().splitlines():
            assert line.startswith("{") and line.endswith("}")
