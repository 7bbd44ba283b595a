"""Which tools a model may call: only those its setup offered for that very request.

A model's reply is input from outside (it may have read a prompt injection), so a tool call
it asks for is checked before anything is looked up or run: a name the model was not
offered for the request that produced the reply is answered as an unknown tool, counted in
``numOfUnauthorizedToolCalls``, logged, marked ``error_codes[call_id] ==
"unauthorized_tool"`` on the :class:`ToolResponseEvent` (the event log shows it), and the
tool never runs.

What was offered travels with the reply:

- without model interceptors, a model is offered its setup's tools, which the plan fixes
  (names of tool resources, of MCP tools, and their metadata names): a run replayed after a
  restore finds the same names;
- with model interceptors (which may add or drop tools per call) or ``tools_in_text`` (no
  tool offered), the model call (``calls.call_model_offering``) puts the names of the tools
  it sent into the reply **inside** the call's durable record. A run replayed after a
  restore reads them back from the record, so it decides the same way even if the
  interceptors would choose otherwise now;
- the chat action passes them on as the ``offered_tools`` field of the
  :class:`ToolRequestEvent` (an extra field, so the event's JSON stays upstream's);
- text ReAct (``ReActAgent(tool_calling="text")``) sends the names it listed in its prompt;
- a :class:`ToolRequestEvent` without ``offered_tools`` (sent by an action of your own, or
  replayed from a record written before this check existed) may call the tools of the chat
  model setup it names, nothing else.

Sub-agents: a sub-agent called as a tool (an ``AgentTool``) is one more tool of the caller's
setup and is authorized like any other; its own model calls go through its own plan's chat
action and this same check. A host that runs tool calls for a sub-agent builds its
:class:`ToolGrant` with :meth:`ToolGrant.of` from what that sub-agent's model was offered.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.events.tool_event import ToolRequestEvent
from flink_agents.api.resource import ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import ResourceError, UnknownToolError

log = logging.getLogger(__name__)

#: The :class:`ToolRequestEvent` field (extra) naming the tools the model was offered.
OFFERED_TOOLS = "offered_tools"
#: Where a model call's reply carries the offered names inside its durable record (taken
#: out again before anyone else sees the reply).
_REPLY_KEY = "_offered_tools"
#: ``ToolResponseEvent.error_codes`` value of a call of a tool the model was not offered.
UNAUTHORIZED_TOOL = "unauthorized_tool"
#: The agent metric counting such calls.
UNAUTHORIZED_COUNTER = "numOfUnauthorizedToolCalls"
#: Longest tool name quoted back (in the answer and the log): it comes from the model.
_NAME_LIMIT = 80


def with_offered(reply: Any, tools: list[Tool] | None) -> Any:
    """``reply`` carrying the names of ``tools`` (what the model was offered)."""
    if not isinstance(reply, ChatMessage):
        return reply
    names = [t.name for t in tools or []]
    return reply.model_copy(update={"extra_args": {**reply.extra_args, _REPLY_KEY: names}})


def take_offered(reply: ChatMessage) -> tuple[ChatMessage, list[str] | None]:
    """``(reply without the annotation, offered names)``; None when the reply carries none
    (the setup's own offer, or a record written before the annotation existed)."""
    names = reply.extra_args.get(_REPLY_KEY)
    if names is None:
        return reply, None
    extra = {k: v for k, v in reply.extra_args.items() if k != _REPLY_KEY}
    return reply.model_copy(update={"extra_args": extra}), list(names)


def setup_tool_names(setup: Any) -> list[str]:
    """The names a chat model setup offers its model (its tools' metadata names)."""
    if not getattr(setup, "tools", None) and not getattr(setup, "skills", None):
        return []  # (with skills: load_skill, and bash when commands are allowed)
    return [t.name for t in setup.get_tools()]


@dataclass(frozen=True)
class ToolGrant:
    """The tools one request's model may call.

    Attributes:
        names: the names it may call (what it was offered).
        tools: the granted tools resolved so far, by name.
    """

    names: frozenset[str]
    tools: dict[str, Tool] = field(default_factory=dict)

    @classmethod
    def of(cls, names: Any, tools: dict[str, Tool] | None = None) -> ToolGrant:
        """A grant of ``names`` (``tools``: those already resolved)."""
        return cls(frozenset(str(n) for n in names), dict(tools or {}))

    def allows(self, name: str) -> bool:
        """Whether the model may call ``name``."""
        return name in self.names

    def tool(self, name: str, ctx: RunnerContext) -> Tool:
        """The granted tool ``name``: the setup's tool of that name, else the tool resource
        (a tool an interceptor offered, or one a request of your own grants by name).

        Raises:
            UnknownToolError: ``name`` is not granted, or granted but not found.
        """
        if name not in self.names:
            raise UnknownToolError(f"unknown tool {_quoted(name)}")
        tool = self.tools.get(name)
        if tool is not None:
            return tool
        try:
            found = ctx.get_resource(name, ResourceType.TOOL)
        except ResourceError as exc:
            raise UnknownToolError(f"unknown tool {name!r}: {exc.message}") from None
        return found  # type: ignore[return-value]


def grant_for(event: ToolRequestEvent, ctx: RunnerContext) -> ToolGrant:
    """What the model of ``event`` may call: its ``offered_tools``, else the tools of the
    setup it names (nothing when that setup cannot be found)."""
    tools: dict[str, Tool] = {}
    try:
        setup = ctx.get_resource(event.model, ResourceType.CHAT_MODEL)
        # The model calls tools by the names it was shown (their metadata names), which may
        # differ from the resource names the setup lists them under.
        tools = {t.name: t for t in setup.get_tools()}  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - no setup (or its tools fail): resources by name below
        tools = {}
    offered = (event.model_extra or {}).get(OFFERED_TOOLS)
    if offered is None:
        return ToolGrant.of(tools, tools)
    return ToolGrant.of(offered, tools)


def refusal(event: ToolRequestEvent, ctx: RunnerContext, grant: ToolGrant, name: str) -> str:
    """Count and log a call of ``name``, which ``grant`` does not allow; the answer the
    model gets (the same as for a tool that does not exist)."""
    ctx.agent_metric_group.get_counter(UNAUTHORIZED_COUNTER).inc()
    log.warning(
        "model %r called tool %s, which it was not offered for this request (offered: %s); "
        "answered as an unknown tool, not run [key=%r, event=%s]",
        event.model,
        _quoted(name),
        sorted(grant.names) or "none",
        ctx.key,
        event.id,
    )
    offered = ", ".join(sorted(grant.names)) or "none"
    return f"Error: unknown tool {_quoted(name)}; the tools you can call are: {offered}"


def _quoted(name: Any) -> str:
    text = repr(name)
    return text if len(text) <= _NAME_LIMIT else text[:_NAME_LIMIT] + "...'"
