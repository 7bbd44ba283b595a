"""The examples that run in the local environment (fast): their outputs, and each run as a
script with ``python -m``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from examples import custom_events, react_agent, workflow_single_agent, yaml_agent
from flink_agents.testing import ScriptedChatModelConnection

REPO = Path(__file__).resolve().parents[2]


def values(outputs: list[dict]) -> list[tuple]:
    return [next(iter(o.items())) for o in outputs]


def test_workflow_single_agent_example():
    workflow_single_agent.NOTIFICATIONS.clear()
    workflow_single_agent.main()
    assert [n["id"] for n in workflow_single_agent.NOTIFICATIONS] == ["r2"]


def test_react_agent_example_calls_the_tool_and_fills_the_schema():
    ScriptedChatModelConnection.reset_counts()
    out = values(react_agent.main())
    assert [key for key, _ in out] == ["ann", "bob", "cid"]
    answers = {key: answer for key, answer in out}
    assert all(isinstance(a, react_agent.SupportAnswer) for a in answers.values())
    assert answers["ann"] == react_agent.SupportAnswer(
        order_id="A-1001",
        status="shipped",
        reply="Your order is shipped; expected delivery: 2 days.",
    )
    assert answers["bob"].order_id == "A-1003"  # the tool normalized "a-1003"
    assert answers["bob"].status == "delivered"
    assert answers["cid"].status == "unknown"
    # Each ticket: one call asking for the tool, one call with its result.
    assert ScriptedChatModelConnection.call_counts["support"] == 6


def test_react_agent_example_retries_a_reply_that_misses_the_schema():
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment
    from flink_agents.api.resource import ResourceDescriptor

    ScriptedChatModelConnection.reset_counts()
    connection = ResourceDescriptor(
        clazz=ScriptedChatModelConnection,
        replies=['{"order_id": "A-1"}', '{"order_id": "A-1", "status": "s", "reply": "r"}'],
        name="flaky",
    )
    agent = react_agent.build_agent(connection)
    env = AgentsExecutionEnvironment.get_execution_environment()
    out = (
        env.from_list([{"key": "k", "value": {"customer": "k", "message": "?"}}])
        .apply(agent)
        .to_list()
    )
    env.execute()
    assert out == [{"k": react_agent.SupportAnswer(order_id="A-1", status="s", reply="r")}]
    assert ScriptedChatModelConnection.call_counts["flaky"] == 2  # asked again once


def test_custom_events_example_branches_and_keeps_memory():
    out = values(custom_events.main())
    by_key: dict[str, list[dict]] = {}
    for key, summary in out:
        assert summary["customer"] == key
        by_key.setdefault(key, []).append(summary)
    assert [s["decision"] for s in by_key["ann"]] == [
        "purchase of 40.00",
        "purchase of 25.50",
        "refund of 10.00",
    ]
    assert [s["spent"] for s in by_key["ann"]] == [40.0, 65.5, 55.5]
    assert by_key["ann"][-1]["purchases"] == 2 and by_key["ann"][-1]["refunds"] == 1
    assert [s["decision"] for s in by_key["bob"]] == [
        "review flagged (accusation)",
        "refund of 150.00 held for review (risk 0.75)",
    ]
    assert by_key["bob"][-1]["held_refunds"] == 1
    assert by_key["bob"][-1]["spent"] == 0.0  # a held refund is not booked
    assert [s["decision"] for s in by_key["cid"]] == ["review accepted"]


def test_yaml_agent_example_looks_up_orders_and_escalates_from_its_yaml_config():
    ScriptedChatModelConnection.reset_counts()
    results = dict(values(yaml_agent.main()))
    assert results == {
        "t1": {
            "ticket": "t1",
            "category": "delivery",
            "priority": 2,
            "escalated": False,
            "reply": "Your order is shipped, arriving tomorrow.",
        },
        "t2": {
            "ticket": "t2",
            "category": "delivery",
            "priority": 5,
            "escalated": True,  # escalate_at: 4 in the YAML file
            "reply": "Your order is delayed at customs.",
        },
        "t3": {
            "ticket": "t3",
            "category": "billing",
            "priority": 2,
            "escalated": False,
            "reply": "We are looking into it.",
        },
    }
    # Two tickets name an order: a tool call and an answer each; the third, one answer.
    assert ScriptedChatModelConnection.call_counts["scripted"] == 5


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_yaml_agent_example_model_files_load_and_compile(provider):
    """The other model files are valid and complete: the agent compiles against each
    (nothing is called)."""
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml([yaml_agent.AGENT_FILE, yaml_agent.HERE / "yaml_models" / f"{provider}.yaml"])
    builder = env.from_list([]).apply("ticket_triage_agent")
    setup = builder._plan.resource_providers["chat_model"]["triage_model"]
    assert setup.clazz.endswith(("OllamaChatModelSetup", "OpenAIChatModelSetup"))
    assert setup.arguments["tools"] == ["order_status"]


@pytest.mark.parametrize(
    ("module", "lines"),
    [
        ("examples.workflow_single_agent", 3),
        ("examples.react_agent", 3),
        ("examples.custom_events", 6),
        ("examples.approval_agent", 8),
        ("examples.yaml_agent", 3),
    ],
)
def test_example_runs_as_a_script(module, lines):
    proc = subprocess.run(
        [sys.executable, "-m", module], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == lines, proc.stdout


@pytest.mark.parametrize("path", sorted((REPO / "examples").glob("*.py")))
def test_every_example_says_what_it_shows_and_which_model(path):
    if path.name == "__init__.py":
        return
    import ast

    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    assert doc, f"{path.name} has no module docstring"
    assert "model" in doc.lower(), f"{path.name}: the docstring must say which model it uses"


def test_workflow_agent_outputs_scores_and_reasons_with_memory_between_actions():
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    env = AgentsExecutionEnvironment.get_execution_environment()
    for name, descriptor in workflow_single_agent.model_resources("scripted").items():
        env.add_resource(name, descriptor)
    reviews = workflow_single_agent.SAMPLE_REVIEWS
    out = (
        env.from_list([{"key": r.id, "value": r} for r in reviews])
        .apply(workflow_single_agent.ReviewAnalysisAgent())
        .to_list()
    )
    env.execute()
    results = {key: value for item in out for key, value in item.items()}
    Res = workflow_single_agent.ProductReviewAnalysisRes
    assert results == {
        "r1": Res(id="r1", score=5, reasons=[]),
        "r2": Res(id="r2", score=1, reasons=["damaged in shipping"]),
        "r3": Res(id="r3", score=3, reasons=["mixed experience"]),
    }


def test_approval_agent_example_pauses_and_resumes_by_the_reviewers_decisions():
    from examples import approval_agent
    from flink_agents.api.approval import ApprovalRequest

    approval_agent.ISSUED.clear()
    ScriptedChatModelConnection.reset_counts()
    out = approval_agent.main()
    # Keys run concurrently: the order across keys follows their calls' timing (a loaded
    # machine reorders them), each key's own order is its inputs'.
    requests = [(k, o.arguments["order_id"]) for k, o in out if isinstance(o, ApprovalRequest)]
    assert _by_key(requests) == {
        "ann": ["A-1001", "A-1004"],
        "bob": ["A-1002"],
        "cid": ["Z-9"],
    }
    answers = [(k, o) for k, o in out if not isinstance(o, ApprovalRequest)]
    assert _by_key(answers) == {
        "ann": [
            "Done: refunded 30 EUR on A-1001",
            "Done: refunded 5 EUR on A-1004",  # waited behind ann's first ticket
        ],
        "bob": ["Done: refunded 100 EUR on A-1002"],  # edited by the reviewer
        "cid": [
            "Done: Error: tool 'issue_refund' was not called: the call was rejected by a "
            "human reviewer: unknown order"
        ],
    }
    issued = approval_agent.ISSUED
    assert sorted(issued) == [("A-1001", 30.0), ("A-1002", 100.0), ("A-1004", 5.0)]
    assert issued.index(("A-1001", 30.0)) < issued.index(("A-1004", 5.0))  # ann's order
    # Two model calls per ticket: the one before each pause was not made again.
    assert ScriptedChatModelConnection.call_counts["refund-model"] == 8


def _by_key(pairs: list[tuple[str, Any]]) -> dict[str, list[Any]]:
    """Values by key, each key's in the order given."""
    grouped: dict[str, list[Any]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return grouped


def test_text_react_agent_example_parses_acts_and_is_guarded():
    from examples import text_react_agent

    ScriptedChatModelConnection.reset_counts()
    out = dict(values(text_react_agent.main()))
    assert out["q0"]["output"] == "391.0"  # the interceptor stripped the <think> block
    assert out["q0"]["tool_trace"] == [
        {"tool": "multiply", "arguments": {"a": 17, "b": 23}, "result": "391.0", "is_error": False}
    ]
    assert out["q1"]["output"].startswith("refused: the arguments must be at most one million")
    assert ScriptedChatModelConnection.call_counts["calc"] == 4
