"""Amazon Bedrock through boto3's Converse API (``pip install 'flink-agents-py[bedrock]'``;
class names as Apache Flink Agents' Java integration).

Example::

    agent.add_resource("bedrock", ResourceDescriptor(
        clazz=BedrockChatModelConnection, region="us-east-1"))
    agent.add_resource("model", ResourceDescriptor(
        clazz=BedrockChatModelSetup, connection="bedrock",
        model="us.anthropic.claude-sonnet-4-20250514-v1:0", tools=["add"]))

Credentials: see :mod:`flink_agents.integrations._bedrock` (explicit keys, a profile, or
boto3's chain); secrets stay out of the plan, ``repr``, logs and errors.

Mapping: system messages become ``system`` blocks; tool calls ``toolUse`` blocks (their ids
kept across the loop); tool results ``toolResult`` blocks of one user turn; consecutive turns
of one role are merged (Converse needs alternating roles). Converse has no JSON mode, so an
output schema is *tool-forced JSON* by default: a tool whose input schema is the output
schema is offered and required (``toolChoice``), and its input becomes the reply's JSON
content (``structured_output="prompt"``: the schema as an instruction only). Usage is
``inputTokens`` / ``outputTokens``; ``ThrottlingException`` is retried.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import ModelCallError
from flink_agents.integrations._bedrock import BedrockClient
from flink_agents.integrations._common import snippet, usage
from flink_agents.integrations.chat_models._calls import ChatCall, RetriedChat
from flink_agents.integrations.chat_models._messages import (
    OUTPUT_TOOL,
    OUTPUT_TOOL_DESCRIPTION,
    answer_from_output_tool,
    assistant_reply,
    call_arguments,
    call_name,
    make_call,
    merge_turns,
    schema_instruction,
    tool_call_id,
)

StructuredOutput = Literal["tool", "prompt", "off"]

#: Setup options that go into ``inferenceConfig`` (ours -> Converse's names).
_INFERENCE = {
    "max_tokens": "maxTokens",
    "temperature": "temperature",
    "top_p": "topP",
    "stop_sequences": "stopSequences",
}


def to_converse_messages(
    messages: Sequence[ChatMessage],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Our messages as ``(system blocks, Converse messages)``."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for m in messages:
        if m.role is MessageRole.SYSTEM:
            system.append({"text": m.content})
        elif m.role is MessageRole.TOOL:
            result: dict[str, Any] = {
                "toolUseId": tool_call_id(m),
                "content": [{"text": m.content or "(empty)"}],
            }
            if m.extra_args.get("is_error"):
                result["status"] = "error"
            merge_turns(turns, "user", [{"toolResult": result}])
        elif m.role is MessageRole.ASSISTANT:
            blocks: list[dict[str, Any]] = []
            if m.content:
                blocks.append({"text": m.content})
            for c in m.tool_calls:
                blocks.append(
                    {
                        "toolUse": {
                            "toolUseId": str(c.get("id")),
                            "name": call_name(c),
                            "input": call_arguments(c),
                        }
                    }
                )
            if blocks:
                merge_turns(turns, "assistant", blocks)
        else:
            merge_turns(turns, "user", [{"text": m.content or " "}])
    return system, turns


def to_tool_spec(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A Converse ``toolSpec``."""
    return {"toolSpec": {"name": name, "description": description, "inputSchema": {"json": schema}}}


