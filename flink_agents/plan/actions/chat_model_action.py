"""The built-in chat action: calls the model and loops through tool calls until it answers.

A :class:`ChatRequestEvent` starts a loop; while the model asks for tools the action sends a
:class:`ToolRequestEvent` and continues on the matching :class:`ToolResponseEvent`, until the
model answers (at most ``max-iterations`` calls) with a :class:`ChatResponseEvent`. The loop
state lives in sensory memory (JSON). The ``before_model`` / ``after_model`` hooks
(:mod:`flink_agents.api.hooks`) run around each model call, outside its durable record.

A request may carry (as extra fields of :class:`ChatRequestEvent`): ``max_iterations`` (the
loop's bound), ``tools_in_text`` (offer no tools natively: the caller describes them in the
prompt, as text ReAct does), ``trace`` (the final response's ``extra_args`` get
``reasoning`` and ``tool_trace``) and ``chat_history`` (a
:class:`~flink_agents.api.chat_history.ChatHistory` or its dict: the key's conversation is
put before the request's messages and the finished exchange added to it).

The :class:`ToolRequestEvent` names the tools the model was offered for the call that asked
for them (``offered_tools``): the tool action runs no other (see
:mod:`~flink_agents.plan.actions.tool_authorization`).
"""

from __future__ import annotations

import json
from collections.abc import Coroutine
from typing import Any
from uuid import UUID

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
from flink_agents.api.events.event import Event
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.hooks import HookContext, HookPoint
from flink_agents.api.resource import ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.errors import ModelCallError
from flink_agents.plan.actions.calls import call_model, call_model_offering, hooks_at
from flink_agents.plan.actions.tool_authorization import OFFERED_TOOLS, setup_tool_names
from flink_agents.plan.behaviours import run_hooks

_LOOP = "_tool_loop"
#: ``extra_args`` flag of a reply a hook gave as the final answer (``hc.stop``).
FINAL_ANSWER = "final_answer"


async def chat_model_action(event: Event, ctx: RunnerContext) -> None:
    """Call the model; loop through tool calls until it answers."""
    if isinstance(event, ChatRequestEvent):
        state = _request_state(event, ctx)
    elif isinstance(event, ToolResponseEvent):
        resumed = _resumed_state(event, ctx)
        if resumed is None:
            return  # a tool response this action did not ask for (sent by a user action)
        state = resumed
    else:
        return
    messages = _next_iteration(state, ctx)
    plan = getattr(ctx, "agent_plan", None)
    if plan is not None and plan.hooks:
        response, offered = await _ask_model(ctx, state, messages)
    else:  # no model hooks (most plans): the call itself, one coroutine frame less
        response, offered = await _call(ctx, state, messages)
    if response.tool_calls:
        _request_tools(ctx, state, messages, response, offered)
        return
    if state.get("history"):
        await _save_history(ctx, state, response)
    if state.get("trace"):
        response = response.model_copy(
            update={"extra_args": {**response.extra_args, **_trace(messages)}}
        )
    ctx.send_event(_response_event(state["request_id"], response))


def _response_event(request_id: Any, response: ChatMessage) -> ChatResponseEvent:
    """The final answer's event; without the validator when its values are the typed ones
    the action holds (the request's id, the model's message: most requests)."""
    if type(request_id) is UUID and type(response) is ChatMessage:
        return ChatResponseEvent._trusted({"request_id": request_id, "response": response})
    return ChatResponseEvent(request_id=request_id, response=response)


def _request_state(event: ChatRequestEvent, ctx: RunnerContext) -> dict[str, Any]:
    """The loop state of a new request."""
    extra = event.model_extra or {}
    # Messages (and the request id) stay objects until the loop state must be stored (tool
    # calls): most requests are answered at once, and the JSON round trip is the costly part.
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
    return state


