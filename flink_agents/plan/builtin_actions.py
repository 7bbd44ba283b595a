"""Built-in actions, part of every plan like user actions.

- ``chat_model_action`` answers :class:`ChatRequestEvent`: it resolves the chat model setup
  (and through it the connection, prompt and tools), calls the model, and while the model
  asks for tools it sends a :class:`ToolRequestEvent` and continues on the matching
  :class:`ToolResponseEvent`, until the model answers (at most ``max-iterations`` calls).
  The final answer goes out as a :class:`ChatResponseEvent`.
- ``tool_call_action`` runs the tool calls of a :class:`ToolRequestEvent`. An unknown tool,
  bad arguments or an exception in the tool become error responses the model sees.
- ``context_retrieval_action`` queries a vector store.

Model calls go through :func:`call_model` and tool calls through :func:`call_tool`, the one
place each is made: the interceptor chain (:mod:`flink_agents.api.interceptors`) and the
real call run inside one ``ctx.durable_execute_async``, so a run replayed after a restore
calls neither again. The ``before_model`` / ``after_model`` hooks
(:mod:`flink_agents.api.hooks`) run around each model call, outside its durable record. The
loop state lives in sensory memory (JSON).

A request may carry (as extra fields of :class:`ChatRequestEvent`): ``max_iterations`` (the
loop's bound), ``tools_in_text`` (offer no tools natively: the caller describes them in the
prompt, as text ReAct does) and ``trace`` (the final response's ``extra_args`` get
``reasoning`` and ``tool_trace``) and ``chat_history`` (a
:class:`~flink_agents.api.chat_history.ChatHistory` or its dict: the key's conversation is
put before the request's messages and the finished exchange added to it).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic_core import to_jsonable_python

from flink_agents.api.chat_history import (
    ChatHistory,
    history_turn,
    summary_message,
    summary_request,
    with_history,
)
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.core_options import AgentConfigOptions
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import Event
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.hooks import HookContext, HookPoint
from flink_agents.api.interceptors import ModelCallRequest, ToolCallRequest
from flink_agents.api.resource import ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.timeouts import TimeoutOptions, bounded
from flink_agents.api.tools.tool import Tool
from flink_agents.api.vector_stores.vector_store import VectorStoreQuery
from flink_agents.errors import (
    HookError,
    InterceptorError,
    ModelCallError,
    ResourceError,
    ToolRejectedError,
    UnknownToolError,
)
from flink_agents.plan.behaviours import run_chain, run_hooks

_LOOP = "_tool_loop"
#: ``extra_args`` flag of a reply a hook gave as the final answer (``hc.stop``).
FINAL_ANSWER = "final_answer"


def _chain(ctx: RunnerContext, kind: str) -> list[tuple[str, Any]]:
    plan = getattr(ctx, "agent_plan", None)
    # Checked first: the plain field is cheap, the resolved chain is behind a private attr.
    if plan is None or not plan.interceptors:
        return []
    return plan.interceptor_chain(kind)


def _hooks(ctx: RunnerContext, point: str) -> list[tuple[str, Any]]:
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
    setup = ctx.get_resource(model, ResourceType.CHAT_MODEL)
    chain = _chain(ctx, "model")
    timeout = _timeout(setup, ctx, TimeoutOptions.MODEL_TIMEOUT)
    if not chain and offer_tools:
        # The setup's own call, as before interceptors existed. Passed only when given: a
        # custom setup whose achat predates prompt_args still works.
        if prompt_args:
            options = {**(options or {}), "prompt_args": prompt_args}
        achat = bounded(setup.achat, timeout, "chat model", model)  # type: ignore[attr-defined]
        return await ctx.durable_execute_async(achat, messages, **(options or {}))
    return await ctx.durable_execute_async(
        _intercepted_model_call,
        setup,
        chain,
        ModelCallRequest(model=model, messages=messages, options=dict(options or {}), key=ctx.key),
        prompt_args or {},
        offer_tools,
        timeout,
    )


async def _intercepted_model_call(
    setup: Any,
    chain: list[tuple[str, Any]],
    request: ModelCallRequest,
    prompt_args: dict[str, Any],
    offer_tools: bool,
    timeout: float | None = None,
) -> ChatMessage:
    """What the durable record of an intercepted model call wraps: request built, chain
    run, connection called (bounded by ``timeout``: an interceptor sees the timeout)."""
    if offer_tools and setup.tools:
        # Looking tools up may create resources (an MCP server connects): off the loop.
        request.tools = await asyncio.to_thread(setup.get_tools)
    request.messages = setup.prepare_messages(request.messages, prompt_args)
    request.options = {**setup.model_kwargs, **request.options}

    async def terminal(req: ModelCallRequest) -> ChatMessage:
        achat = bounded(setup.get_connection().achat, timeout, "chat model", request.model)
        reply: ChatMessage = await achat(req.messages, req.tools or None, **req.options)
        return reply

    reply: ChatMessage = await run_chain("model", chain, request, terminal)
    if not isinstance(reply, ChatMessage):
        # A cache or guardrail may answer with text.
        reply = ChatMessage(role=MessageRole.ASSISTANT, content=str(reply))
    return reply


async def call_tool(
    ctx: RunnerContext, tool: Tool, name: str, arguments: dict[str, Any], call_id: str
) -> Any:
    """Call ``tool`` through the tool interceptors, durably: the one place a tool is called
    (checks that must happen before any tool runs go right before this call)."""
    chain = _chain(ctx, "tool")
    timeout = _timeout(tool, ctx, TimeoutOptions.TOOL_TIMEOUT)
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


def _schema_kwargs(output_schema: Any) -> dict[str, Any]:
    if output_schema is None:
        return {}
    if isinstance(output_schema, type) and hasattr(output_schema, "model_json_schema"):
        return {"output_schema": output_schema.model_json_schema()}
    return {"output_schema": output_schema}


async def chat_model_action(event: Event, ctx: RunnerContext) -> None:
    """Call the model; loop through tool calls until it answers."""
    if isinstance(event, ChatRequestEvent):
        extra = event.model_extra or {}
        # Messages (and the request id) stay objects until the loop state must be stored
        # (tool calls): most requests are answered at once, and the JSON round trip is the
        # costly part.
        state: dict[str, Any] = {
            "request_id": event.id,
            "model": event.model,
            "messages": list(event.messages),
            "iterations": 0,
            "schema": _schema_kwargs(event.output_schema),
            # Kept for every model call of the tool loop: the prompt is applied each time.
            "prompt_args": dict(event.prompt_args),
            # A request may bound its own tool loop (ReActAgent does).
            "max_iterations": extra.get("max_iterations"),
            "tools_in_text": bool(extra.get("tools_in_text")),
            "trace": bool(extra.get("trace")),
        }
        history_spec = extra.get("chat_history")
        if history_spec is not None:
            history = _history_spec(history_spec)
            state["history"] = history.model_dump()
            state["history_users"] = [
                m.content for m in state["messages"] if m.role == MessageRole.USER
            ]
            stored = history.load(ctx.short_term_memory.get(history.memory_path))
            state["messages"] = with_history(state["messages"], stored)
    elif isinstance(event, ToolResponseEvent):
        path = f"{_LOOP}.{event.request_id}"
        stored = ctx.sensory_memory.get(path)
        if stored is None:
            return  # a tool response this action did not ask for (sent by a user action)
        state = dict(stored)
        calls = state.pop("pending_calls")
        for call in calls:
            call_id = call["id"]
            content = event.responses.get(call_id, event.errors.get(call_id, "no result"))
            state["messages"].append(
                ChatMessage(
                    role=MessageRole.TOOL,
                    content=content
                    if isinstance(content, str)
                    else json.dumps(content, default=str),
                    extra_args={
                        "tool_call_id": call_id,
                        "name": call["function"]["name"],
                        "is_error": call_id in event.errors,
                    },
                ).model_dump(mode="json")
            )
    else:
        return

    max_iterations = int(
        state.get("max_iterations") or ctx.config.get(AgentConfigOptions.MAX_ITERATIONS)
    )
    if state["iterations"] >= max_iterations:
        raise ModelCallError(
            f"chat request to {state['model']!r} reached max-iterations ({max_iterations}) "
            "model calls without a final answer; raise AgentConfigOptions.MAX_ITERATIONS or "
            "check the tools' results",
            model=state["model"],
        )
    state["iterations"] += 1
    messages = [
        m if isinstance(m, ChatMessage) else ChatMessage.model_validate(m)
        for m in state["messages"]
    ]
    before = _hooks(ctx, "before_model")
    hc = None
    if before:
        hc = HookContext(
            point=HookPoint.BEFORE_MODEL,
            key=ctx.key,
            memory=ctx.short_term_memory,
            model=state["model"],
            messages=messages,
            iteration=state["iterations"],
        )
        await run_hooks(before, hc)
        messages = hc.messages
    if hc is not None and hc.stopped:
        response = _as_answer(hc.answer)
    else:
        response = await call_model(
            ctx,
            state["model"],
            messages,
            prompt_args=state.get("prompt_args") or None,
            options=state["schema"],
            offer_tools=not state.get("tools_in_text"),
        )
        after = _hooks(ctx, "after_model")
        if after:
            hc = HookContext(
                point=HookPoint.AFTER_MODEL,
                key=ctx.key,
                memory=ctx.short_term_memory,
                model=state["model"],
                messages=messages,
                response=response,
                iteration=state["iterations"],
            )
            await run_hooks(after, hc)
            response = _as_answer(hc.answer) if hc.stopped else (hc.response or response)
    if response.tool_calls:
        calls = [
            _normalize_call(c, i, state["iterations"]) for i, c in enumerate(response.tool_calls)
        ]
        response = response.model_copy(update={"tool_calls": calls})
        request = ToolRequestEvent(model=state["model"], tool_calls=calls)
        state["messages"] = [m.model_dump(mode="json") for m in [*messages, response]]
        state["pending_calls"] = calls
        state["request_id"] = str(state["request_id"])
        ctx.sensory_memory.set(f"{_LOOP}.{request.id}", state)
        ctx.send_event(request)
        return
    if state.get("history"):
        await _save_history(ctx, state, response)
    if state.get("trace"):
        response = response.model_copy(
            update={"extra_args": {**response.extra_args, **_trace(messages)}}
        )
    ctx.send_event(ChatResponseEvent(request_id=state["request_id"], response=response))


def _timeout(resource: Any, ctx: RunnerContext, option: Any) -> float | None:
    """The resource's own ``timeout``, else the option's value (None: no timeout)."""
    own = getattr(resource, "timeout", None)
    return own if own is not None else ctx.config.get(option)


def _history_spec(spec: Any) -> ChatHistory:
    if isinstance(spec, ChatHistory):
        return spec
    if isinstance(spec, int) and not isinstance(spec, bool):
        return ChatHistory(max_messages=spec)
    return ChatHistory.model_validate(spec)


async def _save_history(ctx: RunnerContext, state: dict[str, Any], answer: ChatMessage) -> None:
    """Add the finished exchange to the key's history, bounded (dropped or summarized)."""
    history = ChatHistory.model_validate(state["history"])
    turn = [ChatMessage(role=MessageRole.USER, content=c) for c in state["history_users"]]
    messages = [
        *history.load(ctx.short_term_memory.get(history.memory_path)),
        *history_turn(turn, answer),
    ]
    ctx.short_term_memory.set(
        history.memory_path,
        history.dump(await bound_history(ctx, history, state["model"], messages)),
    )


