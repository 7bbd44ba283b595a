"""Model and tool interceptors: code around every model call and every tool call.

An interceptor is a chain-of-responsibility link. It receives the request and ``call_next``
and returns the response::

    async def redact_emails(request: ModelCallRequest, call_next: CallNext) -> ChatMessage:
        request.messages = [m.model_copy(update={"content": EMAIL.sub("<email>", m.content)})
                            for m in request.messages]
        return await call_next(request)

It may change the request, answer without calling ``call_next`` (a cache, a guardrail that
refuses), change the response (redact, validate) or handle an error ``call_next`` raised.
A plain ``def`` interceptor that only changes the request may ``return call_next(request)``
(the awaitable is awaited for it).

Interceptors run in declaration order, the first declared outermost: environment-wide ones
(``env.add_model_interceptor``) first, then the agent's (``@model_interceptor`` methods,
``agent.add_model_interceptor``, ``ReActAgent(model_interceptors=[...])``). They are
module-level functions, static methods or classes (a class is instantiated once per task
slot with no arguments and its :meth:`ModelInterceptor.intercept` is called); the plan
stores them by reference like actions (by value when the job script defines them).

The model or tool call's durable record wraps the whole chain: what the chain returns is
recorded, and a run replayed after a restore gets it back without running any interceptor
again. An interceptor that raises fails the action with an
:class:`~flink_agents.errors.InterceptorError` naming it, handled by the error strategy;
errors raised by ``call_next`` (the model's, the tool's) pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.tools.tool import Tool

__all__ = [
    "CallNext",
    "ModelCallRequest",
    "ModelInterceptor",
    "ToolCallRequest",
    "ToolInterceptor",
]


@dataclass
class ModelCallRequest:
    """One model call, as the interceptors see it (change its fields freely).

    Attributes:
        model: the name of the chat model setup resource.
        messages: the messages sent (the setup's prompt already applied).
        tools: the tools offered to the model (empty: none).
        options: keyword arguments for the connection's ``achat`` (model name, sampling
            options, ``output_schema``).
        key: the key of the input being processed.
    """

    model: str
    messages: list[ChatMessage]
    tools: list[Tool] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    key: Any = None


@dataclass
class ToolCallRequest:
    """One tool call, as the interceptors see it.

    Attributes:
        tool_name: the name the model called the tool by.
        arguments: the arguments (a dict; change them freely).
        call_id: the id of the model's tool call.
        tool: the tool that will be called (an interceptor may swap it; None makes the last
            link raise :class:`~flink_agents.errors.UnknownToolError`).
        key: the key of the input being processed.
    """

    tool_name: str
    arguments: dict[str, Any]
    call_id: str = ""
    tool: Tool | None = None
    key: Any = None


#: What an interceptor calls to go on: the next interceptor, or the model/tool itself.
CallNext = Callable[[Any], Awaitable[Any]]


class ModelInterceptor:
    """Base class of class-style model interceptors (instantiated with no arguments)."""

    async def intercept(self, request: ModelCallRequest, call_next: CallNext) -> ChatMessage:
        """Return the model's reply for ``request`` (default: ``call_next(request)``)."""
        return await call_next(request)


class ToolInterceptor:
    """Base class of class-style tool interceptors (instantiated with no arguments)."""

    async def intercept(self, request: ToolCallRequest, call_next: CallNext) -> Any:
        """Return the tool's result for ``request`` (default: ``call_next(request)``)."""
        return await call_next(request)
