"""References to Python functions that survive JSON: module + qualname, or cloudpickle.

Private: used by serializable tools and by the plan compiler.
"""

from __future__ import annotations

import base64
import importlib
import inspect
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel


class FunctionRef(BaseModel):
    """Where to find a function again on another machine.

    Attributes:
        module: the module that defines it.
        qualname: its qualified name inside the module (``Class.method`` for methods).
        pickled: base64 cloudpickle bytes, only when the function has no importable name and
            the cloudpickle fallback was asked for explicitly.
    """

    module: str
    qualname: str
    pickled: str | None = None

    def resolve(self) -> Callable[..., Any]:
        """Import the function back."""
        if self.pickled is not None:
            import cloudpickle

            func: Any = cloudpickle.loads(base64.b64decode(self.pickled))
            return func  # type: ignore[no-any-return]
        obj: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, staticmethod):
            obj = obj.__func__
        return obj  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return f"{self.module}:{self.qualname}"


def unwrap(func: Any) -> Any:
    """Undo ``staticmethod``/``classmethod`` wrapping."""
    while isinstance(func, (staticmethod, classmethod)):
        func = func.__func__
    return func


def reference_problem(func: Callable[..., Any]) -> str | None:
    """Why ``func`` cannot be referenced by module + qualname, or None if it can."""
    func = unwrap(func)
    name = getattr(func, "__qualname__", None)
    module = getattr(func, "__module__", None)
    if name is None or module is None:
        return f"{func!r} has no importable name"
    if "<lambda>" in name:
        return f"{module}.{name} is a lambda"
    if "<locals>" in name:
        return f"{module}.{name} is defined inside a function (a closure)"
    if module == "__main__":
        # Started with `python -m pkg.mod`: workers import pkg.mod (a second copy of the
        # script's module, so no identity check). Started as a file: fine in this process
        # (local environment); the Flink environment rejects plans that reference
        # __main__, because its workers cannot import the script.
        return None
    try:
        obj: Any = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return f"{module}.{name} cannot be imported back by that name"
    if unwrap(obj) is not func and getattr(unwrap(obj), "__wrapped__", None) is not func:
        return f"{module}.{name} does not name this function"
    return None


def _real_module(module: str) -> str:
    """The importable name of ``__main__`` when it was started with ``python -m``."""
    if module == "__main__":
        import sys

        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        if spec is not None and spec.name:
            return str(spec.name)
    return module


def function_ref(func: Callable[..., Any], *, allow_pickle: bool = False) -> FunctionRef:
    """Build a reference to ``func``.

    Args:
        func: a module-level function, static method or class method.
        allow_pickle: fall back to cloudpickle for lambdas and closures.

    Raises:
        ValueError: ``func`` has no importable name and ``allow_pickle`` is false.
    """
    func = unwrap(func)
    problem = reference_problem(func)
    module = _real_module(getattr(func, "__module__", None) or "__unknown__")
    qualname = getattr(func, "__qualname__", None) or repr(func)
    if problem is None:
        return FunctionRef(module=module, qualname=qualname)
    if not allow_pickle:
        raise ValueError(
            f"{problem}. Define it as a module-level function or a @staticmethod of a class "
            "in an importable module, or enable the cloudpickle fallback "
            "(AgentConfigOptions.ALLOW_PICKLED_FUNCTIONS)."
        )
    import cloudpickle

    data = base64.b64encode(cloudpickle.dumps(func)).decode("ascii")
    return FunctionRef(module=module, qualname=qualname, pickled=data)


def is_async(func: Callable[..., Any]) -> bool:
    """True for ``async def`` functions."""
    return inspect.iscoroutinefunction(unwrap(func))
