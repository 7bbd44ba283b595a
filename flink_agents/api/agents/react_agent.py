"""ReActAgent: a ready-made agent that reasons with a chat model and calls tools.

Tools are called natively by default (``tool_calling="native"``: the model's tool-call
API, run by the built-in chat action); ``tool_calling="text"`` describes them in the prompt
and parses Thought / Action / Action Input / Answer replies instead, for models without
native tool calling (see :mod:`flink_agents.api.agents.text_react`).

The input becomes the user message (formatted into ``prompt`` when given: a pydantic model's
or dict's fields, or ``{input}``, fill its placeholders). The chat model setup's tools are
offered to the model; the built-in chat action runs the tool loop. With an
``output_schema`` the model is told to answer with JSON matching it, and the reply is
parsed and validated into the schema (a pydantic model instance, or a ``Row`` for a
``RowTypeInfo``). A reply that does not match follows the error handling strategy:
FAIL raises :class:`~flink_agents.errors.OutputSchemaError`; RETRY asks the model again,
showing it the problem (at most ``max_retries`` times, with exponential backoff); IGNORE
logs the problem, sends an :class:`~flink_agents.api.events.event.ErrorEvent` and outputs
nothing for that input. Without ``error_handling_strategy`` the agent follows the configured
``error-handling-strategy``.

``input_schema`` (a pydantic model class) validates each input first: a bad input raises
:class:`~flink_agents.errors.InputSchemaError`, handled by the error strategy.
``return_reasoning=True`` outputs ``{"output": ..., "reasoning": [...], "tool_trace":
[...]}``: the model's text next to its tool calls, and each call's tool, arguments and
result. ``model_interceptors`` / ``tool_interceptors`` wrap the agent's model and tool calls
(:mod:`flink_agents.api.interceptors`); hooks are added with ``add_hook``
(:mod:`flink_agents.api.hooks`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from flink_agents.api._function import load_by_value, pickle_by_value
from flink_agents.api.agents.agent import Agent
from flink_agents.api.agents.text_react import observation, parse_react, tools_prompt
from flink_agents.api.chat_history import (
    ChatHistory,
    history_turn,
    summary_message,
    summary_request,
    with_history,
)
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.core_options import AgentConfigOptions, ErrorHandlingStrategy
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import ErrorEvent, Event, InputEvent, OutputEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.errors import InputSchemaError, OutputSchemaError

__all__ = ["ErrorHandlingStrategy", "ReActAgent"]

#: How a ReActAgent lets the model call tools.
TOOL_CALLING_MODES = ("native", "text")

log = logging.getLogger("flink_agents.react_agent")

_MODEL = "_react_chat_model"
_PROMPT = "_react_prompt"
_STATE = "_react"

_ROW_JSON_TYPES = {
    "INT": "integer",
    "BIGINT": "integer",
    "LONG": "integer",
    "SHORT": "integer",
    "BYTE": "integer",
    "TINYINT": "integer",
    "SMALLINT": "integer",
    "FLOAT": "number",
    "DOUBLE": "number",
    "DECIMAL": "number",
    "BOOLEAN": "boolean",
    "STRING": "string",
    "VARCHAR": "string",
    "CHAR": "string",
}


def _row_field_type(type_info: Any) -> str | None:
    text = str(type_info).upper()
    for name, json_type in _ROW_JSON_TYPES.items():
        if name in text:
            return json_type
    return None


def _schema_spec(output_schema: Any) -> dict[str, Any] | None:
    """The output schema as JSON-able action config."""
    if output_schema is None:
        return None
    if isinstance(output_schema, type) and issubclass(output_schema, BaseModel):
        spec = {
            "kind": "pydantic",
            "class": f"{output_schema.__module__}.{output_schema.__qualname__}",
            "json_schema": output_schema.model_json_schema(),
        }
        pickled = pickle_by_value(output_schema)  # a class of the job script travels by value
        if pickled is not None:
            spec["pickled"] = pickled
        return spec
    if hasattr(output_schema, "get_field_names") and hasattr(output_schema, "get_field_types"):
        names = list(output_schema.get_field_names())
        types = [_row_field_type(t) for t in output_schema.get_field_types()]
        props = {n: ({"type": t} if t else {}) for n, t in zip(names, types, strict=True)}
        return {
            "kind": "row",
            "fields": names,
            "types": types,
            "json_schema": {"type": "object", "properties": props, "required": names},
        }
    raise TypeError(
        f"output_schema must be a pydantic model class or a RowTypeInfo, got {output_schema!r}"
    )


def _instruction(schema: dict[str, Any]) -> str:
    return (
        "Answer with a single JSON object only, no other text, that matches this JSON "
        f"schema:\n{json.dumps(schema['json_schema'])}"
    )


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def _extract_json(text: str) -> Any:
    """The JSON value in a reply (also inside a code fence or surrounded by prose)."""
    text = text.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start >= 0 and end > start:
            return json.loads(text[start : end + 1])
        raise


def parse_output(content: str, schema: dict[str, Any]) -> Any:
    """Parse a model reply into the schema.

    Raises:
        ValueError: the reply is not JSON or does not match (the message says why).
    """
    try:
        data = _extract_json(content)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"the reply is JSON {type(data).__name__}, not an object")
    if schema["kind"] == "pydantic":
        if schema.get("pickled"):
            cls = load_by_value(schema["pickled"])
        else:
            cls = ResourceDescriptor(schema["class"]).clazz
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()
            )
            raise ValueError(problems) from None
    missing = [f for f in schema["fields"] if f not in data]
    if missing:
        raise ValueError(f"missing field(s) {missing}")
    from pyflink.common import Row  # only reached when the user passed a RowTypeInfo

    values = []
    for name, json_type in zip(schema["fields"], schema["types"], strict=True):
        value = data[name]
        if json_type == "integer" and not (isinstance(value, int) and not isinstance(value, bool)):
            raise ValueError(f"{name}: expected an integer, got {value!r}")
        if json_type == "number" and not isinstance(value, (int, float)):
            raise ValueError(f"{name}: expected a number, got {value!r}")
        if json_type == "string" and not isinstance(value, str):
            raise ValueError(f"{name}: expected a string, got {value!r}")
        values.append(value)
    row = Row(*values)
    row.set_field_names(schema["fields"])
    return row


def _input_variables(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return {"input": value.model_dump_json(), **value.model_dump()}
    if isinstance(value, dict):
        return {"input": json.dumps(value, default=str), **value}
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict):  # a pyflink Row
        fields = as_dict()
        return {"input": json.dumps(fields, default=str), **fields}
    return {"input": value}


def _validated_input(value: Any, spec: dict[str, Any] | None) -> Any:
    """The input checked against ``input_schema`` (a dict or JSON text becomes the model)."""
    if not spec:
        return value
    cls = (
        load_by_value(spec["pickled"])
        if spec.get("pickled")
        else ResourceDescriptor(spec["class"]).clazz
    )
    if isinstance(value, cls):
        return value
    try:
        if isinstance(value, (str, bytes)):
            return cls.model_validate_json(value)
        as_dict = getattr(value, "as_dict", None)
        return cls.model_validate(as_dict() if callable(as_dict) else value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc']) or 'input'}: {e['msg']}" for e in exc.errors()
        )
        raise InputSchemaError(
            f"input does not match input_schema {cls.__name__}: {problems}; input: {value!r}"[:600],
            action="react_start_action",
        ) from None


async def react_start_action(event: InputEvent, ctx: RunnerContext) -> None:
    """Turn the input into the chat request."""
    schema = ctx.get_action_config_value("schema")
    value = _validated_input(event.input, ctx.get_action_config_value("input_schema"))
    variables = _input_variables(value)
    prompt_name = ctx.get_action_config_value("prompt")
    if prompt_name:
        prompt = ctx.get_resource(prompt_name, ResourceType.PROMPT)
        assert isinstance(prompt, Prompt)
        messages = prompt.format_messages(MessageRole.USER, **variables)
    else:
        messages = [ChatMessage(role=MessageRole.USER, content=str(variables["input"]))]
    if schema:
        messages.insert(0, ChatMessage(role=MessageRole.SYSTEM, content=_instruction(schema)))
    history = _history_config(ctx)
    if history is not None:
        ctx.sensory_memory.set(
            f"{_STATE}.turn_users", [m.content for m in messages if m.role == MessageRole.USER]
        )
        messages = with_history(
            messages, history.load(ctx.short_term_memory.get(history.memory_path))
        )
    if _text_mode(ctx):
        setup = ctx.get_resource(ctx.get_action_config_value("model"), ResourceType.CHAT_MODEL)
        # Listing tools may start an MCP server and ask it: off the event loop.
        tools = await asyncio.to_thread(setup.get_tools)  # type: ignore[attr-defined]
        messages.insert(0, ChatMessage(role=MessageRole.SYSTEM, content=tools_prompt(tools)))
        ctx.sensory_memory.set(f"{_STATE}.tool_names", [t.name for t in tools])
    ctx.sensory_memory.set(f"{_STATE}.messages", [m.model_dump(mode="json") for m in messages])
    ctx.sensory_memory.set(f"{_STATE}.retries", 0)
    ctx.sensory_memory.set(f"{_STATE}.iterations", 0)
    ctx.send_event(_request(ctx, messages))


def _history_config(ctx: RunnerContext) -> ChatHistory | None:
    spec = ctx.get_action_config_value("chat_history")
    return ChatHistory.model_validate(spec) if spec else None


def _keep_turn(ctx: RunnerContext, content: str, trace: dict[str, Any]) -> bool:
    """Add the finished turn to the key's history. Returns False when older turns must be
    summarized first: a summary request was sent, and the output waits for its answer."""
    history = _history_config(ctx)
    if history is None:
        return True
    users = [
        ChatMessage(role=MessageRole.USER, content=c)
        for c in ctx.sensory_memory.get(f"{_STATE}.turn_users") or []
    ]
    messages = [
        *history.load(ctx.short_term_memory.get(history.memory_path)),
        *history_turn(users, ChatMessage(role=MessageRole.ASSISTANT, content=content)),
    ]
    if history.over(messages):
        older, messages = history.split(messages)
        if history.overflow == "summarize" and older:
            request = ChatRequestEvent(
                model=ctx.get_action_config_value("model"),
                messages=summary_request(older),
                tools_in_text=True,  # type: ignore[call-arg]
            )
            ctx.sensory_memory.set(
                f"{_STATE}.summary",
                {
                    "request_id": str(request.id),
                    "kept": history.dump(messages),
                    "content": content,
                    "trace": trace,
                },
            )
            ctx.send_event(request)
            return False
    ctx.short_term_memory.set(history.memory_path, history.dump(messages))
    return True


def _summarized(event: ChatResponseEvent, ctx: RunnerContext) -> dict[str, Any] | None:
    """The waiting turn when ``event`` answers the history's summary request."""
    pending = ctx.sensory_memory.get(f"{_STATE}.summary")
    if not pending or pending["request_id"] != str(event.request_id):
        return None
    history = _history_config(ctx)
    assert history is not None
    kept = history.load(pending["kept"])
    ctx.short_term_memory.set(
        history.memory_path,
        history.dump([summary_message(event.response.content or ""), *kept]),
    )
    ctx.sensory_memory.set(f"{_STATE}.summary", None)
    return dict(pending)


