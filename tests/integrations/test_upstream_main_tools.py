"""Upstream main's tool and provider fixes: provider refusals kept, numeric tool parameters
as JSON Schema numbers, tool schemas without ``required`` accepted."""

from __future__ import annotations

from typing import Any

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.tools.tool import Tool, ToolMetadata
from flink_agents.integrations.chat_models.ollama_chat_model import OllamaChatModelConnection
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
)
from flink_agents.testing.servers import Reply, ScriptedServer


def _openai_reply(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }


def test_an_openai_refusal_is_kept_in_extra_args_even_when_empty():
    replies = iter(
        [
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            {"role": "assistant", "content": None, "refusal": ""},
            {"role": "assistant", "content": "fine"},
        ]
    )
    with ScriptedServer(respond=lambda request: Reply(_openai_reply(next(replies)))) as server:
        conn = OpenAIChatModelConnection(
            api_key="k", api_base_url=f"{server.url}/v1", max_retries=0
        )
        question = [ChatMessage(role=MessageRole.USER, content="?")]
        refused = conn.chat(question, model="gpt-4o-mini")
        empty = conn.chat(question, model="gpt-4o-mini")
        plain = conn.chat(question, model="gpt-4o-mini")
    assert refused.extra_args["refusal"] == "I can't help with that." and refused.content == ""
    assert empty.extra_args["refusal"] == ""
    assert "refusal" not in plain.extra_args and plain.content == "fine"


def scale(count: int, factor: float, big: int = 10**12, label: str = "x") -> str:
    """Scale a count.

    Args:
        count: how many.
        factor: by how much.
        big: a long number.
        label: a name.
    """
    return f"{label}{count * factor}"


def test_numeric_tool_parameters_have_json_schema_number_types():
    schema = Tool.from_callable(scale).metadata.args_schema
    types = {name: prop.get("type") for name, prop in schema["properties"].items()}
    assert types == {"count": "integer", "factor": "number", "big": "integer", "label": "string"}
    assert schema["required"] == ["count", "factor"]


def test_a_tool_schema_without_required_reaches_the_model():
    """A tool whose schema has no ``required`` key (Java and MCP tools may omit it) is
    offered as it is."""
    metadata = ToolMetadata(
        name="lookup",
        description="Look an order up.",
        args_schema={"type": "object", "properties": {"order_id": {"type": "string"}}},
    )

    class Lookup(Tool):
        def call(self, **kwargs: Any) -> Any:
            return kwargs

    seen: list[Any] = []

    def respond(request):
        seen.append(request.body)
        return Reply(
            {
                "model": "m",
                "message": {"role": "assistant", "content": "ok"},
                "done": True,
                "prompt_eval_count": 1,
                "eval_count": 1,
            }
        )

    with ScriptedServer(respond=respond) as server:
        conn = OllamaChatModelConnection(base_url=server.url)
        reply = conn.chat([ChatMessage(content="?")], [Lookup(metadata=metadata)], model="m")
    assert reply.content == "ok"
    (tool,) = seen[0]["tools"]
    assert tool["function"]["parameters"] == metadata.args_schema
    assert "required" not in tool["function"]["parameters"]
