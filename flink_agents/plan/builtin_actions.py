"""Built-in actions, part of every plan like user actions.

- ``chat_model_action`` answers :class:`ChatRequestEvent`: it resolves the chat model setup
  (and through it the connection, prompt and tools), calls the model, and while the model
  asks for tools it sends a :class:`ToolRequestEvent` and continues on the matching
  :class:`ToolResponseEvent`, until the model answers (at most ``max-iterations`` calls).
  The final answer goes out as a :class:`ChatResponseEvent`.
- ``tool_call_action`` runs the tool calls of a :class:`ToolRequestEvent`. An unknown tool,
  bad arguments or an exception in the tool become error responses the model sees.
- ``context_retrieval_action`` queries a vector store.

Model and tool calls go through ``ctx.durable_execute_async``, so a run replayed after a
restore does not call them again. The loop state lives in sensory memory (JSON).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import to_jsonable_python

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.core_options import AgentConfigOptions
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import Event
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.resource import ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.timeouts import TimeoutOptions, bounded
from flink_agents.api.vector_stores.vector_store import VectorStoreQuery
from flink_agents.errors import (
    ModelCallError,
    ResourceError,
    ToolRejectedError,
    UnknownToolError,
)

_LOOP = "_tool_loop"


def _schema_kwargs(output_schema: Any) -> dict[str, Any]:
    if output_schema is None:
        return {}
    if isinstance(output_schema, type) and hasattr(output_schema, "model_json_schema"):
        return {"output_schema": output_schema.model_json_schema()}
    return {"output_schema": output_schema}


async def chat_model_action(event: Event, ctx: RunnerContext) -> None:
    """Call the model; loop through tool calls until it answers."""
    if isinstance(event, ChatRequestEvent):
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
            "max_iterations": (event.model_extra or {}).get("max_iterations"),
        }
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
    setup = ctx.get_resource(state["model"], ResourceType.CHAT_MODEL)
    messages = [
        m if isinstance(m, ChatMessage) else ChatMessage.model_validate(m)
        for m in state["messages"]
    ]
    prompt_args = state.get("prompt_args") or {}
    achat = bounded(
        setup.achat,  # type: ignore[attr-defined]
        _timeout(setup, ctx, TimeoutOptions.MODEL_TIMEOUT),
        "chat model",
        state["model"],
    )
    # Passed only when given: a custom setup whose achat predates prompt_args still works.
    if prompt_args:
        response: ChatMessage = await ctx.durable_execute_async(
            achat,
            messages,
            prompt_args=prompt_args,
            **state["schema"],
        )
    else:
        response = await ctx.durable_execute_async(achat, messages, **state["schema"])
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
    ctx.send_event(
        ChatResponseEvent(request_id=state["request_id"], response=response)  # type: ignore[arg-type]
    )


def _timeout(resource: Any, ctx: RunnerContext, option: Any) -> float | None:
    """The resource's own ``timeout``, else the option's value (None: no timeout)."""
    own = getattr(resource, "timeout", None)
    return own if own is not None else ctx.config.get(option)  # type: ignore[no-any-return]


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
            if getattr(tool, "requires_approval", False):
                # Pauses the run the first time (see flink_agents.api.approval).
                decision = await ctx.request_approval(name, args, tool_call_id=call_id)
                if not decision.approved:
                    raise ToolRejectedError(
                        f"the call was rejected by a human reviewer: "
                        f"{decision.reason or 'no reason given'}"
                    )
                if decision.arguments is not None:
                    args = decision.arguments
            acall = bounded(
                tool.acall,  # type: ignore[union-attr]
                _timeout(tool, ctx, TimeoutOptions.TOOL_TIMEOUT),
                "tool",
                name,
            )
            result = await ctx.durable_execute_async(acall, **args)
            # Event attributes must be JSON: a tool result JSON cannot hold reaches the
            # model as its text (it would be text in the model's message anyway).
            responses[call_id] = to_jsonable_python(result, fallback=str)
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
