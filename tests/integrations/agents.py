"""Agents, tools and provider descriptions shared by the integration tests."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import ErrorEvent, InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.integrations.chat_models.anthropic.anthropic_chat_model import (
    AnthropicChatModelConnection,
    AnthropicChatModelSetup,
)
from flink_agents.integrations.chat_models.azure.azure_openai_chat_model import (
    AzureOpenAIChatModelConnection,
    AzureOpenAIChatModelSetup,
)
from flink_agents.integrations.chat_models.bedrock.bedrock_chat_model import (
    BedrockChatModelConnection,
    BedrockChatModelSetup,
)
from flink_agents.integrations.chat_models.gemini.gemini_chat_model import (
    GeminiChatModelConnection,
    GeminiChatModelSetup,
)
from flink_agents.integrations.chat_models.ollama_chat_model import (
    OllamaChatModelConnection,
    OllamaChatModelSetup,
)
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.integrations.chat_models.tongyi_chat_model import (
    TongyiChatModelConnection,
    TongyiChatModelSetup,
)
from flink_agents.integrations.chat_models.vllm.vllm_chat_model import (
    VLLMChatModelConnection,
    VLLMChatModelSetup,
)
from flink_agents.testing import servers as fs
from flink_agents.testing.servers import cloud_formats as cs

#: Quick retries. The timeout bounds a whole attempt, a cold SDK client included (boto3
#: loading its service models took over 2 s on a busy machine): not tighter than this.
FAST = {"retry_initial_backoff": 0.01, "retry_max_backoff": 0.05, "timeout": 10.0}


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


def divide(a: float, b: float) -> float:
    """Divide a by b.

    Args:
        a: dividend.
        b: divisor.
    """
    return a / b


class ChatAgent(Agent):
    """Sends the input to the chat model setup ``model``; outputs the final answer."""

    @action(InputEvent)
    @staticmethod
    def ask(event: InputEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            ChatRequestEvent(
                model="model", messages=[ChatMessage(role=MessageRole.USER, content=event.input)]
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        ctx.send_event(
            OutputEvent(
                output={"content": event.response.content, "extra": event.response.extra_args}
            )
        )

    @action(ErrorEvent)
    @staticmethod
    def failed(event: ErrorEvent, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output={"error": event.error, "type": event.error_type}))


def run_agent(agent: Agent, inputs: list[Any], **config: Any) -> list[dict[str, Any]]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    for k, v in config.items():
        env.get_config().set_str(k, v)
    out = env.from_list(inputs).apply(agent).to_list()
    env.execute()
    return out


@dataclass
class Provider:
    """How to reach one provider's fake server and read its requests."""

    name: str
    connection: type
    setup: type
    path: str
    base: Callable[[str], dict[str, Any]]
    text_reply: Callable[[str], Any]
    tool_reply: Callable[[str, str, dict[str, Any]], Any]
    setup_args: dict[str, Any]
    error_body: Callable[[str], Any]
    #: tool results sent back in a request: [(call id or name, content)]
    tool_results: Callable[[Any], list[tuple[str, str]]]
    key_header: str | None
    #: the id the stand-in gives the tool call of the tool loop test (ids the provider
    #: does not send are made up: then its name)
    call_id: str = "call_abc123"
    #: whether the assistant's tool call is sent back with that id
    replays_call_id: bool = True
    #: the conversation part of a request body
    messages_of: Callable[[Any], Any] = lambda body: body["messages"]
    #: the model a request names (in its body or its path)
    model_of: Callable[[Any], str] = lambda request: request.body["model"]
    #: the provider's throttling answer
    throttle: Callable[[], fs.Reply] | None = None
    #: checks a request's credentials (besides ``key_header``)
    check_auth: Callable[[Any], None] | None = None
    #: the module of the provider's SDK (its tests skip when it is not installed)
    requires: str | None = None
    #: whether a reply of the wrong shape is quoted in the error (an SDK that parses the
    #: reply into its own types drops what it does not know)
    echoes_body: bool = True
    #: a reply carrying the JSON answer of a structured-output request
    json_reply: Callable[[dict[str, Any]], Any] | None = None
    #: where a request carries the output schema (its JSON text must name the fields)
    schema_sent: Callable[[Any], Any] | None = None
    #: the connection argument holding the secret
    secret_field: str = "api_key"

    def connection_descriptor(self, url: str, **kw: Any) -> ResourceDescriptor:
        return ResourceDescriptor(clazz=self.connection, **self.base(url), **{**FAST, **kw})

    def make_connection(self, url: str, **kw: Any) -> Any:
        return self.connection(**self.base(url), **{**FAST, **kw})


