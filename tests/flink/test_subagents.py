"""Sub-agents on a MiniCluster, in one job (jobs cost CI time): a ReAct agent delegating to
a sub-agent whose tool needs approval, and a failure and restore while runs are paused
*inside* their sub-agent (their durable records, the sub-agent's among them, in keyed
state): no model call the durable log had is made again, every output comes once, approval
works inside the sub-agent across the restore, and the sub-agent's calls and tokens are
attributed to it in the event log.

Cheaper levels test the rest: tests/runtime/test_subagents.py (the core runner and the
local environment: replay, memory, depth, metrics, interceptors, approval)."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyflink.common import Configuration, Duration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.datastream import MapFunction, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

from flink_agents.api.approval import ApprovalRequest, ApprovalResponse
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.testing.event_log import read_event_log
from tests.flink.harness import MODE
from tests.runtime import subagent_agents as sa

pytestmark = pytest.mark.flink


def _made(log: Path) -> list[tuple[str, str, int]]:
    """The model calls really made: ``(model, question, step)``."""
    return [
        (d["model"], d["q"], d["step"])
        for d in (json.loads(line) for line in log.read_text().splitlines())
    ]


# -- a restore while runs are paused for approval inside their sub-agent --------------------------
class _Parse(MapFunction):
    """JSON lines to inputs; an ``approval`` line becomes an ApprovalResponse; a ``fail``
    line fails the job once (its marker file says it did)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def map(self, line: str) -> Any:
        record = json.loads(line)
        if "fail" in record:
            if not os.path.exists(self.marker):
                Path(self.marker).write_text("failed")
                raise RuntimeError("injected failure while runs are paused in a sub-agent")
            return {"id": "none", "skip": True}
        if "approval" in record:
            return ApprovalResponse(**record["approval"])
        return record


def _model_calls(events: Path) -> int:
    return len(read_event_log(events).calls("model", replayed=False))


class _Inbox:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir()

    def send(self, *records: dict[str, Any]) -> None:
        name = f"{uuid.uuid4().hex}.json"
        tmp = self.path.parent / name
        tmp.write_text("".join(json.dumps(r) + "\n" for r in records))
        tmp.rename(self.path / name)  # appears whole to the monitoring source

    def answer(self, response: ApprovalResponse) -> None:
        self.send({"approval": response.model_dump(mode="json")})


def test_delegation_with_a_restore_while_paused_inside_the_sub_agent(tmp_path):
    log = tmp_path / "calls.jsonl"
    inbox = _Inbox(tmp_path / "inbox")
    conf = Configuration()
    conf.set_string("restart-strategy.type", "fixed-delay")
    conf.set_string("restart-strategy.fixed-delay.attempts", "2")
    conf.set_string("restart-strategy.fixed-delay.delay", "200 ms")
    conf.set_string("python.execution-mode", MODE)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    env.enable_checkpointing(300)
    events = tmp_path / "events"
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": MODE, "event-log.enabled": True, "baseLogDir": str(events)}
    )
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(inbox.path))
        .monitor_continuously(Duration.of_millis(100))
        .build()
    )
    inputs = env.from_source(source, WatermarkStrategy.no_watermarks(), "inbox").map(
        _Parse(str(tmp_path / "failed")), output_type=Types.PICKLED_BYTE_ARRAY()
    )
    out = (
        agents_env.from_datastream(
            inputs.filter(lambda r: not isinstance(r, dict) or not r.get("skip")),
            lambda r: r["id"],
        )
        .apply(sa.team(approval=True))
        .to_datastream()
    )
    records = {k: sa.question(i, str(log)) for i, k in enumerate(("k0", "k1", "k2"))}
    inbox.send(*records.values())
    requests: dict[str, ApprovalRequest] = {}
    answers: dict[str, list[Any]] = {}
    failed = False
    with out.execute_and_collect() as results:
        for output in results:
            if isinstance(output, ApprovalRequest):
                assert output.key not in requests, f"request emitted twice: {output}"
                assert (output.tool_name, output.arguments) == (
                    "lookup",
                    {"q": records[output.key]["q"]},
                )
                requests[output.key] = output
                if len(requests) == 3:
                    inbox.answer(requests["k0"].approve())
                continue
            answers.setdefault(str(output).partition(":")[0], []).append(output)
            if not failed and "k0" in answers:
                # k0's output came out (checkpointed): fail the job while k1 and k2 are
                # paused inside their sub-agent, then answer them.
                failed = True
                inbox.send({"fail": True})
                deadline = time.monotonic() + 60
                while not (tmp_path / "failed").exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
                inbox.answer(requests["k1"].approve())
                inbox.answer(requests["k2"].reject("not this one"))
            if len(answers) == 3:
                # The event log is written every event-log.flush-ms while the job runs (a
                # cancelled job may lose the last flush): wait for the runs' last calls.
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline and _model_calls(events) < 4 * len(records):
                    time.sleep(0.1)
                break
    assert (tmp_path / "failed").exists()
    assert answers == {
        "k0": [sa.expected_answer(records["k0"])],
        "k1": [sa.expected_answer(records["k1"])],
        "k2": [
            "k2: found Error: tool 'lookup' was not called: the call was rejected by a human "
            "reviewer: not this one"
        ],
    }
    # Each model call once: the two made before each pause (the coordinator's first, the
    # sub-agent's first) were answered from the log on resume and after the restore.
    made = Counter(_made(log))
    assert sorted(made) == sorted(
        (model, record["q"], step)
        for record in records.values()
        for model in ("coordinator", "researcher")
        for step in (1, 2)
    )
    assert max(made.values()) == 1, made
    # The sub-agent's calls and tokens are its own in the event log (qualified action
    # names); the calls made before the pauses were answered from the log (replayed).
    log_of_events = read_event_log(events)
    calls = log_of_events.calls("model", replayed=False)
    assert Counter(c["action"] for c in calls) == {
        "chat_model_action": 2 * len(records),
        "researcher/chat_model_action": 2 * len(records),
    }
    tokens: Counter[str] = Counter()
    for c in calls:
        tokens[c["action"].partition("/")[0] if "/" in c["action"] else "coordinator"] += c[
            "usage"
        ]["prompt_tokens"]
    assert tokens == {
        "coordinator": 2 * len(records) * sa.PARENT_USAGE["prompt_tokens"],
        "researcher": 2 * len(records) * sa.CHILD_USAGE["prompt_tokens"],
    }
    replayed = {c["action"] for c in log_of_events.calls("model", replayed=True)}
    assert replayed == {"chat_model_action", "researcher/chat_model_action"}
    tool_calls = log_of_events.calls("tool", replayed=False)
    assert sorted((c["action"], c["key"]) for c in tool_calls) == [
        ("researcher/tool_call_action", "k0"),
        ("researcher/tool_call_action", "k1"),
    ]
