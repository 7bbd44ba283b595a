"""Human approval on a MiniCluster: approve, reject, edit, timeout and a restore while a
run is paused, in one job fed through a monitored directory (the test answers requests as
they come out)."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyflink.common import Configuration, Duration, WatermarkStrategy
from pyflink.common.typeinfo import Types
from pyflink.datastream import MapFunction, StreamExecutionEnvironment
from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

from flink_agents.api.approval import ApprovalRequest, ApprovalResponse
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from tests.flink.harness import MODE
from tests.runtime import approval_agents

pytestmark = pytest.mark.flink


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
                raise RuntimeError("injected failure while a run is paused")
            return {"key": "none", "skip": True}
        if "approval" in record:
            return ApprovalResponse(**record["approval"])
        return record


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


def test_approve_reject_edit_timeout_and_restore_while_paused(tmp_path) -> None:
    tag = uuid.uuid4().hex[:8]
    orders = {k: f"f-{tag}-{k}" for k in ("ok", "no", "edit", "late", "restore")}
    inbox = _Inbox(tmp_path / "inbox")
    model_calls = tmp_path / "model_calls.jsonl"
    conf = Configuration()
    conf.set_string("restart-strategy.type", "fixed-delay")
    conf.set_string("restart-strategy.fixed-delay.attempts", "2")
    conf.set_string("restart-strategy.fixed-delay.delay", "200 ms")
    conf.set_string("python.execution-mode", MODE)
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    env.enable_checkpointing(300)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": MODE, "approval.timeout": 8}
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
            lambda r: r["key"],
        )
        .apply(approval_agents.refund_agent("flink-approval", str(model_calls)))
        .to_datastream()
    )

    def refund(key: str, amount: float = 30) -> dict[str, Any]:
        return {"key": key, "tool": "refund", "args": {"order_id": orders[key], "amount": amount}}

    inbox.send(
        refund("ok"),
        {"key": "ok", "tool": "lookup", "args": {"order_id": "o-held"}},  # waits behind it
        refund("no"),
        refund("edit"),
        refund("late"),
        refund("restore"),
    )
    requests: dict[str, ApprovalRequest] = {}
    answers: dict[str, list[str]] = {}
    failed_at = None
    start = time.monotonic()
    with out.execute_and_collect() as results:
        for output in results:
            print(f"  {time.monotonic() - start:6.1f}s {output!r:.100}")
            if isinstance(output, ApprovalRequest):
                assert output.key not in requests, f"request emitted twice: {output}"
                requests[output.key] = output
                if len(requests) == 5:
                    inbox.answer(requests["ok"].approve())
                    inbox.answer(requests["no"].reject("too much"))
                    edited = {"order_id": orders["edit"], "amount": 5}
                    inbox.answer(requests["edit"].approve(edited))
                    # Malformed: an unknown id, a response sent under another key.
                    inbox.answer(ApprovalResponse(request_id="nope", key="restore", approved=True))
                    wrong = requests["restore"].model_copy(update={"key": "ok"})
                    inbox.answer(wrong.approve())
                continue
            answers.setdefault(_key_of(output, orders), []).append(output)
            answered = sum(len(answers.get(k, [])) for k in ("ok", "no", "edit"))
            if failed_at is None and answered == 4:
                # Committed (the collect sink returns checkpointed results): now fail the
                # job while "restore" (and "late") are paused; answer "restore" after it.
                failed_at = time.monotonic()
                inbox.send({"fail": True})
                while not (tmp_path / "failed").exists():
                    time.sleep(0.1)
                inbox.answer(requests["restore"].approve())
            if "late" in answers and "restore" in answers:
                break
    wall = time.monotonic() - start
    print(f"\n[{MODE}] approval job: {wall:.1f}s")
    assert answers["ok"] == [
        f"#1 refund[c1]=refunded 30 on {orders['ok']}",
        "#2 lookup[c1]=o-held: shipped",
    ]
    assert answers["no"] == [
        "#1 refund[c1]=Error: tool 'refund' was not called: the call was rejected by a human "
        "reviewer: too much"
    ]
    assert answers["edit"] == [f"#1 refund[c1]=refunded 5 on {orders['edit']}"]
    assert "no decision within approval.timeout (8s)" in answers["late"][0]
    assert answers["restore"] == [f"#1 refund[c1]=refunded 30 on {orders['restore']}"]
    # Nothing repeated: one refund per approved order, none for the others; two model
    # calls per run (the one before the pause is replayed on resume and after the restore).
    assert [
        len(approval_agents.file_calls(orders[k])) for k in ("ok", "no", "edit", "late", "restore")
    ] == [1, 0, 1, 0, 1]
    assert len(model_calls.read_text().splitlines()) == 5 * 2 + 2
    assert (tmp_path / "failed").exists()


def _key_of(output: str, orders: dict[str, str]) -> str:
    for key, order in orders.items():
        if order in output:
            return key
    if "o-held" in output:
        return "ok"
    if "too much" in output:
        return "no"
    if "approval.timeout" in output:
        return "late"
    return "?"
