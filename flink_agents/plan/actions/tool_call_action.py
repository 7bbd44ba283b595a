"""The built-in tool action: runs the tool calls of a :class:`ToolRequestEvent`.

Only tools the model was offered for the request run (:mod:`.tool_authorization`); any
other name is answered as an unknown tool and the tool is never looked up or run. An
unknown tool, bad arguments, a rejection by a reviewer, a timeout or an exception in the
tool become error responses the model sees (secrets masked, :mod:`.secret_text`); an
interceptor's or hook's own failure follows the error strategy. Injected parameters
(``injected_args``) are filled in last, right before the call, over anything the model, a
hook or a reviewer put under their names.

Each failed call also gets a code in the :class:`ToolResponseEvent`'s ``error_codes`` (an
extra field; the event log shows it): ``unauthorized_tool``, ``unknown_tool``,
``invalid_arguments``, ``rejected``, ``timeout`` or ``tool_error``.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_jsonable_python

from flink_agents.api.events.event import Event
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.hooks import HookContext, HookPoint
from flink_agents.api.memory_object import MemoryObject
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.tool_parameter_injection import InjectedArg, ToolParameterSource
from flink_agents.errors import (
    CallTimeoutError,
    HookError,
    InterceptorError,
    ToolArgumentError,
    ToolRejectedError,
    UnknownToolError,
)
from flink_agents.plan.actions.calls import call_tool, hooks_at
from flink_agents.plan.actions.secret_text import secret_masker
from flink_agents.plan.actions.tool_authorization import UNAUTHORIZED_TOOL, grant_for, refusal
from flink_agents.plan.behaviours import run_hooks


async def tool_call_action(event: Event, ctx: RunnerContext) -> None:
    """Run each requested tool the model may call; failures become error responses for
    the model."""
    if not isinstance(event, ToolRequestEvent):
        return
    responses: dict[str, Any] = {}
    errors: dict[str, str] = {}
    codes: dict[str, str] = {}
    grant = grant_for(event, ctx)
    mask = secret_masker(ctx)
    for call in event.tool_calls:
        call_id = str(call.get("id"))
        function = call.get("function") or {}
        name = function.get("name", "")
        args = function.get("arguments", {})
        if not isinstance(name, str) or not grant.allows(name):
            # Checked before anything else: the tool is not looked up, its hooks and
            # approval do not run, and the model learns nothing it was not offered.
            message = refusal(event, ctx, grant, name)
            errors[call_id] = responses[call_id] = message
            codes[call_id] = UNAUTHORIZED_TOOL
            continue
        try:
            if not isinstance(args, dict):
                raise ToolArgumentError(f"arguments must be a JSON object, got {args!r}")
            tool = grant.tool(name, ctx)
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
                    side_effects=bool(getattr(tool, "side_effects", False)),
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
                    detail = f"Error: tool {name!r} failed: {exc}"
                    errors[call_id] = mask(detail) if mask else detail
                    responses[call_id] = f"Error: tool {name!r} failed to execute."
                    codes[call_id] = "tool_error"
                    continue
            result = await call_tool(ctx, tool, name, args, call_id)
            # Event attributes must be JSON: a tool result JSON cannot hold reaches the
            # model as its text (it would be text in the model's message anyway).
            responses[call_id] = to_jsonable_python(result, fallback=str)
        except (InterceptorError, HookError):
            raise  # the interceptor's or hook's own failure follows the error strategy
        except Exception as exc:  # noqa: BLE001 - every tool failure goes back to the model
            if isinstance(exc, ToolRejectedError):
                message = f"Error: tool {name!r} was not called: {exc}"
            else:
                message = f"Error: tool {name!r} failed: {type(exc).__name__}: {exc}"
            errors[call_id] = responses[call_id] = mask(message) if mask else message
            codes[call_id] = _code(exc)
    extra: dict[str, Any] = {"error_codes": codes} if codes else {}
    ctx.send_event(
        ToolResponseEvent(request_id=event.id, responses=responses, errors=errors, **extra)
    )


def _code(exc: Exception) -> str:
    """The machine-readable kind of a tool failure (``error_codes``)."""
    if isinstance(exc, UnknownToolError):
        return "unknown_tool"
    if isinstance(exc, ToolArgumentError):
        return "invalid_arguments"
    if isinstance(exc, ToolRejectedError):
        return "rejected"
    if isinstance(exc, CallTimeoutError):
        return "timeout"
    return "tool_error"


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
