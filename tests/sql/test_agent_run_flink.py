"""agent_run end to end on a MiniCluster, in one job: a SQL script registers a Python UDF,
makes it a tool (and another the tool of an MCP server the job starts over stdio), creates
a model pointing at a real local OpenAI-compatible HTTP server, an agent with those tools,
and INSERTs agent_run results over bounded tables into file sinks."""

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from flink_agents.runtime.flink.sql import sql_session
from flink_agents.testing.minicluster import make_env
from flink_agents.testing.servers import (
    Reply,
    Request,
    ScriptedServer,
    openai_reply,
)

pytestmark = pytest.mark.flink

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-e2e-never-in-plans-5c2e"


def respond(request: Request) -> Reply:
    """An OpenAI-compatible model: asks for the weather or multiply tool when the question
    needs it, answers from the tool result, and says how many earlier exchanges it saw."""
    messages = request.body["messages"]
    users = [m for m in messages if m["role"] == "user"]
    question, history = users[-1]["content"], len(users) - 1
    last = messages[-1]
    if last["role"] == "tool":
        return Reply(openai_reply(f"{question} -> {last['content']} (history {history})"))
    tools = {t["function"]["name"] for t in request.body.get("tools") or []}
    weather = re.fullmatch(r"weather in (\w+)", question)
    if weather and "weather" in tools:
        return Reply(openai_reply(None, [("call-w", "weather", {"city": weather.group(1)})]))
    product = re.fullmatch(r"multiply (\d+) by (\d+)", question)
    if product and "multiply" in tools:
        arguments = {"a": int(product.group(1)), "b": int(product.group(2))}
        return Reply(openai_reply(None, [("call-m", "multiply", arguments)]))
    return Reply(openai_reply(f"echo {question} (history {history})"))


def read_sink(path: Path) -> list[dict[str, Any]]:
    files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line]