def _text_mode(ctx: RunnerContext) -> bool:
    return ctx.get_action_config_value("tool_calling") == "text"


def _request(ctx: RunnerContext, messages: list[ChatMessage]) -> ChatRequestEvent:
    schema = ctx.get_action_config_value("schema")
    text = _text_mode(ctx)
    return ChatRequestEvent(
        model=ctx.get_action_config_value("model"),
        messages=messages,
        # In text mode the schema instruction is in the messages; the reply is ReAct text.
        output_schema=schema["json_schema"] if schema and not text else None,
        max_iterations=ctx.get_action_config_value("max_iterations"),  # type: ignore[call-arg]
        tools_in_text=text,
        trace=bool(ctx.get_action_config_value("return_reasoning")) and not text,
    )


def _history(ctx: RunnerContext) -> list[ChatMessage]:
    return [
        ChatMessage.model_validate(m) for m in ctx.sensory_memory.get(f"{_STATE}.messages") or []
    ]


def _send_again(ctx: RunnerContext, history: list[ChatMessage]) -> None:
    ctx.sensory_memory.set(f"{_STATE}.messages", [m.model_dump(mode="json") for m in history])
    ctx.send_event(_request(ctx, history))


def _note_trace(ctx: RunnerContext, key: str, item: Any) -> None:
    path = f"{_STATE}.{key}"
    ctx.sensory_memory.set(path, [*(ctx.sensory_memory.get(path) or []), item])


