"""Request details of the cloud providers that the generic suite does not look at: Azure's
api-version fallback and Entra token, vLLM's defaults and guided decoding, the Responses
API's request shape, Anthropic's native structured output, Gemini's thoughts and
schema-with-tools rule, Bedrock's Converse request and Cohere embeddings."""

from __future__ import annotations

import json

import pytest

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.tools.tool import Tool
from flink_agents.integrations.chat_models.anthropic.anthropic_chat_model import (
    AnthropicChatModelConnection,
)
from flink_agents.integrations.chat_models.azure.azure_openai_chat_model import (
    AzureOpenAIChatModelConnection,
)
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
)
from flink_agents.integrations.chat_models.vllm.vllm_chat_model import (
    DEFAULT_VLLM_API_BASE_URL,
    VLLMChatModelConnection,
    VLLMChatModelSetup,
)
from flink_agents.testing.servers import Reply, ScriptedServer, openai_reply
from flink_agents.testing.servers import cloud_formats as cs
from tests.integrations import agents
from tests.integrations.agents import FAST

SCHEMA = {"title": "Verdict", "type": "object", "properties": {"ok": {"type": "boolean"}}}
TOOL = Tool.from_callable(agents.add)
LOOP = [
    ChatMessage(role=MessageRole.SYSTEM, content="You add."),
    ChatMessage(role=MessageRole.USER, content="2+3?"),
    ChatMessage(
        role=MessageRole.ASSISTANT,
        content="",
        tool_calls=[{"id": "c1", "function": {"name": "add", "arguments": {"a": 2, "b": 3}}}],
    ),
    ChatMessage(role=MessageRole.TOOL, content="5", extra_args={"tool_call_id": "c1"}),
]


def test_azure_old_api_version_falls_back_to_json_mode_and_entra_token():
    with ScriptedServer([Reply(openai_reply('{"ok": true}'))]) as server:
        conn = AzureOpenAIChatModelConnection(
            azure_endpoint=server.url,
            api_version="2024-02-01",
            azure_ad_token="entra-token-0123456789",
            **FAST,
        )
        reply = conn.chat(LOOP[:2], model="dep", output_schema=SCHEMA)
    request = server.requests[0]
    assert request.path == "/openai/deployments/dep/chat/completions?api-version=2024-02-01"
    assert request.headers["authorization"] == "Bearer entra-token-0123456789"
    assert request.body["response_format"] == {"type": "json_object"}
    assert '"ok"' in request.body["messages"][0]["content"]  # the schema as an instruction
    assert json.loads(reply.content) == {"ok": True}


def test_vllm_defaults_sampling_options_and_guided_json():
    conn = VLLMChatModelConnection(api_base_url="  ", api_key="")
    assert conn.api_base_url == DEFAULT_VLLM_API_BASE_URL
    assert conn.api_key is not None and conn.api_key.get_secret_value() == "EMPTY"
    with pytest.raises(ValueError, match="model"):
        VLLMChatModelSetup(connection="c")
    with ScriptedServer([Reply(openai_reply('{"ok": false}'))]) as server:
        conn = VLLMChatModelConnection(api_base_url=server.url + "/v1", **FAST)
        setup = VLLMChatModelSetup(
            connection="c",
            model="q",
            top_k=5,
            min_p=0.1,
            repetition_penalty=1.1,
            structured_output="guided_json",
            get_resource=lambda n, t: conn,
        )
        setup.chat(LOOP[:2], output_schema=SCHEMA)
    body = server.requests[0].body
    assert (body["top_k"], body["min_p"], body["repetition_penalty"]) == (5, 0.1, 1.1)
    assert body["guided_json"] == SCHEMA and "response_format" not in body


