"""Helpers shared by the chat model integrations to map our messages and tool calls."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from flink_agents.api.chat_message import ChatMessage, MessageRole

_THINK = re.compile(r"<think>(.*?)</think>", re.S)


def call_arguments(call: dict[str, Any]) -> dict[str, Any]:
    """The arguments of one of our tool calls, as a dict (JSON text is parsed)."""
    args = (call.get("function") or {}).get("arguments", {})
    if isinstance(args, str):
        try:
            parsed = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return {"_raw": args}
        return parsed if isinstance(parsed, dict) else {"_value": parsed}
    return dict(args or {})


def call_name(call: dict[str, Any]) -> str:
    """The tool name of one of our tool calls."""
    return str((call.get("function") or {}).get("name", ""))


def make_call(call_id: str | None, name: str, arguments: Any) -> dict[str, Any]:
    """A tool call in our canonical form; JSON text arguments are parsed when they can be
    (text that is not JSON is kept, so the tool action can report it to the model)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            pass
    return {
        "id": call_id or f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def tool_call_id(message: ChatMessage) -> str:
    """The id of the tool call a tool-result message answers.

    Raises:
        ValueError: the message has no ``extra_args["tool_call_id"]``.
    """
    call_id = message.extra_args.get("tool_call_id")
    if not call_id:
        raise ValueError(
            "a tool message needs extra_args['tool_call_id'] (the id of the tool call it "
            f"answers); got extra_args={sorted(message.extra_args)}"
        )
    return str(call_id)


def split_reasoning(content: str) -> tuple[str, str | None]:
    """``content`` without ``<think>...</think>`` blocks, and the text of those blocks."""
    thoughts = [t.strip() for t in _THINK.findall(content)]
    if not thoughts:
        return content, None
    return _THINK.sub("", content).strip(), "\n".join(thoughts)


def schema_instruction(schema: dict[str, Any]) -> str:
    """A system instruction asking for JSON that follows ``schema`` (for providers
    without a native structured-output mode)."""
    return (
        "Answer with a single JSON object and nothing else. It must follow this JSON "
        f"schema:\n{json.dumps(schema)}"
    )


def assistant_reply(
    content: str | None,
    tool_calls: list[dict[str, Any]],
    extra: dict[str, Any],
) -> ChatMessage:
    """The reply message, dropping empty ``extra_args`` values."""
    return ChatMessage(
        role=MessageRole.ASSISTANT,
        content=content or "",
        tool_calls=tool_calls,
        extra_args={k: v for k, v in extra.items() if v is not None},
    )


#: Name of the tool whose arguments are the answer, for providers whose structured output
#: is "tool-forced JSON" (Anthropic, Bedrock): the model is made to call it, and its input
#: becomes the reply's JSON content.
OUTPUT_TOOL = "structured_output"
OUTPUT_TOOL_DESCRIPTION = (
    "Give your final answer by calling this tool; its arguments are the answer and must "
    "follow its schema."
)


def merge_turns(turns: list[dict[str, Any]], role: str, blocks: list[Any]) -> None:
    """Append ``blocks`` as a turn of ``role``, merged into the last turn when it has the same
    role (APIs that require alternating user/assistant turns)."""
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": list(blocks)})


def answer_from_output_tool(
    content: str, calls: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    """``(content, tool calls)`` with a call of :data:`OUTPUT_TOOL` turned into the JSON
    content of a final answer (other calls are dropped with it: the model has answered)."""
    for call in calls:
        if call_name(call) == OUTPUT_TOOL:
            return json.dumps(call_arguments(call)), []
    return content, calls
