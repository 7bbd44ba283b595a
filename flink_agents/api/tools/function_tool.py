"""Tools made from Python functions.

The argument schema is built by pydantic from the signature (type hints and defaults); the
descriptions come from the docstring (Google, NumPy, reST or Epydoc style, parsed by
``docstring_parser``). Calls are validated against the same pydantic model.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import docstring_parser
from pydantic import BaseModel, Field, PrivateAttr, ValidationError, create_model, field_validator
from pydantic.fields import FieldInfo

from flink_agents.api._function import FunctionRef, function_ref, is_async, unwrap
from flink_agents.api.decorators import RESOURCE_ATTR
from flink_agents.api.tools.tool import Tool, ToolMetadata, ToolType
from flink_agents.api.tools.tool_parameter_injection import (
    InjectedArg,
    merge_injected_args,
    normalize_injected_args,
    validate_injected_arg_names,
)
from flink_agents.errors import ToolArgumentError


def _args_model(func: Callable[..., Any]) -> tuple[type[BaseModel], str]:
    """The pydantic model of ``func``'s arguments and its description."""
    doc = docstring_parser.parse(inspect.getdoc(func) or "")
    param_docs = {p.arg_name: p.description for p in doc.params}
    try:
        hints = typing.get_type_hints(func)
    except (NameError, TypeError):  # unresolvable forward references: use raw annotations
        hints = dict(getattr(func, "__annotations__", {}))
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(func).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (annotation, FieldInfo(default=default, description=param_docs.get(name)))
    model = create_model(f"{func.__name__}_arguments", **fields)
    parts = [doc.short_description or "", doc.long_description or ""]
    description = "\n\n".join(p for p in parts if p)
    return model, description


def _clean_schema(schema: dict[str, Any], hidden: Any = ()) -> dict[str, Any]:
    """The model's schema without titles, and without the ``hidden`` (injected)
    parameters: the model is never told of them."""
    schema = dict(schema)
    schema.pop("title", None)
    props = {}
    for name, prop in schema.get("properties", {}).items():
        if name in hidden:
            continue
        prop = dict(prop)
        prop.pop("title", None)
        props[name] = prop
    schema["properties"] = props
    if hidden and "required" in schema:
        required = [name for name in schema["required"] if name not in hidden]
        if required:
            schema["required"] = required
        else:
            del schema["required"]
    schema.setdefault("type", "object")
    return schema


class FunctionTool(Tool):
    """A tool that calls a Python function.

    Attributes:
        func: reference to the function (module + qualname) so the tool travels as JSON.
        injected_args: parameters the runtime fills in (not in ``metadata.args_schema``;
            see :mod:`flink_agents.api.tools.tool_parameter_injection`).
    """

    func: FunctionRef
    injected_args: dict[str, InjectedArg] = Field(
        default_factory=dict, exclude_if=lambda injected: not injected
    )
    _callable: Callable[..., Any] | None = PrivateAttr(default=None)
    _model: type[BaseModel] | None = PrivateAttr(default=None)

    @field_validator("injected_args", mode="before")
    @classmethod
    def _normalized(cls, value: Any) -> Any:
        return normalize_injected_args(value)

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.FUNCTION

    @classmethod
    def from_callable(
        cls,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        allow_pickle: bool = False,
        timeout: float | None = None,
        requires_approval: bool | None = None,
        injected_args: dict[str, Any] | None = None,
        side_effects: bool | None = None,
    ) -> FunctionTool:
        """Make a tool from ``func``.

        Args:
            func: a module-level function or static method (lambdas need ``allow_pickle``).
            name: tool name (default: the function's name).
            description: description (default: from the docstring).
            allow_pickle: store the function with cloudpickle if it has no importable name.
            timeout: seconds a call may take (default: ``@tool(timeout=...)``, else the
                ``tool.timeout`` option).
            requires_approval: a human approves each call first (default:
                ``@tool(requires_approval=...)``, else False).
            injected_args: parameters the runtime fills in (with those of
                ``@tool(injected_args=...)``; the same parameter twice must agree).
            side_effects: the tool changes the world (default: ``@tool(side_effects=...)``,
                else False); see ``Tool.side_effects``.

        Raises:
            TypeError: malformed ``injected_args``.
            ValueError: an injected parameter the function does not have, or given twice
                differently.
        """
        func = unwrap(func)
        marker = getattr(func, RESOURCE_ATTR, None)
        options = dict(getattr(marker, "options", None) or {})
        if timeout is not None:
            options["timeout"] = timeout
        if requires_approval is not None:
            options["requires_approval"] = requires_approval
        injected = merge_injected_args(
            options.pop("injected_args", None),
            normalize_injected_args(injected_args),
            tool_name=name or func.__name__,
        )
        validate_injected_arg_names(func, injected)
        if injected:
            options["injected_args"] = injected
        if side_effects is not None:
            options["side_effects"] = side_effects
        model, doc = _args_model(func)
        metadata = ToolMetadata(
            name=name or func.__name__,
            description=description if description is not None else doc,
            args_schema=_clean_schema(model.model_json_schema(), hidden=injected),
        )
        tool = cls(metadata=metadata, func=function_ref(func, allow_pickle=allow_pickle), **options)
        tool._callable = func
        tool._model = model
        return tool

    @property
    def function(self) -> Callable[..., Any]:
        """The Python function, imported on first use."""
        if self._callable is None:
            self._callable = unwrap(self.func.resolve())
        return self._callable

    def _validated(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self._model is None:
            self._model, _ = _args_model(self.function)
        try:
            values = self._model.model_validate(kwargs)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(x) for x in e['loc']) or '<arguments>'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ToolArgumentError(
                f"tool {self.name!r} called with invalid arguments {kwargs!r}: {problems}. "
                f"Expected schema: {self.metadata.args_schema}"
            ) from None
        extra = set(kwargs) - set(self._model.model_fields)
        if extra:
            raise ToolArgumentError(
                f"tool {self.name!r} got unexpected argument(s) {sorted(extra)}; "
                f"it takes {sorted(self._model.model_fields)}"
            )
        return {name: getattr(values, name) for name in self._model.model_fields}

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Validate the arguments, then call the function."""
        if args:
            names = list(inspect.signature(self.function).parameters)
            kwargs.update(zip(names, args, strict=False))
        result = self.function(**self._validated(kwargs))
        if inspect.isawaitable(result):
            raise TypeError(f"tool {self.name!r} is async; use acall()")
        return result

    async def acall(self, **kwargs: Any) -> Any:
        """Run the tool; an ``async def`` function is awaited, a plain one runs in a thread."""
        if is_async(self.function):
            return await self.function(**self._validated(kwargs))
        return await super().acall(**kwargs)