async def bound_history(
    ctx: RunnerContext, history: ChatHistory, model: str, messages: list[ChatMessage]
) -> list[ChatMessage]:
    """``messages`` within the history's bounds: oldest turns dropped or summarized."""
    if not history.over(messages):
        return messages
    older, kept = history.split(messages)
    if history.overflow == "summarize" and older:
        summary = await call_model(ctx, model, summary_request(older), offer_tools=False)
        return [summary_message(summary.content), *kept]
    return kept


def _as_answer(answer: Any) -> ChatMessage:
    """A hook's final answer as the loop's last reply (no tool calls: the loop ends)."""
    if not isinstance(answer, ChatMessage):
        answer = ChatMessage(role=MessageRole.ASSISTANT, content=str(answer))
    # Marked so that a caller parsing replies (text ReAct) takes it as the final answer.
    extra = {**answer.extra_args, FINAL_ANSWER: True}
    return answer.model_copy(update={"tool_calls": [], "extra_args": extra})


def _trace(messages: list[ChatMessage]) -> dict[str, Any]:
    """The reasoning (assistant text next to tool calls) and tool calls of a finished loop."""
    reasoning = [m.content for m in messages if m.role == MessageRole.ASSISTANT and m.content]
    results = {m.extra_args.get("tool_call_id"): m for m in messages if m.role == MessageRole.TOOL}
    calls = []
    for m in messages:
        for call in m.tool_calls if m.role == MessageRole.ASSISTANT else []:
            result = results.get(call.get("id"))
            calls.append(
                {
                    "tool": (call.get("function") or {}).get("name"),
                    "arguments": (call.get("function") or {}).get("arguments"),
                    "result": result.content if result is not None else None,
                    "is_error": bool(result is not None and result.extra_args.get("is_error")),
                }
            )
    return {"reasoning": reasoning, "tool_trace": calls}