def test_responses_api_request_shape_and_reasoning():
    reply = cs.responses_reply("done", reasoning="thought about it")
    with ScriptedServer([Reply(reply)]) as server:
        conn = OpenAIChatModelConnection(
            api_base_url=server.url + "/v1", api_key="sk-0123456789", api="responses", **FAST
        )
        answer = conn.chat(LOOP, [TOOL], model="gpt-x", max_tokens=99, output_schema=SCHEMA)
    body = server.requests[0].body
    assert body["instructions"] == "You add." and body["max_output_tokens"] == 99
    assert body["input"][0] == {"role": "user", "content": "2+3?"}
    assert body["input"][1]["type"] == "function_call" and body["input"][1]["call_id"] == "c1"
    assert body["input"][2] == {"type": "function_call_output", "call_id": "c1", "output": "5"}
    assert body["tools"][0]["name"] == "add" and body["tools"][0]["type"] == "function"
    assert body["text"]["format"]["type"] == "json_schema"
    assert answer.content == "done" and answer.extra_args["reasoning"] == "thought about it"
    assert answer.extra_args["usage"]["total_tokens"] == 18


def test_anthropic_native_structured_output_uses_the_beta_output_format():
    with ScriptedServer([Reply(agents.fs.anthropic_reply('{"ok": true}'))]) as server:
        conn = AnthropicChatModelConnection(base_url=server.url, api_key="sk-ant-0123", **FAST)
        reply = conn.chat(LOOP[:2], model="m", output_schema=SCHEMA, structured_output="native")
    request = server.requests[0]
    assert request.headers["anthropic-beta"] == "structured-outputs-2025-11-13"
    assert request.body["output_format"] == {"type": "json_schema", "schema": SCHEMA}
    assert "tools" not in request.body and json.loads(reply.content) == {"ok": True}


def test_gemini_thoughts_usage_and_schema_with_tools():
    pytest.importorskip("google.genai")
    from flink_agents.integrations.chat_models.gemini.gemini_chat_model import (
        GeminiChatModelConnection,
    )

    reply = cs.gemini_reply("5", thought="adding", prompt_tokens=7, candidate_tokens=2)
    with ScriptedServer([Reply(reply)]) as server:
        conn = GeminiChatModelConnection(
            base_url=server.url, api_version="v1beta", api_key="AIza-0123456789", **FAST
        )
        answer = conn.chat(LOOP, [TOOL], model="g", output_schema=SCHEMA)
    body = server.requests[0].body
    assert "responseJsonSchema" not in body.get("generationConfig", {})  # tools: instruction
    assert '"ok"' in body["systemInstruction"]["parts"][0]["text"]
    roles = [c["role"] for c in body["contents"]]
    assert roles == ["user", "model", "user"]
    assert body["contents"][2]["parts"][0]["functionResponse"]["response"] == {"result": "5"}
    assert answer.extra_args["reasoning"] == "adding" and answer.content == "5"
    assert answer.extra_args["usage"] == {
        "prompt_tokens": 7,
        "completion_tokens": 2,
        "total_tokens": 9,
    }


def test_bedrock_converse_request_shape():
    pytest.importorskip("boto3")
    from flink_agents.integrations.chat_models.bedrock.bedrock_chat_model import (
        BedrockChatModelConnection,
    )

    with ScriptedServer([Reply(cs.converse_reply("5"))]) as server:
        conn = BedrockChatModelConnection(
            endpoint_url=server.url,
            region="us-west-2",
            aws_access_key_id="AKIDX",
            aws_secret_access_key="secret-x-0123",
            **FAST,
        )
        conn.chat(LOOP, [TOOL], model="m", max_tokens=50, temperature=0.2, top_k=40)
    request = server.requests[0]
    cs.verify_sigv4(request, "secret-x-0123")
    body = request.body
    assert body["system"] == [{"text": "You add."}]
    assert body["inferenceConfig"] == {"maxTokens": 50, "temperature": 0.2}
    assert body["additionalModelRequestFields"] == {"top_k": 40}
    assert body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "add"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"][0]["toolResult"] == {
        "toolUseId": "c1",
        "content": [{"text": "5"}],
    }
