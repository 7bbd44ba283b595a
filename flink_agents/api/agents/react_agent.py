"""ReActAgent: a ready-made agent that reasons with a chat model and calls tools natively.

The input becomes the user message (formatted into ``prompt`` when given: a pydantic model's
or dict's fields, or ``{input}``, fill its placeholders). The chat model setup's tools are
offered to the model; the built-in chat action runs the tool loop. With an
``output_schema`` the model is told to answer with JSON matching it, and the reply is
parsed and validated into the schema (a pydantic model instance, or a ``Row`` for a
``RowTypeInfo``). A reply that does not match follows the error handling strategy:
FAIL raises :class:`~flink_agents.errors.OutputSchemaError`; RETRY asks the model again,
showing it the problem (at most ``max_retries`` times, with exponential backoff); IGNORE
logs the problem, sends an :class:`~flink_agents.api.events.event.ErrorEvent` and outputs
nothing for that input.
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
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.core_options import ErrorHandlingStrategy
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import ErrorEvent, InputEvent, OutputEvent
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.errors import OutputSchemaError

__all__ = ["ErrorHandlingStrategy", "ReActAgent"]

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


def react_start_action(event: InputEvent, ctx: RunnerContext) -> None:
    """Turn the input into the chat request."""
    schema = ctx.get_action_config_value("schema")
    variables = _input_variables(event.input)
    prompt_name = ctx.get_action_config_value("prompt")
    if prompt_name:
        prompt = ctx.get_resource(prompt_name, ResourceType.PROMPT)
        assert isinstance(prompt, Prompt)
        messages = prompt.format_messages(MessageRole.USER, **variables)
    else:
        messages = [ChatMessage(role=MessageRole.USER, content=str(variables["input"]))]
    if schema:
        messages.insert(0, ChatMessage(role=MessageRole.SYSTEM, content=_instruction(schema)))
    ctx.sensory_memory.set(f"{_STATE}.messages", [m.model_dump(mode="json") for m in messages])
    ctx.sensory_memory.set(f"{_STATE}.retries", 0)
    ctx.send_event(_request(ctx, messages))


def _request(ctx: RunnerContext, messages: list[ChatMessage]) -> ChatRequestEvent:
    schema = ctx.get_action_config_value("schema")
    return ChatRequestEvent(
        model=ctx.get_action_config_value("model"),
        messages=messages,
        output_schema=schema["json_schema"] if schema else None,
        max_iterations=ctx.get_action_config_value("max_iterations"),  # type: ignore[call-arg]
    )


async def react_stop_action(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    """Parse the final answer into the output schema and emit it."""
    schema = ctx.get_action_config_value("schema")
    content = event.response.content
    if not schema:
        ctx.send_event(OutputEvent(output=content))
        return
    try:
        output = parse_output(content, schema)
    except ValueError as exc:
        problem = str(exc)
    else:
        ctx.send_event(OutputEvent(output=output))
        return

    strategy = ErrorHandlingStrategy(ctx.get_action_config_value("strategy"))
    snippet = content if len(content) <= 300 else content[:300] + "..."
    message = f"model reply does not match the output schema: {problem}; reply: {snippet!r}"
    if strategy is ErrorHandlingStrategy.RETRY:
        retries = int(ctx.sensory_memory.get(f"{_STATE}.retries") or 0)
        if retries < int(ctx.get_action_config_value("max_retries")):
            ctx.sensory_memory.set(f"{_STATE}.retries", retries + 1)
            await asyncio.sleep(float(ctx.get_action_config_value("retry_wait")) * 2**retries)
            history = [
                ChatMessage.model_validate(m)
                for m in ctx.sensory_memory.get(f"{_STATE}.messages") or []
            ]
            history += [
                event.response,
                ChatMessage(
                    role=MessageRole.USER,
                    content=f"That reply was invalid: {problem}. {_instruction(schema)}",
                ),
            ]
            ctx.send_event(_request(ctx, history))
            return
        message += f" (after {retries} retries)"
    if strategy is ErrorHandlingStrategy.IGNORE:
        log.error("ignored: %s [key=%r, event=%s]", message, ctx.key, event.id)
        ctx.send_event(
            ErrorEvent(
                key=ctx.key if isinstance(ctx.key, (str, int)) else repr(ctx.key),
                action="react_stop_action",
                failed_event_id=str(event.id),
                failed_event_type=event.event_type,
                error_type="OutputSchemaError",
                error=message,
            )
        )
        return
    raise OutputSchemaError(
        message, key=ctx.key, action="react_stop_action", event_id=str(event.id)
    )


class ReActAgent(Agent):
    """An agent that answers each input with a chat model, using its tools as needed.

    Args:
        chat_model: descriptor of a chat model *setup* (its ``tools`` are offered to the
            model), or the name of a chat model setup added to the environment.
        prompt: optional prompt; its placeholders are filled from the input's fields
            (pydantic model, dict or Row) or ``{input}``.
        output_schema: optional pydantic model class or ``RowTypeInfo`` for the answer.
        error_handling_strategy: what to do with a reply that does not match the schema.
        max_retries: re-asks under RETRY.
        retry_wait: seconds before the first re-ask (doubles each time).
        max_iterations: model calls per input in the tool loop.
    """

    def __init__(
        self,
        chat_model: ResourceDescriptor | str,
        prompt: Prompt | None = None,
        output_schema: Any = None,
        *,
        error_handling_strategy: ErrorHandlingStrategy | str = ErrorHandlingStrategy.FAIL,
        max_retries: int = 3,
        retry_wait: float = 0.5,
        max_iterations: int = 10,
    ) -> None:
        super().__init__()
        model_name = chat_model if isinstance(chat_model, str) else _MODEL
        if not isinstance(chat_model, str):
            self.add_resource(_MODEL, ResourceType.CHAT_MODEL, chat_model)
        if prompt is not None:
            self.add_resource(_PROMPT, ResourceType.PROMPT, prompt)
        config = {
            "model": model_name,
            "prompt": _PROMPT if prompt is not None else None,
            "schema": _schema_spec(output_schema),
            "strategy": ErrorHandlingStrategy(error_handling_strategy).value,
            "max_retries": max_retries,
            "retry_wait": retry_wait,
            "max_iterations": max_iterations,
        }
        self.add_action("react_start_action", [InputEvent], react_start_action, **config)
        self.add_action("react_stop_action", [ChatResponseEvent], react_stop_action, **config)
