"""Provider-specific mapping: options, structured output, reasoning, message formats."""

from __future__ import annotations

import json
import logging

import pytest
from pydantic import BaseModel

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import ModelCallError
from flink_agents.integrations.chat_models.anthropic.anthropic_chat_model import (
    AnthropicChatModelConnection,
    AnthropicChatModelSetup,
)
from flink_agents.integrations.chat_models.ollama_chat_model import (
    OllamaChatModelConnection,
    OllamaChatModelSetup,
)
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.testing import servers as fs
from flink_agents.testing.servers import Reply, ScriptedServer
from tests.integrations import agents
from tests.integrations.agents import FAST, ChatAgent

SCHEMA = {"title": "Verdict", "type": "object", "properties": {"ok": {"type": "boolean"}}}

LOOP = [
    ChatMessage(role=MessageRole.SYSTEM, content="You add numbers."),
    ChatMessage(role=MessageRole.USER, content="2+3 and 4+5?"),
    ChatMessage(
        role=MessageRole.ASSISTANT,
        content="",
        tool_calls=[
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "add", "arguments": {"a": 2, "b": 3}},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 4, "b": 5}'},
            },
        ],
    ),
    ChatMessage(
        role=MessageRole.TOOL, content="5", extra_args={"tool_call_id": "c1", "name": "add"}
    ),
    ChatMessage(
        role=MessageRole.TOOL, content="9", extra_args={"tool_call_id": "c2", "name": "add"}
    ),
]


def _setup(cls, conn, **kw):
    """A setup wired to ``conn`` and the ``add`` tool, as the runtime would create it."""
    tool = Tool.from_callable(agents.add)
    lookup = {"conn": conn, "add": tool}
    return cls(connection="conn", get_resource=lambda name, _type: lookup[name], **kw)


# --- OpenAI -------------------------------------------------------------------------------