def _strategy(ctx: RunnerContext) -> ErrorHandlingStrategy:
    configured = ctx.get_action_config_value("strategy")
    if configured is None:
        return ErrorHandlingStrategy(ctx.config.get(AgentConfigOptions.ERROR_HANDLING_STRATEGY))
    return ErrorHandlingStrategy(configured)


def _snippet(content: str) -> str:
    return content if len(content) <= 300 else content[:300] + "..."


async def react_stop_action(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    """Parse the final answer into the output schema and emit it (text mode: run the
    ReAct step the reply asks for)."""
    pending = _summarized(event, ctx)
    if pending is not None:
        schema = ctx.get_action_config_value("schema")
        content = pending["content"]
        _emit(ctx, parse_output(content, schema) if schema else content, pending["trace"])
        return
    if _text_mode(ctx):
        await _text_step(event, ctx)
        return
    trace = {k: event.response.extra_args.get(k, []) for k in ("reasoning", "tool_trace")}
    await _finish(event, ctx, event.response.content, trace)


async def _finish(
    event: ChatResponseEvent, ctx: RunnerContext, content: str, trace: dict[str, Any]
) -> None:
    """Emit ``content`` (parsed into the schema when there is one) or handle its problem."""
    schema = ctx.get_action_config_value("schema")
    problem = None
    if not schema:
        output: Any = content
    else:
        try:
            output = parse_output(content, schema)
        except ValueError as exc:
            problem = str(exc)
    if problem is None:
        if _keep_turn(ctx, content, trace):
            _emit(ctx, output, trace)
        return

    strategy = _strategy(ctx)
    message = (
        f"model reply does not match the output schema: {problem}; reply: {_snippet(content)!r}"
    )
    if strategy is ErrorHandlingStrategy.RETRY:
        retries = int(ctx.sensory_memory.get(f"{_STATE}.retries") or 0)
        if retries < int(ctx.get_action_config_value("max_retries")):
            # Ask the model again, showing it the problem (parsing the same reply again, as
            # the runtime's own retry of this action would, cannot help).
            ctx.sensory_memory.set(f"{_STATE}.retries", retries + 1)
            await asyncio.sleep(float(ctx.get_action_config_value("retry_wait")) * 2**retries)
            history = [
                *_history(ctx),
                event.response,
                ChatMessage(
                    role=MessageRole.USER,
                    content=f"That reply was invalid: {problem}. {_instruction(schema)}",
                ),
            ]
            _send_again(ctx, history)
            return
        message += f" (after {retries} retries)"
    _fail(event, ctx, message, strategy)


def _emit(ctx: RunnerContext, output: Any, trace: dict[str, Any]) -> None:
    if ctx.get_action_config_value("return_reasoning"):
        output = {"output": output, **trace}
    ctx.send_event(OutputEvent(output=output))


def _fail(event: Event, ctx: RunnerContext, message: str, strategy: ErrorHandlingStrategy) -> None:
    """IGNORE: log and send an error event; otherwise raise OutputSchemaError."""
    if strategy is ErrorHandlingStrategy.IGNORE:
        log.error("ignored: %s [key=%r, event=%s]", message, ctx.key, event.id)
        ctx.send_event(
            ErrorEvent(
                key=ctx.key if isinstance(ctx.key, (str, int)) else repr(ctx.key),
                action="react_stop_action",
                failed_event_id=str(event.id),
                failed_event_type=event.type,
                error_type="OutputSchemaError",
                error=message,
            )
        )
        return
    raise OutputSchemaError(
        message, key=ctx.key, action="react_stop_action", event_id=str(event.id)
    )


async def _text_step(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    """One text ReAct step: an answer ends the loop, an action is run, anything else goes
    back to the model as an observation."""
    content = event.response.content or ""
    if event.response.extra_args.get("final_answer"):  # a hook's hc.stop(answer)
        trace = {
            k: ctx.sensory_memory.get(f"{_STATE}.{k}") or [] for k in ("reasoning", "tool_trace")
        }
        await _finish(event, ctx, content, trace)
        return
    iterations = int(ctx.sensory_memory.get(f"{_STATE}.iterations") or 0) + 1
    ctx.sensory_memory.set(f"{_STATE}.iterations", iterations)
    try:
        step = parse_react(content, ctx.sensory_memory.get(f"{_STATE}.tool_names"))
    except ValueError as exc:
        if iterations >= int(ctx.get_action_config_value("max_iterations")):
            _fail(
                event,
                ctx,
                f"text ReAct reply did not parse after {iterations} model calls "
                f"(max_iterations): {exc}; last reply: {_snippet(content)!r}",
                ErrorHandlingStrategy.FAIL
                if _strategy(ctx) is ErrorHandlingStrategy.RETRY
                else _strategy(ctx),
            )
            return
        history = [
            *_history(ctx),
            ChatMessage(role=MessageRole.ASSISTANT, content=content),
            ChatMessage(role=MessageRole.USER, content=f"Observation: invalid reply: {exc}"),
        ]
        _send_again(ctx, history)
        return
    if step.thought:
        _note_trace(ctx, "reasoning", step.thought)
    if step.answer is not None:
        trace = {
            k: ctx.sensory_memory.get(f"{_STATE}.{k}") or [] for k in ("reasoning", "tool_trace")
        }
        await _finish(event, ctx, step.answer, trace)
        return
    if iterations >= int(ctx.get_action_config_value("max_iterations")):
        _fail(
            event,
            ctx,
            f"text ReAct reached max_iterations ({iterations} model calls) without an "
            f"answer; last reply: {_snippet(content)!r}",
            ErrorHandlingStrategy.FAIL
            if _strategy(ctx) is ErrorHandlingStrategy.RETRY
            else _strategy(ctx),
        )
        return
    request = ToolRequestEvent(
        model=ctx.get_action_config_value("model"),
        tool_calls=[
            {
                "id": f"react_{iterations}",
                "type": "function",
                "function": {"name": step.action, "arguments": step.action_input or {}},
            }
        ],
        # Only the tools the prompt listed may run: any other name the reply gives is
        # answered as an unknown tool (flink_agents.plan.actions.tool_authorization).
        offered_tools=list(ctx.sensory_memory.get(f"{_STATE}.tool_names") or []),  # type: ignore[call-arg]
    )
    ctx.sensory_memory.set(f"{_STATE}.pending", str(request.id))
    ctx.sensory_memory.set(
        f"{_STATE}.messages",
        [*ctx.sensory_memory.get(f"{_STATE}.messages"), {"role": "assistant", "content": content}],
    )
    _note_trace(ctx, "tool_trace", {"tool": step.action, "arguments": step.action_input})
    ctx.send_event(request)


def react_observe_action(event: ToolResponseEvent, ctx: RunnerContext) -> None:
    """Text mode: the tool's result goes back to the model as the observation."""
    if str(event.request_id) != ctx.sensory_memory.get(f"{_STATE}.pending"):
        return  # a native tool loop's response (the chat action's)
    ctx.sensory_memory.set(f"{_STATE}.pending", None)
    result = next(iter(event.responses.values()), "no result")
    text = result if isinstance(result, str) else json.dumps(result, default=str)
    trace = ctx.sensory_memory.get(f"{_STATE}.tool_trace") or []
    if trace:
        trace[-1] = {**trace[-1], "result": text, "is_error": bool(event.errors)}
        ctx.sensory_memory.set(f"{_STATE}.tool_trace", trace)
    history = [*_history(ctx), ChatMessage(role=MessageRole.USER, content=observation(text))]
    _send_again(ctx, history)


def _history_option(chat_history: ChatHistory | int | None) -> dict[str, Any] | None:
    if chat_history is None:
        return None
    if isinstance(chat_history, bool) or not isinstance(chat_history, (int, ChatHistory)):
        raise TypeError(
            f"chat_history must be a ChatHistory or a number of messages, got {chat_history!r}"
        )
    if isinstance(chat_history, int):
        chat_history = ChatHistory(max_messages=chat_history)
    return chat_history.model_dump()


class ReActAgent(Agent):
    """An agent that answers each input with a chat model, using its tools as needed.

    Args:
        chat_model: descriptor of a chat model *setup* (its ``tools`` are offered to the
            model), or the name of a chat model setup added to the environment.
        prompt: optional prompt; its placeholders are filled from the input's fields
            (pydantic model, dict or Row) or ``{input}``.
        output_schema: optional pydantic model class or ``RowTypeInfo`` for the answer.
        error_handling_strategy: what to do with a reply that does not match the schema
            (default: the configured ``error-handling-strategy``).
        max_retries: re-asks under RETRY.
        retry_wait: seconds before the first re-ask (doubles each time).
        max_iterations: model calls per input in the tool loop.
        tool_calling: ``"native"`` (the model's tool-call API) or ``"text"`` (tools in
            the prompt, ReAct text parsed).
        return_reasoning: output ``{"output", "reasoning", "tool_trace"}``.
        input_schema: optional pydantic model class every input must match.
        model_interceptors: model interceptors (module-level functions or classes).
        tool_interceptors: tool interceptors.
        chat_history: keep each key's conversation across its inputs (a
            :class:`~flink_agents.api.chat_history.ChatHistory`, or a number of messages).
        name: the agent's name.
        description: what the agent does.
    """

    def __init__(
        self,
        chat_model: ResourceDescriptor | str,
        prompt: Prompt | None = None,
        output_schema: Any = None,
        *,
        error_handling_strategy: ErrorHandlingStrategy | str | None = None,
        max_retries: int = 3,
        retry_wait: float = 0.5,
        max_iterations: int = 10,
        tool_calling: str = "native",
        return_reasoning: bool = False,
        input_schema: type[BaseModel] | None = None,
        model_interceptors: list[Any] | tuple[Any, ...] = (),
        tool_interceptors: list[Any] | tuple[Any, ...] = (),
        chat_history: ChatHistory | int | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        super().__init__()
        if tool_calling not in TOOL_CALLING_MODES:
            raise ValueError(
                f"tool_calling must be one of {TOOL_CALLING_MODES}, got {tool_calling!r}"
            )
        if int(max_iterations) < 1:
            raise ValueError(f"max_iterations must be at least 1, got {max_iterations!r}")
        if input_schema is not None and not (
            isinstance(input_schema, type) and issubclass(input_schema, BaseModel)
        ):
            raise TypeError(f"input_schema must be a pydantic model class, got {input_schema!r}")
        self.name = name
        self.description = description
        model_name = chat_model if isinstance(chat_model, str) else _MODEL
        if not isinstance(chat_model, str):
            self.add_resource(_MODEL, ResourceType.CHAT_MODEL, chat_model)
        if prompt is not None:
            self.add_resource(_PROMPT, ResourceType.PROMPT, prompt)
        input_spec = _schema_spec(input_schema) if input_schema is not None else None
        config = {
            "model": model_name,
            "prompt": _PROMPT if prompt is not None else None,
            "schema": _schema_spec(output_schema),
            "strategy": None
            if error_handling_strategy is None
            else ErrorHandlingStrategy(error_handling_strategy).value,
            "max_retries": max_retries,
            "retry_wait": retry_wait,
            "max_iterations": max_iterations,
            "tool_calling": tool_calling,
            "return_reasoning": bool(return_reasoning),
            "input_schema": input_spec,
            "chat_history": _history_option(chat_history),
        }
        self.add_action("react_start_action", [InputEvent], react_start_action, **config)
        self.add_action("react_stop_action", [ChatResponseEvent], react_stop_action, **config)
        if tool_calling == "text":
            self.add_action(
                "react_observe_action", [ToolResponseEvent], react_observe_action, **config
            )
        for interceptor in model_interceptors:
            self.add_model_interceptor(interceptor)
        for interceptor in tool_interceptors:
            self.add_tool_interceptor(interceptor)