def _resumed_state(event: ToolResponseEvent, ctx: RunnerContext) -> dict[str, Any] | None:
    """The loop state that asked for ``event``'s tool calls, with their results added as
    tool messages; None if this action did not ask for them."""
    stored = ctx.sensory_memory.get(f"{_LOOP}.{event.request_id}")
    if stored is None:
        return None
    state = dict(stored)
    for call in state.pop("pending_calls"):
        call_id = call["id"]
        content = event.responses.get(call_id, event.errors.get(call_id, "no result"))
        state["messages"].append(
            ChatMessage(
                role=MessageRole.TOOL,
                content=content if isinstance(content, str) else json.dumps(content, default=str),
                extra_args={
                    "tool_call_id": call_id,
                    "name": call["function"]["name"],
                    "is_error": call_id in event.errors,
                },
            ).model_dump(mode="json")
        )
    return state


def _next_iteration(state: dict[str, Any], ctx: RunnerContext) -> list[ChatMessage]:
    """Count a model call against the loop's bound; the messages to send."""
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
    return [
        m if isinstance(m, ChatMessage) else ChatMessage.model_validate(m)
        for m in state["messages"]
    ]


async def _ask_model(
    ctx: RunnerContext, state: dict[str, Any], messages: list[ChatMessage]
) -> tuple[ChatMessage, list[str] | None]:
    """The model's reply and the names of the tools it was offered (None: not known), with
    the ``before_model`` / ``after_model`` hooks around the call (a hook may change the
    messages or the reply, or answer instead of the model)."""
    before = hooks_at(ctx, "before_model")
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
        messages[:] = hc.messages
        if hc.stopped:
            return _as_answer(hc.answer), []
    response, offered = await _call(ctx, state, messages)
    after = hooks_at(ctx, "after_model")
    if not after:
        return response, offered
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
    # A reply a hook put in may call tools too: only those the model was offered.
    return (_as_answer(hc.answer) if hc.stopped else (hc.response or response)), offered


def _call(
    ctx: RunnerContext, state: dict[str, Any], messages: list[ChatMessage]
) -> Coroutine[Any, Any, tuple[ChatMessage, list[str] | None]]:
    """The model call of the loop state ``state`` (its coroutine)."""
    return call_model_offering(
        ctx,
        state["model"],
        messages,
        prompt_args=state.get("prompt_args") or None,
        options=state["schema"],
        offer_tools=not state.get("tools_in_text"),
    )


def _request_tools(
    ctx: RunnerContext,
    state: dict[str, Any],
    messages: list[ChatMessage],
    response: ChatMessage,
    offered: list[str] | None,
) -> None:
    """Store the loop state and send the reply's tool calls as a :class:`ToolRequestEvent`
    naming the tools the model was offered."""
    calls = [_normalize_call(c, i, state["iterations"]) for i, c in enumerate(response.tool_calls)]
    response = response.model_copy(update={"tool_calls": calls})
    if offered is None:
        # The reply does not say: the setup offered its own tools (nothing with the tools
        # in the text).
        offered = (
            []
            if state.get("tools_in_text")
            else setup_tool_names(ctx.get_resource(state["model"], ResourceType.CHAT_MODEL))
        )
    request = ToolRequestEvent(
        model=state["model"],
        tool_calls=calls,
        **{OFFERED_TOOLS: offered},  # type: ignore[arg-type]
    )
    state["messages"] = [m.model_dump(mode="json") for m in [*messages, response]]
    state["pending_calls"] = calls
    state["request_id"] = str(state["request_id"])
    ctx.sensory_memory.set(f"{_LOOP}.{request.id}", state)
    ctx.send_event(request)


def _schema_kwargs(output_schema: Any) -> dict[str, Any]:
    if output_schema is None:
        return {}
    if isinstance(output_schema, type) and hasattr(output_schema, "model_json_schema"):
        return {"output_schema": output_schema.model_json_schema()}
    return {"output_schema": output_schema}


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
