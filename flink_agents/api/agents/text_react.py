"""Text ReAct: the tool loop for models without native tool calling.

The model is shown the tools in its system prompt and answers in the ReAct format::

    Thought: I need to add the numbers.
    Action: add
    Action Input: {"a": 2, "b": 3}

The agent runs the tool (through the tool interceptors, durably, by a
:class:`~flink_agents.api.events.tool_event.ToolRequestEvent` like native tool calls) and
sends the result back as ``Observation: ...``, until the model writes ``Answer: ...``
(``Final Answer:`` too). The parser tolerates code fences, text after the action input, a
model that writes the observation itself (cut off), and JSON with single quotes. A reply that
does not parse goes back to the model as an observation saying what is wrong, and counts as an
iteration; at ``max_iterations`` the run fails with an
:class:`~flink_agents.errors.OutputSchemaError` naming the last reply.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from flink_agents.api.tools.tool import Tool

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.S)
_ANSWER = re.compile(r"^\s*(?:Final\s+)?Answer\s*:\s*(.*)", re.S | re.I | re.M)
_ACTION = re.compile(r"^\s*Action\s*:\s*(.+?)\s*$", re.I | re.M)
_INPUT = re.compile(r"^\s*Action\s+Input\s*:\s*(.*)", re.S | re.I | re.M)
_THOUGHT = re.compile(
    r"^\s*Thought\s*:\s*(.*?)(?=^\s*(?:Action|Answer|Final\s+Answer)\s*:|\Z)", re.S | re.I | re.M
)
_OBSERVATION = re.compile(r"^\s*Observation\s*:", re.I | re.M)


@dataclass
class ReActStep:
    """One parsed reply: a tool call (``action`` set) or a final ``answer``."""

    thought: str = ""
    action: str | None = None
    action_input: dict[str, Any] | None = None
    answer: str | None = None


def tools_prompt(tools: list[Tool]) -> str:
    """The system prompt that describes ``tools`` and the format to answer in."""
    lines = []
    for t in tools:
        meta = t.metadata
        lines.append(
            f"- {meta.name}: {meta.description.strip()}\n"
            f"  arguments (JSON schema): {json.dumps(meta.args_schema)}"
        )
    listing = "\n".join(lines) or "(no tools)"
    names = ", ".join(t.metadata.name for t in tools) or "none"
    return (
        "You answer questions step by step and may use these tools:\n"
        f"{listing}\n\n"
        "To use a tool, reply exactly in this format, then stop and wait:\n"
        "Thought: <your reasoning>\n"
        f"Action: <the tool name only, one of: {names}>\n"
        'Action Input: <the arguments as a JSON object, e.g. {"a": 1}>\n\n'
        "You will then get 'Observation: <the tool result>'. Never write the observation "
        "yourself. As soon as you know the answer, reply:\n"
        "Thought: <your reasoning>\n"
        "Answer: <the final answer>"
    )


#: Added to each observation: small models otherwise tend to call tools again.
OBSERVATION_HINT = "If this answers the question, reply now with 'Answer: <the final answer>'."


def observation(text: str) -> str:
    """The user message that gives the model a tool's result."""
    return f"Observation: {text}\n{OBSERVATION_HINT}"


def match_tool(name: str, tool_names: list[str]) -> str:
    """The offered tool ``name`` means: itself, a case-insensitive match, or the one tool
    whose name appears in it as a word (small models write "Action: multiply 17 by 23");
    else ``name`` unchanged (the tool call then fails with an unknown-tool observation)."""
    if name in tool_names:
        return name
    lowered = {t.lower(): t for t in tool_names}
    if name.lower() in lowered:
        return lowered[name.lower()]
    found = [t for t in tool_names if re.search(rf"\b{re.escape(t)}\b", name, re.I)]
    return found[0] if len(found) == 1 else name


def _loads(text: str) -> Any:
    """JSON, or a Python-style literal (single quotes, True/None)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError(f"Action Input is not a JSON object: {text!r}") from None


def _json_object(text: str) -> dict[str, Any]:
    """The first balanced ``{...}`` of ``text`` as a dict."""
    start = text.find("{")
    if start < 0:
        if not text.strip():
            return {}
        raise ValueError(f"Action Input is not a JSON object: {text.strip()!r}")
    depth, quote, escaped = 0, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                value = _loads(text[start : i + 1])
                if not isinstance(value, dict):
                    break
                return value
    raise ValueError(f"Action Input is not a complete JSON object: {text[start:].strip()!r}")


def parse_react(reply: str, tool_names: list[str] | None = None) -> ReActStep:
    """Parse one model reply (``tool_names``: the offered tools, to match loose names).

    Raises:
        ValueError: the reply has neither an answer nor an action (the message says what
            to write instead).
    """
    text = reply.strip()
    fenced = _FENCE.search(text)
    if fenced and ("Action" in fenced.group(1) or "Answer" in fenced.group(1)):
        text = fenced.group(1).strip()
    else:
        text = _FENCE.sub(lambda m: m.group(1), text)
    # A model that goes on to write the observation itself: what follows is invented.
    observation = _OBSERVATION.search(text)
    if observation:
        text = text[: observation.start()]
    thought_match = _THOUGHT.search(text)
    thought = thought_match.group(1).strip() if thought_match else ""
    action = _ACTION.search(text)
    answer = _ANSWER.search(text)
    if action and (answer is None or action.start() < answer.start()):
        name = action.group(1).strip().strip("`'\"")
        if tool_names:
            name = match_tool(name, tool_names)
        given = _INPUT.search(text, action.end())
        arguments = _json_object(given.group(1)) if given else {}
        return ReActStep(thought=thought, action=name, action_input=arguments)
    if answer:
        return ReActStep(thought=thought, answer=answer.group(1).strip())
    raise ValueError(
        "the reply has neither 'Action:' with 'Action Input:' nor 'Answer:'; reply in the "
        "format described"
    )