def test_agent_run_script_end_to_end(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with ScriptedServer(respond=respond) as server:
        sinks = {name: tmp_path / name for name in ("answers", "redrafted", "loud")}

        def sink(name: str, columns: str) -> str:
            return (
                f"CREATE TEMPORARY TABLE {name} ({columns}) WITH ('connector' = 'filesystem', "
                f"'path' = '{sinks[name]}', 'format' = 'json')"
            )

        script = f"""
        CREATE TEMPORARY FUNCTION get_weather AS 'tests.sql.udfs.get_weather' LANGUAGE PYTHON;
        CREATE TOOL weather USING FUNCTION get_weather
          WITH ('description' = 'Current weather of a city');
        CREATE CONNECTION calculator WITH ('type' = 'mcp', 'command' = '{sys.executable}',
          'args' = '-m tests.integrations.mcp_server', 'cwd' = '{REPO}');
        CREATE TOOL calc USING CONNECTION calculator
          WITH ('allowed_tools' = 'multiply', 'read_timeout' = '60s');
        CREATE MODEL gpt WITH ('provider' = 'openai',
          'endpoint' = '{server.url}/v1/chat/completions', 'model' = 'fake-model',
          'api-key' = '{SECRET}');
        CREATE AGENT helper USING MODEL gpt USING PROMPT 'You answer questions.'
          USING TOOLS weather, calc WITH ('max-iterations' = '3');

        CREATE TEMPORARY VIEW questions AS SELECT * FROM (VALUES
          (1, 'ann', 'weather in Paris'), (2, 'bob', 'multiply 6 by 7'),
          (3, 'ann', 'weather in London'), (4, 'bob', 'thanks'), (5, 'ann', 'and tomorrow?')
        ) AS t(id, who, question);
        CREATE TEMPORARY VIEW drafts AS SELECT * FROM (VALUES
          (10, 'hello', 'draft-a'), (11, 'bye', 'draft-b')) AS t(id, q, agent_output);
        {sink("answers", "id INT, who STRING, question STRING, agent_output STRING")};
        {sink("redrafted", "id INT, q STRING, agent_output STRING, agent_output0 STRING")};
        {sink("loud", "id INT, shouted STRING")};

        INSERT INTO answers SELECT * FROM agent_run(
          INPUT => TABLE questions PARTITION BY who,
          AGENT => AGENT helper,
          COL => DESCRIPTOR(question));
        INSERT INTO redrafted SELECT * FROM agent_run(
          INPUT => TABLE drafts, AGENT => AGENT helper, COL => DESCRIPTOR(q));
        CREATE TEMPORARY VIEW shouted AS
          SELECT r.id, UPPER(r.agent_output0) AS shouted
          FROM TABLE(agent_run(TABLE drafts, AGENT helper, DESCRIPTOR(q),
                               MAP['max-iterations', '2'])) AS r
          WHERE r.id > 10;
        INSERT INTO loud SELECT * FROM shouted;
        """
        _, agents_env = make_env(parallelism=1)
        session = sql_session(agents_env)
        steps = session.execute_script(script)

    # The three INSERTs were queued where they stood and ran as one job at the end.
    queued = [s for s in steps if s.result is None]
    assert [s.statement.text.split()[2] for s in queued] == ["answers", "redrafted", "loud"]
    assert steps[-1].job and steps[-1].statement == queued[0].statement
    assert sum(1 for s in steps if s.job) == 1

    # Original columns + agent_output; per-key order and memory (PARTITION BY who).
    answers = read_sink(sinks["answers"])
    assert sorted(answers, key=lambda r: r["id"]) == [
        {"id": 1, "who": "ann", "question": "weather in Paris",
         "agent_output": "weather in Paris -> sunny in Paris (history 0)"},
        {"id": 2, "who": "bob", "question": "multiply 6 by 7",
         "agent_output": "multiply 6 by 7 -> 42 (history 0)"},
        {"id": 3, "who": "ann", "question": "weather in London",
         "agent_output": "weather in London -> rainy in London (history 1)"},
        {"id": 4, "who": "bob", "question": "thanks",
         "agent_output": "echo thanks (history 1)"},
        {"id": 5, "who": "ann", "question": "and tomorrow?",
         "agent_output": "echo and tomorrow? (history 2)"},
    ]  # fmt: skip
    assert [r["id"] for r in answers if r["who"] == "ann"] == [1, 3, 5]
    assert [r["id"] for r in answers if r["who"] == "bob"] == [2, 4]

    # The input had agent_output already: the answer is agent_output0; keyless: no memory.
    assert sorted(read_sink(sinks["redrafted"]), key=lambda r: r["id"]) == [
        {"id": 10, "q": "hello", "agent_output": "draft-a",
         "agent_output0": "echo hello (history 0)"},
        {"id": 11, "q": "bye", "agent_output": "draft-b",
         "agent_output0": "echo bye (history 0)"},
    ]  # fmt: skip
    # Inside a view with a filter and an expression.
    assert read_sink(sinks["loud"]) == [{"id": 11, "shouted": "ECHO BYE (HISTORY 0)"}]

    # The tools were really called through the model's tool calls.
    requests = [r.body for r in server.requests]
    tool_results = [m["content"] for b in requests for m in b["messages"] if m["role"] == "tool"]
    assert set(tool_results) == {"sunny in Paris", "rainy in London", "42"}
    offered = {t["function"]["name"]: t["function"] for t in requests[0]["tools"]}
    assert set(offered) == {"weather", "multiply"}
    assert offered["weather"]["description"] == "Current weather of a city"
    assert offered["weather"]["parameters"]["properties"]["city"]["type"] == "string"
    # The memory of ann's third question holds her two earlier exchanges, in order.
    third = next(b for b in requests if b["messages"][-1]["content"] == "and tomorrow?")
    assert [m["role"] for m in third["messages"]] == ["system", *["user", "assistant"] * 2, "user"]
    assert third["messages"][2]["content"] == "weather in Paris -> sunny in Paris (history 0)"
    assert third["messages"][0]["content"] == "You answer questions."

    # The API key reached the server from the task, but no plan JSON and no log line.
    assert {r.headers.get("authorization") for r in server.requests} == {f"Bearer {SECRET}"}
    assert len(session.translator.plans) == 3
    for plan in session.translator.plans:
        assert SECRET not in plan.model_dump_json()
    assert SECRET not in caplog.text
