"""Sub-agents in SQL: ``CREATE AGENT router ... USING TOOLS expert`` where ``expert`` is
another catalog agent. The catalog keeps the dependency (no drop or rename while used, no
cycle); ``agent_run`` compiles the expert into a section of the router's plan and the
router's model calls it like a tool."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.tools.agent_tool import AgentTool
from flink_agents.errors import CatalogError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.core import AgentRunner
from flink_agents.sql import AgentCatalog, CatalogAgent, CatalogTool, ObjectIdentifier
from flink_agents.sql.agent import MODEL_CONNECTION, SqlAgent
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup
from flink_agents.testing.servers import Reply, Request, ScriptedServer, openai_reply

MODEL = ObjectIdentifier("default_catalog", "default_database", "gpt")
SECRET = "sk-subagent-sql-never-shown-31c7"


def ident(name: str) -> ObjectIdentifier:
    return ObjectIdentifier("default_catalog", "default_database", name)


def agent(*tools: str) -> CatalogAgent:
    return CatalogAgent(model=MODEL, prompt="p", tools=tuple(ident(t) for t in tools))


# -- the catalog -------------------------------------------------------------------------------
def test_an_agent_may_use_another_agent_as_a_tool_and_keeps_it() -> None:
    catalog = AgentCatalog()
    catalog.create_tool("weather", CatalogTool(function="f"))
    catalog.create_agent("expert", agent("weather"))
    catalog.create_agent("router", agent("expert", "weather"))
    with pytest.raises(CatalogError, match="cannot be dropped: agent .*router uses it"):
        catalog.drop_agent("expert")
    with pytest.raises(CatalogError, match="cannot be renamed"):
        catalog.rename_agent("expert", "expert2")
    with pytest.raises(CatalogError, match="unknown tool default_catalog.default_database.nope"):
        catalog.create_agent("other", agent("nope"))
    catalog.drop_agent("router")
    catalog.drop_agent("expert")


# -- the SQL agent as a sub-agent (no Flink) ------------------------------------------------------
def router_reply(messages: list[ChatMessage], tools: Any) -> str | dict[str, Any]:
    """Routes "ask the expert: X" to the tool ``expert``; answers from its result."""
    last = messages[-1]
    question = next(m.content for m in reversed(messages) if m.role == MessageRole.USER)
    if last.role == MessageRole.TOOL:
        return f"{question} -> {last.content}"
    asked = re.fullmatch(r"ask the expert: (.*)", question)
    if asked and {t.name for t in tools} == {"expert"}:
        call = {"type": "function", "function": {"name": "expert", "arguments": {}}}
        call["function"]["arguments"] = {"input": asked.group(1)}
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    return f"expert says: {question.upper()}"


def _sql_agent(column: int | None, tools: dict[str, Any], name: str) -> SqlAgent:
    return SqlAgent(
        model_connection=ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond=router_reply, name=name
        ),
        model_setup=ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection=MODEL_CONNECTION, tools=list(tools)
        ),
        prompt=f"You are the {name}.",
        column=column,
        memory_turns=0,
        tools=tools,
    )


def test_a_sql_agent_as_a_sub_agent_answers_the_question_alone() -> None:
    expert = _sql_agent(None, {}, "expert")
    router = _sql_agent(1, {"expert": AgentTool(expert, description="Knows things")}, "router")
    runner = AgentRunner(AgentPlan.from_agent(router))
    try:
        result = runner.run_sync("k", (7, "ask the expert: why"))
        answer = "ask the expert: why -> expert says: WHY"
        assert result.outputs == [(7, "ask the expert: why", answer)]
        tool = runner.plan.resource_providers[ResourceType.TOOL]["expert"].serialized
        assert tool["metadata"]["description"] == "Knows things"
    finally:
        runner.close()


# -- statements (a table environment: a JVM, no job) and agent_run (a MiniCluster job) -----------
def respond(request: Request) -> Reply:
    """The OpenAI-compatible model of both agents (see :func:`router_reply`)."""
    messages = request.body["messages"]
    last = messages[-1]
    question = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    if last["role"] == "tool":
        return Reply(openai_reply(f"{question} -> {last['content']}"))
    tools = {t["function"]["name"] for t in request.body.get("tools") or []}
    asked = re.fullmatch(r"ask the expert: (.*)", question)
    if asked and "expert" in tools:
        return Reply(openai_reply(None, [("call-e", "expert", {"input": asked.group(1)})]))
    return Reply(openai_reply(f"expert says: {question.upper()}"))


@pytest.mark.flink
def test_create_agent_using_another_agent_and_agent_run(tmp_path: Path) -> None:
    from flink_agents.runtime.flink.sql import sql_session
    from flink_agents.testing.minicluster import make_env

    with ScriptedServer(respond=respond) as server:
        sink = tmp_path / "answers"
        _, agents_env = make_env(parallelism=1)
        session = sql_session(agents_env)
        session.execute_script(
            f"""
            CREATE MODEL gpt WITH ('provider' = 'openai',
              'endpoint' = '{server.url}/v1/chat/completions', 'model' = 'fake-model',
              'api-key' = '{SECRET}');
            CREATE AGENT expert USING MODEL gpt USING PROMPT 'You are an expert.'
              COMMENT 'Answers hard questions';
            CREATE AGENT router USING MODEL gpt USING PROMPT 'You route questions.'
              USING TOOLS expert;
            """
        )
        with pytest.raises(CatalogError, match="would call itself through its sub-agents"):
            session.execute_script("ALTER AGENT expert ADD TOOL router;")
        shown = session.execute_script("SHOW CREATE AGENT router;")[-1].result
        with shown.collect() as rows:
            assert "USING TOOLS `default_catalog`.`default_database`.`expert`" in list(rows)[0][0]
        session.execute_script(
            f"""
            CREATE TEMPORARY VIEW questions AS SELECT * FROM (VALUES
              (1, 'ask the expert: why'), (2, 'hello')) AS t(id, question);
            CREATE TEMPORARY TABLE answers (id INT, question STRING, agent_output STRING)
              WITH ('connector' = 'filesystem', 'path' = '{sink}', 'format' = 'json');
            INSERT INTO answers SELECT * FROM agent_run(
              INPUT => TABLE questions, AGENT => AGENT router, COL => DESCRIPTOR(question));
            """
        )
    files = sorted(p for p in sink.rglob("*") if p.is_file() and not p.name.startswith("."))
    rows = sorted(
        (json.loads(line) for f in files for line in f.read_text().splitlines() if line),
        key=lambda r: r["id"],
    )
    assert rows == [
        {"id": 1, "question": "ask the expert: why",
         "agent_output": "ask the expert: why -> expert says: WHY"},
        {"id": 2, "question": "hello", "agent_output": "expert says: HELLO"},
    ]  # fmt: skip
    expert_asked = [
        r.body for r in server.requests if r.body["messages"][0]["content"] == "You are an expert."
    ]
    assert [b["messages"][-1]["content"] for b in expert_asked] == ["why"]
    offered = server.requests[0].body["tools"][0]["function"]
    assert (offered["name"], offered["description"]) == ("expert", "Answers hard questions")
    (plan,) = session.translator.plans
    assert set(plan.subagents) == {"expert"} and SECRET not in plan.model_dump_json()