def _openai_results(body: Any) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _ollama_results(body: Any) -> list[tuple[str, str]]:
    return [(m["tool_name"], m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _anthropic_results(body: Any) -> list[tuple[str, str]]:
    return [
        (b["tool_use_id"], b["content"])
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]


OPENAI = Provider(
    name="openai",
    connection=OpenAIChatModelConnection,
    setup=OpenAIChatModelSetup,
    path="/v1/chat/completions",
    base=lambda url: {"api_base_url": url + "/v1", "api_key": "sk-test-openai-0123456789"},
    text_reply=lambda text: fs.openai_reply(text),
    tool_reply=lambda cid, name, args: fs.openai_reply(None, [(cid, name, args)]),
    setup_args={"model": "gpt-test"},
    error_body=lambda msg: {"error": {"message": msg, "type": "server_error"}},
    tool_results=_openai_results,
    key_header="authorization",
)
OLLAMA = Provider(
    name="ollama",
    connection=OllamaChatModelConnection,
    setup=OllamaChatModelSetup,
    path="/api/chat",
    base=lambda url: {"base_url": url},
    text_reply=lambda text: fs.ollama_reply(text),
    tool_reply=lambda cid, name, args: fs.ollama_reply("", [(name, args)]),
    setup_args={"model": "qwen3"},
    error_body=lambda msg: {"error": msg},
    tool_results=_ollama_results,
    key_header=None,
)
ANTHROPIC = Provider(
    name="anthropic",
    connection=AnthropicChatModelConnection,
    setup=AnthropicChatModelSetup,
    path="/v1/messages",
    base=lambda url: {"base_url": url, "api_key": "sk-ant-test-0123456789"},
    text_reply=lambda text: fs.anthropic_reply(text),
    tool_reply=lambda cid, name, args: fs.anthropic_reply("Let me add.", [(cid, name, args)]),
    setup_args={"model": "claude-test"},
    error_body=lambda msg: {"type": "error", "error": {"type": "api_error", "message": msg}},
    tool_results=_anthropic_results,
    key_header="x-api-key",
)
OPENAI = dataclasses.replace(OPENAI, throttle=cs.openai_throttle)
ANTHROPIC = dataclasses.replace(
    ANTHROPIC,
    call_id="toolu_01XYZ",
    throttle=lambda: fs.Reply(
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
        status=429,
        headers={"retry-after": "0"},
    ),
)
OLLAMA = dataclasses.replace(
    OLLAMA,
    call_id="add",
    replays_call_id=False,
    throttle=lambda: fs.Reply(
        {"error": "server busy, please try again.  maximum pending requests exceeded"},
        status=503,
    ),
)

AZURE_VERSION = "2024-10-21"
AZURE = Provider(
    name="azure_openai",
    connection=AzureOpenAIChatModelConnection,
    setup=AzureOpenAIChatModelSetup,
    path=f"/openai/deployments/gpt-dep/chat/completions?api-version={AZURE_VERSION}",
    base=lambda url: {
        "azure_endpoint": url,
        "api_version": AZURE_VERSION,
        "api_key": "azure-key-0123456789",
    },
    text_reply=lambda text: fs.openai_reply(text),
    tool_reply=lambda cid, name, args: fs.openai_reply(None, [(cid, name, args)]),
    setup_args={"model": "gpt-dep", "model_of_azure_deployment": "gpt-4o"},
    error_body=lambda msg: cs.openai_error(msg),
    tool_results=_openai_results,
    key_header="api-key",
    throttle=cs.openai_throttle,
)
VLLM = Provider(
    name="vllm",
    connection=VLLMChatModelConnection,
    setup=VLLMChatModelSetup,
    path="/v1/chat/completions",
    base=lambda url: {"api_base_url": url + "/v1", "api_key": "vllm-key-0123456789"},
    text_reply=lambda text: fs.openai_reply(text),
    tool_reply=lambda cid, name, args: fs.openai_reply(None, [(cid, name, args)]),
    setup_args={"model": "Qwen/Qwen2.5-7B-Instruct", "top_k": 20},
    error_body=lambda msg: cs.openai_error(msg),
    tool_results=_openai_results,
    key_header="authorization",
    throttle=cs.openai_throttle,
)
OPENAI_RESPONSES = Provider(
    name="openai",
    connection=OpenAIChatModelConnection,
    setup=OpenAIChatModelSetup,
    path="/v1/responses",
    base=lambda url: {
        "api_base_url": url + "/v1",
        "api_key": "sk-test-openai-0123456789",
        "api": "responses",
    },
    text_reply=lambda text: cs.responses_reply(text),
    tool_reply=lambda cid, name, args: cs.responses_reply(None, [(cid, name, args)]),
    setup_args={"model": "gpt-test"},
    error_body=lambda msg: cs.openai_error(msg),
    tool_results=cs.responses_results,
    key_header="authorization",
    messages_of=lambda body: body["input"],
    throttle=cs.openai_throttle,
    echoes_body=False,
)
TONGYI = Provider(
    name="tongyi",
    connection=TongyiChatModelConnection,
    setup=TongyiChatModelSetup,
    path="/api/v1/services/aigc/text-generation/generation",
    base=lambda url: {"base_url": url + "/api/v1", "api_key": "sk-dashscope-0123456789"},
    text_reply=lambda text: cs.dashscope_reply(text),
    tool_reply=lambda cid, name, args: cs.dashscope_reply("", [(cid, name, args)]),
    setup_args={"model": "qwen-plus"},
    error_body=lambda msg: cs.dashscope_error(msg),
    tool_results=cs.dashscope_results,
    key_header="authorization",
    messages_of=lambda body: body["input"]["messages"],
    throttle=cs.dashscope_throttle,
    requires="dashscope",
    echoes_body=False,
)
BEDROCK_SECRET = "bedrock-secret-0123456789"


def _bedrock_auth(request: Any) -> None:
    credential = cs.verify_sigv4(request, BEDROCK_SECRET)
    assert credential["key"] == "AKIDTEST0123" and credential["service"] == "bedrock"
    assert credential["region"] == "eu-central-1"


BEDROCK = Provider(
    name="bedrock",
    connection=BedrockChatModelConnection,
    setup=BedrockChatModelSetup,
    path="/model/claude-test/converse",
    base=lambda url: {
        "endpoint_url": url,
        "region": "eu-central-1",
        "aws_access_key_id": "AKIDTEST0123",
        "aws_secret_access_key": BEDROCK_SECRET,
    },
    text_reply=lambda text: cs.converse_reply(text),
    tool_reply=lambda cid, name, args: cs.converse_reply("Let me add.", [(cid, name, args)]),
    setup_args={"model": "claude-test"},
    error_body=lambda msg: cs.bedrock_error(msg),
    tool_results=cs.converse_results,
    key_header=None,
    call_id="tooluse_Q1w2e3",
    model_of=lambda request: request.path.split("/")[2],
    throttle=cs.bedrock_throttle,
    check_auth=_bedrock_auth,
    requires="boto3",
    echoes_body=False,
)
GEMINI = Provider(
    name="gemini",
    connection=GeminiChatModelConnection,
    setup=GeminiChatModelSetup,
    path="/v1beta/models/gemini-test:generateContent",
    base=lambda url: {
        "base_url": url,
        "api_version": "v1beta",
        "api_key": "AIza-test-0123456789",
    },
    text_reply=lambda text: cs.gemini_reply(text),
    tool_reply=lambda cid, name, args: cs.gemini_reply(None, [(name, args)]),
    setup_args={"model": "gemini-test"},
    error_body=lambda msg: cs.gemini_error(msg),
    tool_results=cs.gemini_results,
    key_header="x-goog-api-key",
    call_id="add",
    replays_call_id=False,
    messages_of=lambda body: body["contents"],
    model_of=lambda request: request.path.split("/models/")[1].split(":")[0],
    throttle=cs.gemini_throttle,
    requires="google.genai",
    echoes_body=False,
)
GEMINI_VERTEX = dataclasses.replace(
    GEMINI,
    path="/v1beta1/projects/proj-1/locations/europe-west4/publishers/google/models/"
    "gemini-test:generateContent",
    base=lambda url: {
        "base_url": url,
        "vertex_ai": True,
        "project": "proj-1",
        "location": "europe-west4",
        "access_token": "ya29.vertex-token-0123456789",
    },
    key_header=None,
    check_auth=lambda request: _bearer(request, "ya29.vertex-token-0123456789"),
)


def _bearer(request: Any, token: str) -> None:
    assert request.headers["authorization"] == f"Bearer {token}"


OPENAI = dataclasses.replace(
    OPENAI,
    json_reply=lambda value: fs.openai_reply(json.dumps(value)),
    schema_sent=lambda body: body["response_format"]["json_schema"]["schema"],
)
OLLAMA = dataclasses.replace(
    OLLAMA,
    json_reply=lambda value: fs.ollama_reply(json.dumps(value)),
    schema_sent=lambda body: body["format"],
)
ANTHROPIC = dataclasses.replace(
    ANTHROPIC,
    json_reply=lambda value: fs.anthropic_reply(None, [("toolu_9", "structured_output", value)]),
    schema_sent=lambda body: (
        body["tool_choice"],
        [t["input_schema"] for t in body["tools"] if t["name"] == "structured_output"],
    ),
)
AZURE = dataclasses.replace(AZURE, json_reply=OPENAI.json_reply, schema_sent=OPENAI.schema_sent)
VLLM = dataclasses.replace(VLLM, json_reply=OPENAI.json_reply, schema_sent=OPENAI.schema_sent)
OPENAI_RESPONSES = dataclasses.replace(
    OPENAI_RESPONSES,
    json_reply=lambda value: cs.responses_reply(json.dumps(value)),
    schema_sent=lambda body: body["text"]["format"]["schema"],
)
TONGYI = dataclasses.replace(
    TONGYI,
    json_reply=lambda value: cs.dashscope_reply(json.dumps(value)),
    schema_sent=lambda body: (
        body["parameters"]["response_format"] == {"type": "json_object"}
        and body["input"]["messages"][0]["content"]
    ),
)
BEDROCK = dataclasses.replace(
    BEDROCK,
    json_reply=lambda value: cs.converse_reply(None, [("tu_9", "structured_output", value)]),
    schema_sent=lambda body: (
        body["toolConfig"]["toolChoice"],
        body["toolConfig"]["tools"][-1]["toolSpec"],
    ),
    secret_field="aws_secret_access_key",
)
GEMINI = dataclasses.replace(
    GEMINI,
    json_reply=lambda value: cs.gemini_reply(json.dumps(value)),
    schema_sent=lambda body: (
        body["generationConfig"]["responseMimeType"] == "application/json"
        and body["generationConfig"]["responseJsonSchema"]
    ),
)
GEMINI_VERTEX = dataclasses.replace(
    GEMINI_VERTEX,
    json_reply=GEMINI.json_reply,
    schema_sent=GEMINI.schema_sent,
    secret_field="access_token",
)


#: Providers of the generic tests; the cloud ones in their own id (``openai-responses``...).
PROVIDERS = [OPENAI, OLLAMA, ANTHROPIC]
CLOUD_PROVIDERS = {
    "azure_openai": AZURE,
    "vllm": VLLM,
    "openai-responses": OPENAI_RESPONSES,
    "tongyi": TONGYI,
    "bedrock": BEDROCK,
    "gemini": GEMINI,
    "gemini-vertex": GEMINI_VERTEX,
}
ALL_PROVIDERS = {"openai": OPENAI, "ollama": OLLAMA, "anthropic": ANTHROPIC, **CLOUD_PROVIDERS}


def request_text(body: Any) -> str:
    return json.dumps(body)
