"""The built-in tool action: runs the tool calls of a :class:`ToolRequestEvent`.

An unknown tool, bad arguments, a rejection by a reviewer or an exception in the tool become
error responses the model sees; an interceptor's or hook's own failure follows the error
strategy. Injected parameters (``injected_args``) are filled in last, right before the call,
over anything the model, a hook or a reviewer put under their names.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_jsonable_python

from flink_agents.api.events.event import Event
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.hooks import HookContext, HookPoint
from flink_agents.api.memory_object import MemoryObject
from flink_agents.api.resource import ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.tool_parameter_injection import InjectedArg, ToolParameterSource
from flink_agents.errors import (
    HookError,
    InterceptorError,
    ResourceError,
    ToolRejectedError,
    UnknownToolError,
)
from flink_agents.plan.actions.calls import call_tool, hooks_at
from flink_agents.plan.behaviours import run_hooks


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
            before_tool = hooks_at(ctx, "before_tool")
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
            injected = getattr(tool, "injected_args", None)
            if injected:
                try:
                    args = {**args, **resolve_injected_args(injected, ctx)}
                except (LookupError, TypeError, ValueError) as exc:
                    # The model hears only that the call failed: the parameter is hidden
                    # from it; what was missing goes to the event (errors) and the log.
                    errors[call_id] = f"Error: tool {name!r} failed: {exc}"
                    responses[call_id] = f"Error: tool {name!r} failed to execute."
                    continue
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


def resolve_injected_args(injected: dict[str, InjectedArg], ctx: RunnerContext) -> dict[str, Any]:
    """The values of a tool's injected parameters, read from their sources now.

    Raises:
        LookupError: a configuration key or memory path that holds nothing.
        TypeError: a memory path that holds an object, not a value.
    """
    return {name: _injected_value(spec, ctx) for name, spec in injected.items()}


def _injected_value(spec: InjectedArg, ctx: RunnerContext) -> Any:
    source, key = spec.source, spec.key
    if source is ToolParameterSource.KEY:
        return ctx.key
    if not key:
        raise LookupError("injected tool parameter has no key")
    if source is ToolParameterSource.CONFIG:
        values = ctx.config.get_conf_data()
        if key not in values:
            raise LookupError(f"Missing config for injected tool parameter: {key}")
        return values[key]
    memory = (
        ctx.sensory_memory
        if source is ToolParameterSource.SENSORY_MEMORY
        else (ctx.short_term_memory)
    )
    if not memory.is_exist(key):
        raise LookupError(f"Missing memory path for injected tool parameter: {key}")
    value = memory.get(key)
    if isinstance(value, MemoryObject):
        raise TypeError(f"Memory path for injected tool parameter must reference a value: {key}")
    return value