def test_openai_request_options_tools_and_history():
    with ScriptedServer([Reply(fs.openai_reply("5 and 9"))]) as server:
        conn = OpenAIChatModelConnection(api_base_url=server.url + "/v1", api_key="k" * 10, **FAST)
        setup = _setup(
            OpenAIChatModelSetup,
            conn,
            model="gpt-x",
            temperature=0.2,
            max_tokens=50,
            tools=["add"],
            additional_kwargs={"seed": 7, "top_k": 3},
        )
        reply = setup.chat(LOOP)
    body = server.requests[0].body
    assert (body["model"], body["temperature"], body["max_tokens"], body["seed"]) == (
        "gpt-x",
        0.2,
        50,
        7,
    )
    assert body["top_k"] == 3  # unknown to the SDK: sent through extra_body
    assert body["tools"][0]["function"]["name"] == "add"
    assert body["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool"]
    assert [c["id"] for c in msgs[2]["tool_calls"]] == ["c1", "c2"]
    assert json.loads(msgs[2]["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}
    assert json.loads(msgs[2]["tool_calls"][1]["function"]["arguments"]) == {"a": 4, "b": 5}
    assert [(m["tool_call_id"], m["content"]) for m in msgs[3:]] == [("c1", "5"), ("c2", "9")]
    assert reply.content == "5 and 9"


async def test_openai_structured_output_modes_and_parsed_tool_calls():
    replies = [
        Reply(fs.openai_reply('{"ok": true}')),
        Reply(fs.openai_reply('{"ok": true}')),
        Reply(fs.openai_reply(None, [("id1", "add", {"a": 1, "b": 2})])),
    ]
    with ScriptedServer(replies) as server:
        conn = OpenAIChatModelConnection(api_base_url=server.url + "/v1", **FAST)
        await conn.achat(LOOP[:2], model="m", output_schema=SCHEMA)
        await conn.achat(LOOP[:2], model="m", output_schema=SCHEMA, structured_output="json_object")
        reply = await conn.achat(LOOP[:2], model="m")
    fmt = [q.body.get("response_format") for q in server.requests]
    assert fmt[0] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": SCHEMA, "strict": False},
    }
    assert fmt[1] == {"type": "json_object"}
    assert fmt[2] is None
    assert reply.tool_calls == [
        {
            "id": "id1",
            "type": "function",
            "function": {"name": "add", "arguments": {"a": 1, "b": 2}},
        }
    ]
    assert reply.extra_args["finish_reason"] == "tool_calls"


async def test_openai_reasoning_fields_and_think_tags():
    replies = [
        Reply(fs.openai_reply("Answer", reasoning_content="step by step")),
        Reply(fs.openai_reply("<think>hmm</think>Answer")),
    ]
    with ScriptedServer(replies) as server:
        conn = OpenAIChatModelConnection(api_base_url=server.url + "/v1", **FAST)
        first = await conn.achat(LOOP[:2], model="m")
        second = await conn.achat(LOOP[:2], model="m")
    assert (first.content, first.extra_args["reasoning"]) == ("Answer", "step by step")
    assert (second.content, second.extra_args["reasoning"]) == ("Answer", "hmm")


def test_openai_tool_message_without_id_is_a_clear_error():
    conn = OpenAIChatModelConnection(api_base_url="http://127.0.0.1:9/v1", **FAST)
    with pytest.raises(ModelCallError, match="tool_call_id"):
        conn.chat([ChatMessage(role=MessageRole.TOOL, content="5")], model="m")


def test_openai_without_key_or_url_fails_clearly(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    conn = OpenAIChatModelConnection(**FAST)
    with pytest.raises(ModelCallError, match="OPENAI_API_KEY"):
        conn.chat(LOOP[:2], model="m")


def test_openai_key_from_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-42")
    with ScriptedServer([Reply(fs.openai_reply("ok"))]) as server:
        OpenAIChatModelConnection(api_base_url=server.url + "/v1", **FAST).chat(LOOP[:2], model="m")
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env-42"


# --- Ollama -------------------------------------------------------------------------------


def test_ollama_request_options_think_format_and_history():
    with ScriptedServer([Reply(fs.ollama_reply('{"ok": true}', thinking="I think so"))]) as server:
        conn = OllamaChatModelConnection(base_url=server.url, request_timeout=5.0)
        assert conn.timeout == 5.0
        setup = _setup(
            OllamaChatModelSetup,
            conn,
            model="qwen3",
            temperature=0.1,
            num_ctx=4096,
            keep_alive="1m",
            think=True,
            tools=["add"],
            additional_kwargs={"top_k": 5},
        )
        reply = setup.chat(LOOP, output_schema=SCHEMA)
    body = server.requests[0].body
    assert body["stream"] is False and body["think"] is True and body["keep_alive"] == "1m"
    assert body["options"] == {"temperature": 0.1, "num_ctx": 4096, "top_k": 5}
    assert body["format"] == SCHEMA
    assert body["tools"][0]["function"]["name"] == "add"
    msgs = body["messages"]
    assert msgs[2]["tool_calls"] == [
        {"function": {"name": "add", "arguments": {"a": 2, "b": 3}}},
        {"function": {"name": "add", "arguments": {"a": 4, "b": 5}}},
    ]
    assert [(m["role"], m["tool_name"], m["content"]) for m in msgs[3:]] == [
        ("tool", "add", "5"),
        ("tool", "add", "9"),
    ]
    assert reply.content == '{"ok": true}'
    assert reply.extra_args["reasoning"] == "I think so"
    assert reply.extra_args["usage"] == {
        "prompt_tokens": 20,
        "completion_tokens": 5,
        "total_tokens": 25,
    }


async def test_ollama_think_tag_extraction_and_generated_call_ids():
    replies = [
        Reply(fs.ollama_reply("<think>plan</think>Done", [("add", {"a": 1, "b": 1})])),
        Reply(fs.ollama_reply("<think>plan</think>Done")),
    ]
    with ScriptedServer(replies) as server:
        conn = OllamaChatModelConnection(base_url=server.url, **FAST)
        first = await conn.achat(LOOP[:2], model="m")
        raw = await conn.achat(LOOP[:2], model="m", extract_reasoning=False)
    assert (first.content, first.extra_args["reasoning"]) == ("Done", "plan")
    call = first.tool_calls[0]
    assert call["id"].startswith("call_") and call["function"] == {
        "name": "add",
        "arguments": {"a": 1, "b": 1},
    }
    assert raw.content == "<think>plan</think>Done" and "reasoning" not in raw.extra_args


# --- Anthropic ----------------------------------------------------------------------------


def test_anthropic_request_system_tools_and_merged_tool_results():
    with ScriptedServer([Reply(fs.anthropic_reply("14", thinking="adding"))]) as server:
        conn = AnthropicChatModelConnection(base_url=server.url, api_key="sk-ant-xyz-123", **FAST)
        setup = _setup(
            AnthropicChatModelSetup,
            conn,
            model="claude-x",
            max_tokens=77,
            tools=["add"],
            structured_output="prompt",
        )
        reply = setup.chat(LOOP, output_schema=SCHEMA)
    q = server.requests[0]
    assert q.headers["x-api-key"] == "sk-ant-xyz-123"
    assert q.headers["anthropic-version"] == "2023-06-01"
    body = q.body
    assert body["model"] == "claude-x" and body["max_tokens"] == 77
    assert body["system"].startswith("You add numbers.") and '"ok"' in body["system"]
    assert body["tools"] == [
        {
            "name": "add",
            "description": "Add two numbers.",
            "input_schema": Tool.from_callable(agents.add).metadata.args_schema,
        }
    ]
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 2, "b": 3}},
        {"type": "tool_use", "id": "c2", "name": "add", "input": {"a": 4, "b": 5}},
    ]
    assert msgs[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "5"},
        {"type": "tool_result", "tool_use_id": "c2", "content": "9"},
    ]
    assert reply.content == "14" and reply.extra_args["reasoning"] == "adding"
    assert reply.extra_args["usage"] == {
        "prompt_tokens": 30,
        "completion_tokens": 9,
        "total_tokens": 39,
    }