class BedrockChatModelConnection(RetriedChat, BaseChatModelConnection, BedrockClient):
    """Client of Amazon Bedrock's Converse API.

    Attributes:
        region: the AWS region (default: ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else
            ``us-east-1``).
        profile_name: a profile of the shared AWS config files.
        aws_access_key_id: an access key id (with ``aws_secret_access_key``).
        aws_secret_access_key: its secret.
        aws_session_token: a session token of temporary credentials.
        endpoint_url: another endpoint (VPC endpoint, proxy).
        model: the default model id or inference profile (a setup's ``model`` wins).
        timeout: seconds one attempt may take.
        max_retries: further attempts after throttling, 5xx, timeouts, connection errors.
        max_concurrency: calls this connection runs at once per task slot.
    """

    model: str | None = None

    def _request(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], str, bool]:
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        model = kwargs.pop("model", None) or self.model
        if not model:
            raise ModelCallError(
                "no model id: set model= on the chat model setup (or the connection)",
                provider=self.PROVIDER,
            )
        schema = kwargs.pop("output_schema", None)
        mode: StructuredOutput = kwargs.pop("structured_output", "tool")
        try:
            system, turns = to_converse_messages(messages)
        except ValueError as exc:
            raise ModelCallError(str(exc), provider=self.PROVIDER, model=model) from None
        specs = [
            to_tool_spec(t.metadata.name, t.metadata.description, t.metadata.args_schema)
            for t in tools or []
        ]
        forced = False
        if schema is not None and mode == "tool":
            specs.append(to_tool_spec(OUTPUT_TOOL, OUTPUT_TOOL_DESCRIPTION, schema))
            forced = True
        elif schema is not None and mode == "prompt":
            system.append({"text": schema_instruction(schema)})
        request: dict[str, Any] = {"modelId": model, "messages": turns}
        if system:
            request["system"] = system
        if specs:
            config: dict[str, Any] = {"tools": specs}
            if forced:
                # Only the output tool: it must be called. With the agent's tools too: some
                # tool must be called (the output tool ends the loop).
                config["toolChoice"] = {"tool": {"name": OUTPUT_TOOL}} if not tools else {"any": {}}
            request["toolConfig"] = config
        inference = {wire: kwargs.pop(ours) for ours, wire in _INFERENCE.items() if ours in kwargs}
        if inference:
            request["inferenceConfig"] = inference
        extra = dict(kwargs.pop("additional_model_request_fields", None) or {})
        extra.update(kwargs)  # anything else is a model-specific field (top_k...)
        if extra:
            request["additionalModelRequestFields"] = extra
        return request, str(model), forced

    def _parse(self, reply: Any, model: str, forced: bool) -> ChatMessage:
        try:
            blocks = reply["output"]["message"]["content"]
            if not isinstance(blocks, list):
                raise TypeError
        except (KeyError, TypeError):
            raise ModelCallError(
                f"malformed reply: no output message in {snippet(str(reply))}",
                provider=self.PROVIDER,
                model=model,
            ) from None
        texts, thoughts, calls = [], [], []
        for block in blocks:
            if "text" in block:
                texts.append(block["text"])
            elif "toolUse" in block:
                use = block["toolUse"]
                calls.append(make_call(use.get("toolUseId"), use.get("name", ""), use.get("input")))
            elif "reasoningContent" in block:
                text = (block["reasoningContent"].get("reasoningText") or {}).get("text")
                if text:
                    thoughts.append(text)
        content = "".join(texts)
        if forced:
            content, calls = answer_from_output_tool(content, calls)
        u = reply.get("usage") or {}
        return assistant_reply(
            content,
            calls,
            {
                "model": model,
                "finish_reason": reply.get("stopReason"),
                "usage": usage(u.get("inputTokens"), u.get("outputTokens")) if u else None,
                "reasoning": "\n".join(thoughts) or None,
            },
        )

    def _chat_call(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        """A ``Converse`` call; see :class:`BedrockChatModelSetup` for the options."""
        request, model, forced = self._request(messages, tools, kwargs)
        return ChatCall(
            model=model,
            attempt=lambda: self._attempt("converse", request),
            usage_of=_converse_usage,
            parse=lambda reply: self._parse(reply, model, forced),
        )

    def close(self) -> None:
        """Close the client's connection pool."""
        BedrockClient.close(self)


def _converse_usage(reply: Any) -> tuple[Any, Any] | None:
    u = reply.get("usage") if isinstance(reply, dict) else None
    return (u.get("inputTokens"), u.get("outputTokens")) if isinstance(u, dict) else None


class BedrockChatModelSetup(BaseChatModelSetup):
    """How an agent uses a Bedrock model.

    Attributes:
        connection: name of the :class:`BedrockChatModelConnection` resource.
        model: the model id or inference profile
            (``us.anthropic.claude-sonnet-4-20250514-v1:0``, ``amazon.nova-pro-v1:0``...).
        temperature: sampling temperature.
        max_tokens: most tokens to generate.
        top_p: nucleus sampling.
        stop_sequences: texts that end the answer.
        structured_output: ``"tool"`` (tool-forced JSON, default), ``"prompt"`` or ``"off"``.
        additional_model_request_fields: model-specific fields (``{"top_k": 50}``).
    """

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop_sequences: list[str] | None = None
    structured_output: StructuredOutput = "tool"
    additional_model_request_fields: dict[str, Any] = Field(default_factory=dict)

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_p": self.top_p,
            "stop_sequences": self.stop_sequences,
            "structured_output": self.structured_output,
            "additional_model_request_fields": self.additional_model_request_fields or None,
        }
