"""A Python agent using Java tools and a Java chat model on a real MiniCluster (thread mode)."""

from __future__ import annotations

import collections

import pytest

from flink_agents.errors import PlanValidationError
from tests.java import agents
from tests.java.harness import bridge_host, collect, make_env, source  # noqa: F401

pytestmark = pytest.mark.flink

SCRIPTED = "org.flinkagents.examples.ScriptedJavaChatModel"


def _records() -> list[dict]:
    texts = ["hello", "Flink agents", "über-java", "x", "pemja", "tools"]
    records = [{"id": i, "key": f"k{i % 3}", "text": t} for i, t in enumerate(texts)]
    records += [
        {"id": 10, "key": "k0", "text": "boom now"},
        {"id": 20, "key": "k1", "text": "calc", "model": "calc_model"},
        {"id": 30, "key": "k2", "text": "nope", "model": "missing_tool_model"},
        {"id": 40, "key": "k0", "text": "nope", "model": "missing_model"},
        {"id": 50, "key": "k1", "text": "after errors"},
    ]
    return records


def test_agent_with_java_tool_and_java_chat_model(tmp_path, bridge_host) -> None:  # noqa: F811
    lifecycle = tmp_path / "lifecycle.txt"
    records = _records()
    env, agents_env = make_env(**{"error-handling-strategy": "ignore"})
    out = (
        agents_env.from_datastream(source(env, records), key_selector=lambda r: r["key"])
        .apply(agents.java_agent(lifecycle_file=str(lifecycle)))
        .to_datastream()
    )
    results = {o["id"]: o for o in collect(out)}
    assert sorted(results) == sorted(r["id"] for r in records)

    # The tool-call loop mixed a Java tool and a Python tool, driven by a Java model.
    for r in records:
        if "model" in r or "boom" in r["text"]:
            continue
        got = results[r["id"]]
        text = r["text"]
        assert got["reply"] == f"java={text.upper()} python={text[::-1]} model=scripted-1"
        assert got["java_model"] == SCRIPTED
        assert got["turn"] == 1

    # A Java exception in the model call: a clear error with the Java message.
    boom = results[10]
    assert "java.lang.IllegalStateException: scripted failure: input 'boom now'" in boom["error"]
    assert "ScriptedJavaChatModel" in boom["error"]

    # A Java exception in a tool goes back to the model as the tool's result.
    calc = results[20]["reply"]
    assert "java.lang.ArithmeticException: division by zero" in calc
    assert calc.endswith(", 42")

    # Missing Java classes: clear errors, and the job goes on (id 50 ran after them).
    assert "class not found: com.acme.DoesNotExist" in results[30]["error"]
    assert "class not found: com.acme.MissingModel" in results[40]["error"]
    assert results[50]["reply"].startswith("java=AFTER ERRORS")

    # Created once per slot, closed when the operator closed.
    events = collections.Counter(lifecycle.read_text().split("\n"))
    assert events["open org.flinkagents.examples.UpperCaseTool"] == 1
    assert events["close org.flinkagents.examples.UpperCaseTool"] == 1
    assert events[f"open {SCRIPTED}"] == 1  # java_conn only (calc_conn has no lifecycle file)
    assert events[f"close {SCRIPTED}"] == 1


def test_java_embedding_model(bridge_host) -> None:  # noqa: F811
    env, agents_env = make_env()
    records = [
        {"id": 1, "text": "hello world"},
        {"id": 2, "text": "hello world"},
        {"id": 3, "text": "stream processing"},
    ]
    out = agents_env.from_datastream(source(env, records)).apply(agents.embedding_agent())
    results = {o["id"]: o["vector"] for o in collect(out.to_datastream())}
    assert len(results[1]) == 16
    assert results[1] == results[2] != results[3]
    assert abs(sum(x * x for x in results[1]) - 1.0) < 1e-9


def test_process_mode_is_refused_with_a_clear_message() -> None:
    records = [{"id": 1, "key": "k", "text": "hello"}]
    env, agents_env = make_env(mode="process", **{"error-handling-strategy": "ignore"})
    try:
        out = (
            agents_env.from_datastream(source(env, records), key_selector=lambda r: r["key"])
            .apply(agents.java_agent())
            .to_datastream()
        )
    except PlanValidationError as exc:  # the host checks the plan at apply time
        assert "python.execution-mode=process" in str(exc)
        assert "python.execution-mode=thread" in str(exc)
        return
    # Without the apply-time check, the resource creation says the same in the error event.
    results = collect(out)
    assert len(results) == 1
    assert "no JVM in this Python process" in results[0]["error"]
    assert "python.execution-mode=thread" in results[0]["error"]


def test_java_vector_store_through_the_bridge(bridge_host) -> None:  # noqa: F811
    """Documents embedded in Python are stored, filtered and ranked by the Java store; the
    built-in retrieval action queries it; collections are managed through it."""
    env, agents_env = make_env()
    records = [
        {"id": 1, "key": "k", "op": "load"},
        {"id": 2, "key": "k", "op": "ask", "q": "event time watermarks"},
        {"id": 3, "key": "k", "op": "filter"},
        {"id": 4, "key": "k", "op": "collections"},
    ]
    out = (
        agents_env.from_datastream(source(env, records), key_selector=lambda r: r["key"])
        .apply(agents.vector_store_agent())
        .to_datastream()
    )
    results = {o["id"]: o for o in collect(out)}
    assert results[1]["ids"] == ["ckpt", "wm", "rocks"]
    top, second = results[2]["docs"]
    assert top[0] == "wm" and top[1] > second[1]  # cosine similarity, best first
    assert results[3]["found"][0] == "rocks" and set(results[3]["found"]) == {"ckpt", "rocks"}
    assert results[4]["before"] == ["docs", "extra"] and results[4]["after"] == ["docs"]