def _normalize_call(call: dict[str, Any], index: int, iteration: int) -> dict[str, Any]:
    """A tool call in our canonical form, with an id (made up if the model gave none)."""
    function = dict(call.get("function") or {})
    if "name" not in function and "name" in call:
        function = {"name": call["name"], "arguments": call.get("arguments", {})}
    args = function.get("arguments", {})
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            pass  # kept as text; the tool action reports it to the model
    function["arguments"] = args
    call_id = call.get("id") or f"call_{iteration}_{index}"
    return {"id": str(call_id), "type": call.get("type", "function"), "function": function}


async def tool_call_action(event: Event, ctx: RunnerContext) -> None:
    """Run each requested tool; failures become error responses for the model."""
    if not isinstance(event, ToolRequestEvent):
        return
    responses: dict[str, Any] = {}
    errors: dict[str, str] = {}
    # The model calls tools by the names it was shown (their metadata names), which may
    # differ from the resource names the setup lists them under.
    offered: dict[str, Any] = {}
    try:
        setup = ctx.get_resource(event.model, ResourceType.CHAT_MODEL)
        offered = {t.name: t for t in setup.get_tools()}  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - fall back to resource names below
        offered = {}
    for call in event.tool_calls:
        call_id = str(call.get("id"))
        function = call.get("function") or {}
        name = function.get("name", "")
        args = function.get("arguments", {})
        try:
            if not isinstance(args, dict):
                raise ValueError(f"arguments must be a JSON object, got {args!r}")
            tool = offered.get(name)
            if tool is None:
                try:
                    tool = ctx.get_resource(name, ResourceType.TOOL)
                except ResourceError as exc:
                    raise UnknownToolError(f"unknown tool {name!r}: {exc.message}") from None
            needs_approval = getattr(tool, "requires_approval", False)
            before_tool = _hooks(ctx, "before_tool")
            if before_tool:
                hc = HookContext(
                    point=HookPoint.BEFORE_TOOL,
                    key=ctx.key,
                    memory=ctx.short_term_memory,
                    tool=name,
                    arguments=dict(args),
                    tool_call_id=call_id,
                )
                await run_hooks(before_tool, hc)
                args = hc.arguments
                if hc.stopped:
                    responses[call_id] = to_jsonable_python(hc.answer, fallback=str)
                    continue
                needs_approval = needs_approval or hc.approval_required
            if needs_approval:
                # Pauses the run the first time (see flink_agents.api.approval).
                decision = await ctx.request_approval(name, args, tool_call_id=call_id)
                if not decision.approved:
                    raise ToolRejectedError(
                        f"the call was rejected by a human reviewer: "
                        f"{decision.reason or 'no reason given'}"
                    )
                if decision.arguments is not None:
                    args = decision.arguments
            result = await call_tool(ctx, tool, name, args, call_id)  # type: ignore[arg-type]
            # Event attributes must be JSON: a tool result JSON cannot hold reaches the
            # model as its text (it would be text in the model's message anyway).
            responses[call_id] = to_jsonable_python(result, fallback=str)
        except (InterceptorError, HookError):
            raise  # the interceptor's or hook's own failure follows the error strategy
        except ToolRejectedError as exc:
            message = f"Error: tool {name!r} was not called: {exc}"
            errors[call_id] = message
            responses[call_id] = message
        except Exception as exc:  # noqa: BLE001 - every tool failure goes back to the model
            message = f"Error: tool {name!r} failed: {type(exc).__name__}: {exc}"
            errors[call_id] = message
            responses[call_id] = message
    ctx.send_event(ToolResponseEvent(request_id=event.id, responses=responses, errors=errors))


async def context_retrieval_action(event: Event, ctx: RunnerContext) -> None:
    """Query the vector store named in the request."""
    if not isinstance(event, ContextRetrievalRequestEvent):
        return
    store = ctx.get_resource(event.vector_store, ResourceType.VECTOR_STORE)
    result = await ctx.durable_execute_async(
        store.aquery,  # type: ignore[attr-defined]
        VectorStoreQuery(query_text=event.query, limit=event.max_results),
    )
    ctx.send_event(
        ContextRetrievalResponseEvent(
            request_id=event.id, query=event.query, documents=result.documents
        )
    )


#: name -> (listened event types, function)
BUILTIN_ACTIONS: dict[str, tuple[tuple[str, ...], Any]] = {
    "chat_model_action": (
        (ChatRequestEvent.EVENT_TYPE, ToolResponseEvent.EVENT_TYPE),
        chat_model_action,
    ),
    "tool_call_action": ((ToolRequestEvent.EVENT_TYPE,), tool_call_action),
    "context_retrieval_action": (
        (ContextRetrievalRequestEvent.EVENT_TYPE,),
        context_retrieval_action,
    ),
}