def test_anthropic_without_key_fails_before_sending(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with ScriptedServer([Reply(fs.anthropic_reply("x"))]) as server:
        conn = AnthropicChatModelConnection(base_url=server.url, **FAST)
        with pytest.raises(ModelCallError, match="ANTHROPIC_API_KEY"):
            conn.chat(LOOP[:2], model="m")
    assert server.requests == []


# --- secrets ------------------------------------------------------------------------------


class Verdict(BaseModel):
    ok: bool


@pytest.mark.parametrize("provider", [agents.OPENAI, agents.ANTHROPIC], ids=lambda p: p.name)
def test_api_key_stays_out_of_plan_repr_errors_and_logs(provider, caplog):
    key = "sk-super-secret-value-987"
    header = provider.key_header

    def respond(request):
        sent = request.headers.get(header, "")
        if key not in sent:
            return Reply(provider.error_body(f"bad key {sent}"), status=401)
        if "echo" in json.dumps(request.body["messages"]):
            # a misbehaving proxy that echoes the credentials it got
            return Reply(provider.error_body(f"overloaded, you sent {sent}"), status=503)
        return Reply(provider.text_reply("authenticated"))

    agent = ChatAgent()
    with ScriptedServer(respond=respond) as server:
        base = {**provider.base(server.url), "api_key": key}
        agent.add_resource("conn", ResourceDescriptor(clazz=provider.connection, **base, **FAST))
        agent.add_resource(
            "model",
            ResourceDescriptor(clazz=provider.setup, connection="conn", **provider.setup_args),
        )
        plan_json = AgentPlan.from_agent(agent).model_dump_json()
        assert key not in plan_json
        caplog.set_level(logging.DEBUG)
        out = agents.run_agent(
            agent,
            [{"key": "a", "value": "hi"}, {"key": "b", "value": "echo"}],
            **{"error-handling-strategy": "ignore"},
        )
    by_key = {k: v for o in out for k, v in o.items()}
    assert by_key["a"]["content"] == "authenticated"  # the key reached the server at run time
    assert "status=503" in by_key["b"]["error"] and "***" in by_key["b"]["error"]
    assert key not in json.dumps(out)
    assert key not in caplog.text
    assert "overloaded" in caplog.text  # the retries were logged, without the key
    conn = provider.connection(**base)
    assert key not in repr(conn) and key not in str(conn)
    assert key not in conn.model_dump_json()


@pytest.mark.parametrize("header", ["api-key", "X-Api-Key", "Ocp-Apim-Subscription-Key"])
def test_a_secret_header_stays_out_of_plan_events_errors_and_logs(header, caplog, tmp_path):
    """An Azure-style key in default_headers (a hyphenated name, or a name that only the
    plan knows to be secret): the server echoes it in an error; it shows nowhere."""
    provider = agents.OPENAI
    secret = "az-header-secret-6620"

    def respond(request):
        sent = {k.lower(): v for k, v in request.headers.items()}.get(header.lower(), "")
        if sent != secret:
            return Reply(provider.error_body("missing header"), status=401)
        return Reply(provider.error_body(f"overloaded, you sent {header}: {sent}"), status=503)

    agent = ChatAgent()
    with ScriptedServer(respond=respond) as server:
        base = {**provider.base(server.url), "api_key": "sk-unused-1234"}
        headers = {header: secret} if header != "Ocp-Apim-Subscription-Key" else {}
        if not headers:  # not a secret name: known to the plan as a SecretStr value
            from pydantic import SecretStr

            base["default_headers"] = {header: SecretStr(secret)}
        else:
            base["default_headers"] = headers
        agent.add_resource("conn", ResourceDescriptor(clazz=provider.connection, **base, **FAST))
        agent.add_resource(
            "model",
            ResourceDescriptor(clazz=provider.setup, connection="conn", **provider.setup_args),
        )
        caplog.set_level(logging.DEBUG)
        config = {
            "error-handling-strategy": "ignore",
            "event-log.enabled": True,
            "event-log.writer": "thread",
            "baseLogDir": str(tmp_path),
        }
        plan_json = AgentPlan.from_agent(agent, config).model_dump_json()
        out = agents.run_agent(agent, [{"key": "a", "value": "hi"}], **config)
    assert secret not in plan_json
    assert "status=503" in json.dumps(out) and secret not in json.dumps(out)
    assert secret not in caplog.text
    assert secret not in "".join(p.read_text() for p in tmp_path.glob("events-*"))
