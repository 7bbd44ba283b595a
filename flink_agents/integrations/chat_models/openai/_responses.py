"""The OpenAI Responses API (``POST /v1/responses``) as a mode of the OpenAI connection
(``OpenAIChatModelConnection(api="responses")``).

Mapping: system messages become ``instructions``; user and assistant texts become input
messages; an assistant's tool calls become ``function_call`` items and tool results
``function_call_output`` items, matched by ``call_id``. Tools are function tools; an output
schema is ``text.format`` of type ``json_schema``. Replies: ``message`` items give the text,
``function_call`` items the tool calls, ``reasoning`` items their summary; usage is
``input_tokens`` / ``output_tokens``. Requests are stateless (``store`` is not set by us;
nothing refers to ``previous_response_id``): every call carries the whole conversation, as
with Chat Completions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.tools.tool import Tool
from flink_agents.integrations.chat_models._messages import tool_call_id

#: Options of the Responses API taken by name; any other goes to ``extra_body``.
RESPONSES_PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "max_output_tokens",
        "max_tool_calls",
        "parallel_tool_calls",
        "tool_choice",
        "reasoning",
        "metadata",
        "store",
        "service_tier",
        "truncation",
        "user",
        "include",
        "top_logprobs",
        "text",
        "instructions",
        "safety_identifier",
        "prompt_cache_key",
    }
)
#: Chat Completions option names with another name here.
RENAMED = {"max_tokens": "max_output_tokens", "max_completion_tokens": "max_output_tokens"}


def to_responses_input(
    messages: Sequence[ChatMessage],
) -> tuple[str | None, list[dict[str, Any]]]:
    """Our messages as ``(instructions, input items)``.

    Raises:
        ValueError: a tool message without ``extra_args["tool_call_id"]``.
    """
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role is MessageRole.SYSTEM:
            system.append(m.content)
        elif m.role is MessageRole.TOOL:
            items.append(
                {"type": "function_call_output", "call_id": tool_call_id(m), "output": m.content}
            )
        elif m.role is MessageRole.ASSISTANT:
            if m.content:
                items.append({"role": "assistant", "content": m.content})
            for c in m.tool_calls:
                fn = c.get("function") or {}
                args = fn.get("arguments", {})
                items.append(
                    {
                        "type": "function_call",
                        "call_id": str(c.get("id")),
                        "name": fn.get("name", ""),
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    }
                )
        else:
            items.append({"role": "user", "content": m.content})
    return ("\n\n".join(system) if system else None), items


def to_responses_tool(tool: Tool) -> dict[str, Any]:
    """A function tool in the Responses API format (flat, not nested in ``function``)."""
    return {
        "type": "function",
        "name": tool.metadata.name,
        "description": tool.metadata.description,
        "parameters": tool.metadata.args_schema,
        "strict": False,
    }


def text_format(schema: dict[str, Any] | None, mode: str) -> dict[str, Any] | None:
    """The ``text`` option asking for JSON following ``schema`` (None: plain text)."""
    if schema is None or mode == "off":
        return None
    if mode == "json_object":
        return {"format": {"type": "json_object"}}
    name = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in str(schema.get("title", "")))
    return {
        "format": {
            "type": "json_schema",
            "name": name or "output",
            "schema": schema,
            "strict": False,
        }
    }


def read_output(response: Any) -> tuple[str, list[tuple[str, str, Any]], str | None]:
    """``(text, [(call id, name, arguments)], reasoning summary)`` of a response.

    Raises:
        ValueError: the response has no ``output`` list.
    """
    output = getattr(response, "output", None)
    if not isinstance(output, list):
        raise ValueError("the reply has no output items")
    texts: list[str] = []
    calls: list[tuple[str, str, Any]] = []
    thoughts: list[str] = []
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "message":
            for part in getattr(item, "content", None) or []:
                if getattr(part, "type", None) == "output_text":
                    texts.append(part.text)
                elif getattr(part, "type", None) == "refusal":
                    texts.append(getattr(part, "refusal", ""))
        elif kind == "function_call":
            calls.append((item.call_id, item.name, item.arguments))
        elif kind == "reasoning":
            for part in getattr(item, "summary", None) or []:
                thoughts.append(getattr(part, "text", ""))
    return "".join(texts), calls, ("\n".join(t for t in thoughts if t) or None)
