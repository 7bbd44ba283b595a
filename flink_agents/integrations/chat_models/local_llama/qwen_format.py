"""Qwen2.5 chat format: rendering a chat into a prompt, parsing tool calls from a reply.

Pure Python (no ``llama_cpp``), so it is unit tested without the model. The rendering follows
the chat template embedded in the Qwen2.5 GGUF files (ChatML with ``<|im_start|>`` /
``<|im_end|>``, tools described in the system prompt inside ``<tools></tools>``, calls as
``<tool_call>{"name": ..., "arguments": ...}</tool_call>``), with one deliberate change: tool
results go back as a plain user turn that asks for the final answer. The 0.5B model answers
reliably only that way; with the template's ``<tool_response>`` turn it often calls the same
tool again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.errors import ModelCallError

#: The system prompt of the Qwen template when the chat has none.
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

#: The user turn that carries tool results asks for this.
DEFAULT_TOOL_RESULT_INSTRUCTION = "The tool calls are done. Now give your final answer."

#: Tokens that end an assistant turn.
STOP_STRINGS = ("<|im_end|>", "<|endoftext|>")

_TOOLS_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)

_TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCE_RE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def _tojson(value: Any) -> str:
    # The template's ``tojson`` as Hugging Face renders it: compact separators, no ASCII escapes.
    return json.dumps(value, ensure_ascii=False)


def _turn(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}<|im_end|>\n"


def _assistant_with_calls(message: ChatMessage) -> str:
    out = "<|im_start|>assistant"
    if message.content:
        out += "\n" + message.content
    for call in message.tool_calls:
        function = call.get("function", call)
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                pass  # rendered as the JSON string it is
        out += f'\n<tool_call>\n{{"name": "{function.get("name", "")}", "arguments": '
        out += f"{_tojson(arguments)}}}\n</tool_call>"
    return out + "<|im_end|>\n"


def _tool_results_turn(results: list[ChatMessage], instruction: str, request: str | None) -> str:
    parts = []
    for message in results:
        name = message.extra_args.get("name")
        label = f"Result of tool {name}" if name else "Tool result"
        parts.append(f"{label}:\n{message.content}")
    text = "\n\n".join(parts)
    if instruction:
        text += "\n\n" + instruction.replace("{request}", request or "")
    return _turn("user", text)


def render_prompt(
    messages: Sequence[ChatMessage],
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    tool_result_instruction: str = DEFAULT_TOOL_RESULT_INSTRUCTION,
    final_answer: bool = False,
    add_generation_prompt: bool = True,
) -> str:
    """Render a chat in the Qwen2.5 chat format.

    Args:
        messages: the chat. A leading system message becomes the system prompt.
        tools: OpenAI-style tool entries (``{"type": "function", "function": {...}}``),
            described in the system prompt.
        tool_result_instruction: appended to the user turn that carries tool results;
            ``{request}`` in it is replaced by the last user message before the results.
        final_answer: render for the final answer after tool results: the tools are not
            described and assistant turns that only call tools are left out, so the chat
            reads as the request followed by a user turn with the results. (With the tool
            calls in view, the 0.5B model tends to repeat them instead of answering.)
        add_generation_prompt: end with an open assistant turn.

    Returns:
        The prompt text, with the special tokens written out.
    """
    messages = list(messages)
    system: str | None = None
    if messages and messages[0].role == MessageRole.SYSTEM:
        system = messages.pop(0).content
    header = system if system is not None else DEFAULT_SYSTEM
    if tools and not final_answer:
        header += _TOOLS_HEADER
        header += "".join("\n" + _tojson(t) for t in tools)
        header += _TOOLS_FOOTER
    out = [_turn("system", header)]
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.role == MessageRole.TOOL:
            start = i
            results = []
            while i < len(messages) and messages[i].role == MessageRole.TOOL:
                results.append(messages[i])
                i += 1
            request = next(
                (m.content for m in reversed(messages[:start]) if m.role == MessageRole.USER),
                None,
            )
            out.append(_tool_results_turn(results, tool_result_instruction, request))
            continue
        if message.role == MessageRole.ASSISTANT and message.tool_calls:
            if final_answer and not message.content:
                i += 1
                continue
            out.append(_assistant_with_calls(message))
        else:
            out.append(_turn(message.role.value, message.content))
        i += 1
    if add_generation_prompt:
        out.append("<|im_start|>assistant\n")
    return "".join(out)


def _malformed(strict: bool, text: str, why: str) -> None:
    if strict:
        snippet = text if len(text) <= 300 else text[:300] + "..."
        raise ModelCallError(
            f"the model wrote a malformed tool call ({why}): {snippet!r}", provider="local-llama"
        )


def _call_from_json(obj: Any) -> tuple[str, dict[str, Any]] | str:
    """``(name, arguments)`` from a decoded tool call, or why it is not one."""
    if not isinstance(obj, dict):
        return "not a JSON object"
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return "no function name"
    arguments = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return "arguments are not JSON"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return "arguments are not a JSON object"
    return name, arguments


def parse_reply(
    text: str,
    *,
    tool_names: Sequence[str] = (),
    first_call_index: int = 0,
    strict: bool = True,
) -> tuple[str, list[dict[str, Any]]]:
    """Split a reply into its text and its tool calls.

    ``<tool_call>{...}</tool_call>`` blocks become tool calls (a last block cut off before
    ``</tool_call>`` is accepted if its JSON is complete). When tools were offered, a reply
    that is nothing but ``{"name": <offered tool>, "arguments": {...}}`` (the model forgot
    the tags) is a tool call as well.

    Args:
        text: the model's reply.
        tool_names: the names of the tools offered.
        first_call_index: number of the first call, for the ids ``call_<n>``.
        strict: raise on a malformed block; otherwise the whole reply is returned as text
            without tool calls.

    Returns:
        ``(content, tool_calls)``; ``tool_calls`` in our format
        ``{"id": "call_<n>", "type": "function", "function": {"name", "arguments"}}``.

    Raises:
        ModelCallError: a ``<tool_call>`` block is malformed and ``strict`` is set.
    """
    found: list[tuple[str, dict[str, Any]]] = []
    if "<tool_call>" in text:
        for match in _TOOL_CALL_RE.finditer(text):
            body = match.group(1).strip()
            fenced = _FENCE_RE.match(body)
            if fenced:
                body = fenced.group(1)
            try:
                decoded = json.loads(body)
            except json.JSONDecodeError as exc:
                _malformed(strict, text, f"invalid JSON: {exc.msg}")
                return text.strip(), []
            call = _call_from_json(decoded)
            if isinstance(call, str):
                _malformed(strict, text, call)
                return text.strip(), []
            found.append(call)
        content = _TOOL_CALL_RE.sub("", text).strip()
    else:
        content = text.strip()
        if tool_names:
            bare = _FENCE_RE.match(content)
            candidate = bare.group(1) if bare else content
            try:
                decoded = json.loads(candidate)
            except json.JSONDecodeError:
                decoded = None
            if isinstance(decoded, dict) and set(decoded) <= {"name", "arguments"}:
                call = _call_from_json(decoded)
                if not isinstance(call, str) and call[0] in tool_names:
                    found.append(call)
                    content = ""
    calls = [
        {
            "id": f"call_{first_call_index + n}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        for n, (name, arguments) in enumerate(found)
    ]
    return content, calls
