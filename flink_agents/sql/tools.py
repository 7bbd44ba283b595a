"""Tools that call a Python function of Flink's catalog (``CREATE TOOL ... USING FUNCTION f``).

How the function is found again: Flink's function catalog holds every Python scalar
function, however it was registered (``CREATE [TEMPORARY] FUNCTION ... LANGUAGE PYTHON``,
``create_temporary_function(name, udf)``, ``create_temporary_system_function``), as a Java
``PythonScalarFunction`` whose ``getSerializedPythonFunction()`` are the cloudpickle bytes
PyFlink ships to its Python workers: a ``DelegatingScalarFunction`` around a plain function
(``.func``), or the user's ``ScalarFunction`` instance (``.eval``). The tool keeps those bytes
(base64, in the plan) and loads them on first use, on the client for the schema and in the
task for the calls, just as PyFlink's own workers do. One way for every registration path,
and the function need not be importable by name (a lambda or a closure works).

The model sees the tool's name (the catalog tool's name), a description (the tool's
``description`` option, else the function's docstring) and the parameters with their types
and descriptions from the function's signature and docstring. Calls are validated against
that schema, as for :class:`~flink_agents.api.tools.function_tool.FunctionTool`. A
``ScalarFunction``'s ``open()`` is not called.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Callable
from typing import Any

from pydantic import PrivateAttr

from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.tools.tool import Tool, ToolMetadata, ToolType
from flink_agents.errors import CatalogError


def load_python_function(serialized: bytes, function: str = "") -> Callable[..., Any]:
    """The Python callable of a Flink Python scalar function's serialized form.

    Raises:
        CatalogError: the bytes do not load (a module the function needs is missing) or
            hold no callable.
    """
    import cloudpickle

    try:
        obj = cloudpickle.loads(serialized)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means the same to users
        raise CatalogError(
            f"cannot load the Python function {function}: {type(exc).__name__}: {exc}"
        ) from None
    inner = getattr(obj, "func", None)  # PyFlink's DelegatingScalarFunction
    if callable(inner):
        return inner
    evaluate = getattr(obj, "eval", None)  # a ScalarFunction instance
    if callable(evaluate):
        return evaluate
    if callable(obj):
        return obj
    raise CatalogError(f"function {function} is not a Python scalar function")


class FlinkFunctionTool(Tool):
    """A tool calling a Python scalar function of Flink's catalog.

    Attributes:
        function: the Flink function's identifier (for messages).
        serialized: base64 of the function's serialized form (Flink's cloudpickle bytes).
    """

    function: str
    serialized: str
    _delegate: FunctionTool | None = PrivateAttr(default=None)

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.FUNCTION

    @classmethod
    def create(
        cls, name: str, function: str, serialized: bytes, description: str | None = None
    ) -> FlinkFunctionTool:
        """The tool ``name`` over the function ``function`` (its serialized bytes).

        Raises:
            CatalogError: the function cannot be loaded or described.
        """
        delegate = _delegate(
            name, function, load_python_function(serialized, function), description
        )
        tool = cls(
            metadata=delegate.metadata,
            function=function,
            serialized=base64.b64encode(serialized).decode("ascii"),
        )
        tool._delegate = delegate
        return tool

    def _tool(self) -> FunctionTool:
        if self._delegate is None:
            func = load_python_function(base64.b64decode(self.serialized), self.function)
            self._delegate = _delegate(self.name, self.function, func, self.metadata.description)
        return self._delegate

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Validate the arguments against the schema, then call the function."""
        return self._tool().call(*args, **kwargs)

    async def acall(self, **kwargs: Any) -> Any:
        """Run the function in a worker thread (``async def`` functions are awaited)."""
        return await self._tool().acall(**kwargs)


def _delegate(
    name: str, function: str, func: Callable[..., Any], description: str | None
) -> FunctionTool:
    try:
        inspect.signature(func)
    except (TypeError, ValueError):
        raise CatalogError(
            f"function {function} has no Python signature to describe it to a model"
        ) from None
    try:
        tool = FunctionTool.from_callable(
            func, name=name, description=description or None, allow_pickle=True
        )
    except Exception as exc:  # noqa: BLE001 - a signature pydantic cannot model
        raise CatalogError(
            f"cannot make a tool of function {function}: {type(exc).__name__}: {exc}"
        ) from None
    if not tool.metadata.description:
        tool.metadata = ToolMetadata(
            name=name,
            description=f"Calls the Flink function {function}.",
            args_schema=tool.metadata.args_schema,
        )
    return tool
