"""The one place a model is called and the one place a tool is called.

The interceptor chain (:mod:`flink_agents.api.interceptors`) and the real call run inside one
``ctx.durable_execute_async``, so a run replayed after a restore calls neither again. Checks
that must precede every tool call go right before :func:`call_tool` (the tool action
authorizes the call first: :mod:`.tool_authorization`).

A model call also records, inside its durable record, which tools the model was offered
(:func:`call_model_offering`), and sends no plan secret (:mod:`.secret_text`). Deadlines:
a model call is bounded by the setup's ``timeout``, else ``model.timeout``, else the
connection's own deadline (the built-in providers' ``total_timeout``), else
:data:`~flink_agents.api.timeouts.DEFAULT_MODEL_DEADLINE`; a tool call by the tool's
``timeout``, else ``tool.timeout``.
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.interceptors import ModelCallRequest, ToolCallRequest
from flink_agents.api.resource import ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.timeouts import DEFAULT_MODEL_DEADLINE, TimeoutOptions, bounded
from flink_agents.api.tools.agent_tool import AgentTool
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import UnknownToolError
from flink_agents.plan.actions.secret_text import masked_arguments, masked_messages
from flink_agents.plan.actions.tool_authorization import take_offered, with_offered
from flink_agents.plan.behaviours import run_chain


def _chain(ctx: RunnerContext, kind: str) -> list[tuple[str, Any]]:
    plan = getattr(ctx, "agent_plan", None)
    # Checked first: the plain field is cheap, the resolved chain is behind a private attr.
    if plan is None or not plan.interceptors:
        return []
    return plan.interceptor_chain(kind)


def hooks_at(ctx: RunnerContext, point: str) -> list[tuple[str, Any]]:
    plan = getattr(ctx, "agent_plan", None)
    if plan is None or not plan.hooks:
        return []
    return plan.hooks_at(point)


async def call_model(
    ctx: RunnerContext,
    model: str,
    messages: list[ChatMessage],
    *,
    prompt_args: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    offer_tools: bool = True,
) -> ChatMessage:
    """Call chat model setup ``model`` through the model interceptors, durably: the one
    place a model is called."""
    reply, _ = await call_model_offering(
        ctx, model, messages, prompt_args=prompt_args, options=options, offer_tools=offer_tools
    )
    return reply


async def call_model_offering(
    ctx: RunnerContext,
    model: str,
    messages: list[ChatMessage],
    *,
    prompt_args: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    offer_tools: bool = True,
) -> tuple[ChatMessage, list[str] | None]:
    """:func:`call_model`, also returning the names of the tools the model was offered when
    model interceptors may have changed them (recorded in the call's durable record); None
    when the offer is the setup's own (see :mod:`.tool_authorization`)."""
    setup, timeout, bounded_achat = _model_of(ctx, model)
    # The plan read once (secret_masker and _chain, written out: every model call asks).
    plan = getattr(ctx, "agent_plan", None)
    masker = getattr(plan, "masker", None)
    if masker:
        mask = masker.mask
        messages = masked_messages(messages, mask)
        prompt_args = masked_arguments(prompt_args, mask)
    chain = plan.interceptor_chain("model") if plan is not None and plan.interceptors else []
    # Token budgets and the response cache (runtime/governance.py), when configured.
    guard = getattr(ctx, "model_guard", None)
    if guard is not None:
        await guard.before_call(model)
    reply: ChatMessage
    if not chain and offer_tools:
        # The setup's own call, as before interceptors existed. Passed only when given: a
        # custom setup whose achat predates prompt_args still works.
        if prompt_args:
            options = {**(options or {}), "prompt_args": prompt_args}
        # Without interceptors the offer is the setup's tools, fixed by the plan: the reply
        # needs not carry it (the chat action asks the setup when the model calls tools).
        achat = bounded_achat
        if guard is not None:
            achat = guard.cached(achat, setup, messages, options or {})
        reply = await ctx.durable_execute_async(achat, messages, **(options or {}))
    else:
        # Bound to the setup (the same function and record signature): the runtime then
        # sees a model call of this setup, for its metrics (tokens by action and model).
        reply = await ctx.durable_execute_async(
            types.MethodType(_intercepted_model_call, setup),
            chain,
            ModelCallRequest(
                model=model, messages=messages, options=dict(options or {}), key=ctx.key
            ),
            prompt_args or {},
            offer_tools,
            timeout,
        )
    if guard is not None:
        guard.after_call(reply)
    return take_offered(reply)


async def _intercepted_model_call(
    setup: Any,
    chain: list[tuple[str, Any]],
    request: ModelCallRequest,
    prompt_args: dict[str, Any],
    offer_tools: bool,
    timeout: float | None = None,
) -> ChatMessage:
    """What the durable record of an intercepted model call wraps: request built, chain
    run, connection called (bounded by ``timeout``: an interceptor sees the timeout). The
    reply carries the names of the tools the connection was given (the chain may change
    ``request.tools``), or, answered by the chain alone, those the request holds."""
    if offer_tools and (setup.tools or getattr(setup, "skills", None)):
        # Looking tools up may create resources (an MCP server connects): off the loop.
        request.tools = await asyncio.to_thread(setup.get_tools)
    request.messages = setup.prepare_messages(request.messages, prompt_args)
    request.options = {**setup.model_kwargs, **request.options}
    sent: list[list[Tool]] = []

    async def terminal(req: ModelCallRequest) -> ChatMessage:
        achat = bounded(setup.get_connection().achat, timeout, "chat model", request.model)
        sent.append(list(req.tools or []))
        reply: ChatMessage = await achat(req.messages, req.tools or None, **req.options)
        return reply

    reply: ChatMessage = await run_chain("model", chain, request, terminal)
    if not isinstance(reply, ChatMessage):
        # A cache or guardrail may answer with text.
        reply = ChatMessage(role=MessageRole.ASSISTANT, content=str(reply))
    return with_offered(reply, sent[-1] if sent else request.tools)


async def call_tool(
    ctx: RunnerContext, tool: Tool, name: str, arguments: dict[str, Any], call_id: str
) -> Any:
    """Call ``tool`` through the tool interceptors, durably: the one place a tool is called
    (checks that must happen before any tool runs go right before this call). A sub-agent
    (:class:`AgentTool`) runs through :func:`call_agent_tool`."""
    chain = _chain(ctx, "tool")
    if isinstance(tool, AgentTool):
        return await call_agent_tool(ctx, tool, name, arguments, call_id, chain)
    timeout = call_timeout(tool, ctx, TimeoutOptions.TOOL_TIMEOUT)
    if not chain:
        return await ctx.durable_execute_async(
            bounded(tool.acall, timeout, "tool", name), **arguments
        )
    request = ToolCallRequest(
        tool_name=name, arguments=arguments, call_id=call_id, tool=tool, key=ctx.key
    )
    return await ctx.durable_execute_async(_intercepted_tool_call, chain, request, timeout)


async def _intercepted_tool_call(
    chain: list[tuple[str, Any]], request: ToolCallRequest, timeout: float | None = None
) -> Any:
    """What the durable record of an intercepted tool call wraps (the tool's own call
    bounded by ``timeout``)."""

    async def terminal(req: ToolCallRequest) -> Any:
        if req.tool is None:
            raise UnknownToolError(f"unknown tool {req.tool_name!r}")
        return await bounded(req.tool.acall, timeout, "tool", req.tool_name)(**req.arguments)

    return await run_chain("tool", chain, request, terminal)


async def call_agent_tool(
    ctx: RunnerContext,
    tool: AgentTool,
    name: str,
    arguments: dict[str, Any],
    call_id: str,
    chain: list[tuple[str, Any]],
) -> Any:
    """Run the sub-agent of ``tool`` on a model's tool call, through the tool interceptors.

    Not one durable call: the sub-agent's own model and tool calls are (its memory changes
    must be made again by a replay), so the interceptors run again on a replay, around a
    sub-agent whose calls are answered from the log. Bounded by the tool's own ``timeout``
    only (``tool.timeout`` is for one tool call, a sub-agent makes several)."""
    if not chain:
        return await ctx.call_agent(tool, tool.input_of(arguments))

    async def terminal(req: ToolCallRequest) -> Any:
        target = req.tool
        if target is None:
            raise UnknownToolError(f"unknown tool {req.tool_name!r}")
        if not isinstance(target, AgentTool):  # an interceptor put a plain tool in its place
            return await ctx.durable_execute_async(target.acall, **req.arguments)
        return await ctx.call_agent(target, target.input_of(req.arguments))

    request = ToolCallRequest(
        tool_name=name, arguments=arguments, call_id=call_id, tool=tool, key=ctx.key
    )
    return await run_chain("tool", chain, request, terminal)


def _model_of(ctx: RunnerContext, model: str) -> tuple[Any, float | None, Any]:
    """``(setup, deadline, setup.achat bounded by it)`` of chat model setup ``model``:
    resolved once per runner and name (``ctx.model_calls``: the runner's resources and
    configuration do not change while it runs; every model call asked for all three) and
    again when the setup's class got a new ``achat`` meanwhile (a test patching it)."""
    cache = getattr(ctx, "model_calls", None)
    if cache is not None:
        entry = cache.get(model)
        if entry is not None and type(entry[0]).achat is entry[1]:
            return entry[0], entry[2], entry[3]
    setup: Any = ctx.get_resource(model, ResourceType.CHAT_MODEL)
    timeout = model_timeout(setup, ctx)
    achat = _bounded_achat(setup, timeout, model)
    if cache is not None:
        cache[model] = (setup, type(setup).achat, timeout, achat)
    return setup, timeout, achat


def call_timeout(resource: Any, ctx: RunnerContext, option: Any) -> float | None:
    """The resource's own ``timeout``, else the option's value (None: no timeout)."""
    own = getattr(resource, "timeout", None)
    return own if own is not None else ctx.config.get(option)


def _bounded_achat(setup: Any, timeout: float | None, model: str) -> Any:
    """``setup.achat`` bounded by ``timeout``, made once per setup, deadline and name (a
    wrapper per call was measurable on the hot path; it holds no state of a call)."""
    method = type(setup).achat  # a class patched meanwhile gets a new wrapper
    cached = _BOUNDED_ACHAT.get(id(setup))
    if (
        cached is not None
        and cached[0] is setup
        and cached[1] is method
        and cached[2] == timeout
        and cached[3] == model
    ):
        return cached[4]
    achat = bounded(setup.achat, timeout, "chat model", model)
    if len(_BOUNDED_ACHAT) >= 256:
        _BOUNDED_ACHAT.clear()  # setups live as long as their runner's resources
    _BOUNDED_ACHAT[id(setup)] = (setup, method, timeout, model, achat)
    return achat


#: The bounded ``achat`` of a setup, by setup (kept with it, so that its id is not reused
#: meanwhile): ``(setup, its class's achat, timeout, model name, wrapper)``.
_BOUNDED_ACHAT: dict[int, tuple[Any, Any, float | None, str, Any]] = {}


def model_timeout(setup: Any, ctx: RunnerContext) -> float | None:
    """The deadline the chat action puts on a call of ``setup``: its ``timeout``, else
    ``model.timeout``, else none when the connection bounds its calls itself (the built-in
    providers: ``call_deadline``), else :data:`DEFAULT_MODEL_DEADLINE`."""
    configured = call_timeout(setup, ctx, TimeoutOptions.MODEL_TIMEOUT)
    if configured is not None:
        return configured
    cached = _SELF_BOUNDED.get(id(setup))
    if cached is None or cached[0] is not setup:
        try:
            own = getattr(setup.get_connection(), "call_deadline", None)
        except Exception:  # noqa: BLE001 - the call itself reports a missing connection
            own = None
        if len(_SELF_BOUNDED) >= 256:
            _SELF_BOUNDED.clear()  # setups live as long as their runner's resources
        cached = _SELF_BOUNDED[id(setup)] = (setup, isinstance(own, (int, float)) and own > 0)
    return None if cached[1] else DEFAULT_MODEL_DEADLINE


#: Whether a setup's connection bounds its calls itself, by setup (kept with it, so that its
#: id is not reused meanwhile).
_SELF_BOUNDED: dict[int, tuple[Any, bool]] = {}
