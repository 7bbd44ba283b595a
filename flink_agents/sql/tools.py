"""Tools that call a function of Flink's catalog (``CREATE TOOL ... USING FUNCTION f``): a
Python scalar function (below) or a Java one (:func:`java_function_tool`).

Java functions (``CREATE FUNCTION f AS 'com.acme.F' [LANGUAGE JAVA] [USING JAR '...']``) run
through the Java bridge: the tool is a :class:`~flink_agents.api.tools.java_tool.JavaTool` of
``org.flinkagents.bridge.ScalarFunctionTool``, which creates the function in the TaskManager
and calls its one ``eval`` method. The bridge needs ``python.execution-mode`` ``thread`` (the
default); in process mode such a tool is refused when it is created. Its schema (one argument
per ``eval`` parameter, named by ``@ArgumentHint(name = ...)`` or the parameter's name) is
read from the class when the tool is created, on the client.

Python functions:

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
from flink_agents.api.tools.java_tool import JavaTool
from flink_agents.api.tools.tool import Tool, ToolMetadata, ToolType
from flink_agents.errors import CatalogError

#: The bridge class that calls a Java scalar function as a tool.
SCALAR_FUNCTION_TOOL = "org.flinkagents.bridge.ScalarFunctionTool"


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


def java_function_tool(
    name: str, function: str, function_class: str, metadata: dict[str, Any]
) -> JavaTool:
    """The tool ``name`` calling the Java scalar function ``function`` (class
    ``function_class``), with the metadata read from the class on the client."""
    description = str(metadata.get("description") or "")
    java_config: dict[str, Any] = {  # the Java tool's open(configJson)
        "function_class": function_class,
        "function": function,
        "tool_name": name,
        "tool_description": description,
    }
    return JavaTool(
        java_clazz=SCALAR_FUNCTION_TOOL,
        metadata=ToolMetadata(
            name=name,
            description=description,
            args_schema=dict(metadata.get("args_schema") or {}),
        ),
        **java_config,
    )


def function_tool(host: Any, name: str, function: str, description: str | None) -> Tool:
    """The tool ``name`` over the Flink function ``function``, Python or Java.

    Args:
        host: Flink's side (:class:`~flink_agents.sql.executor.Host`).
        name: the tool's name.
        function: the function's identifier as stored.
        description: the tool's ``description`` option.

    Raises:
        CatalogError: the function cannot be a tool (the message says why); a Java function
            in process mode.
    """
    if host.function_language(function) == "java":
        mode = host.execution_mode()
        if mode != "thread":
            raise CatalogError(
                f"tool {name} calls the Java function {function}, which runs through the Java "
                f"bridge and needs python.execution-mode thread (this job: {mode}): SET "
                "'python.execution-mode' = 'thread' (the default), or use a Python function "
                "(CREATE FUNCTION ... LANGUAGE PYTHON)"
            )
        function_class, metadata = host.java_function(function, name, description or "")
        return java_function_tool(name, function, function_class, metadata)
    return FlinkFunctionTool.create(name, function, host.python_function(function), description)
