"""References to Python objects that survive JSON: module + qualname, or cloudpickle.

Private: used by serializable tools and by the plan compiler.

Functions and classes of importable modules are referenced by name (``module`` +
``qualname``), which keeps the plan JSON readable. Those defined in the script that was run
(``__main__``: ``python job.py``, ``flink run -py job.py``) cannot be imported by Flink's
Python workers, so they travel *by value*, as base64 cloudpickle bytes (what PyFlink does
with its own functions from ``__main__``); the name is kept next to them for readers.
Lambdas and closures travel the same way when the cloudpickle fallback is asked for.

In the process that pickled a ``__main__`` object, loading it back gives the object itself
(so a local run keeps the script's globals); elsewhere each pickle is loaded once per
process.
"""

from __future__ import annotations

import base64
import importlib
import inspect
import pickle
import threading
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

#: Objects by their pickled form: the originals pickled in this process, and what was loaded.
_BY_VALUE: dict[str, Any] = {}
_BY_VALUE_LOCK = threading.Lock()
#: Why an object of ``__main__`` could not be pickled, by ``module.qualname``.
_PICKLE_ERRORS: dict[str, str] = {}


def in_main_script(obj: Any) -> bool:
    """True for a function or class defined in ``__main__`` (the script that was run)."""
    return getattr(unwrap(obj), "__module__", None) == "__main__"


def pickle_by_value(obj: Any) -> str | None:
    """``obj`` as base64 cloudpickle bytes when it is defined in ``__main__``, else None.

    None also when pickling fails; :func:`pickle_error` then says why (the object stays
    usable in this process, e.g. by the local environment, but cannot reach Flink workers).
    """
    obj = unwrap(obj)
    if not in_main_script(obj):
        return None
    import cloudpickle

    try:
        data = base64.b64encode(cloudpickle.dumps(obj)).decode("ascii")
    except Exception as exc:  # noqa: BLE001 - any pickling failure means the same
        _PICKLE_ERRORS[_path(obj)] = f"{type(exc).__name__}: {exc}"
        return None
    with _BY_VALUE_LOCK:
        _BY_VALUE.setdefault(data, obj)
    return data


def pickle_error(path: str) -> str | None:
    """Why the ``__main__`` object ``module.qualname`` could not be pickled, if it failed."""
    return _PICKLE_ERRORS.get(path)


def load_by_value(data: str) -> Any:
    """The object of a :func:`pickle_by_value` string (cached: each pickle loads once)."""
    found = _BY_VALUE.get(data)
    if found is None:
        import cloudpickle

        with _BY_VALUE_LOCK:
            found = _BY_VALUE.get(data)
            if found is None:
                found = _BY_VALUE[data] = cloudpickle.loads(base64.b64decode(data))
    return found


def dumps(value: Any) -> bytes:
    """``pickle.dumps(value)``, or cloudpickle when ``value`` holds an object of a class that
    came by value (a class of the job script: on a worker plain pickle cannot find it by name).

    Plain pickle first: it is faster, and cloudpickle would carry the class in every record.
    ``pickle.loads`` reads both.
    """
    try:
        return pickle.dumps(value)
    except pickle.PicklingError:
        import cloudpickle

        return cloudpickle.dumps(value)


def _path(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


class FunctionRef(BaseModel):
    """Where to find a function (or class) again on another machine.

    Attributes:
        module: the module that defines it.
        qualname: its qualified name inside the module (``Class.method`` for methods).
        pickled: base64 cloudpickle bytes (the object *by value*) when it is defined in the
            ``__main__`` script, or has no importable name and the cloudpickle fallback was
            asked for; None for a reference by name.
    """

    module: str
    qualname: str
    pickled: str | None = None

    def resolve(self) -> Callable[..., Any]:
        """Import the function back (or load it, when it is stored by value)."""
        if self.pickled is not None:
            return load_by_value(self.pickled)
        obj: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, staticmethod):
            obj = obj.__func__
        return obj

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
        # Referenced by value (pickle_by_value); by name it works only in this process.
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
    """Build a reference to ``func``: by name, or by value when ``__main__`` defines it.

    Args:
        func: a module-level function, static method, class method or class.
        allow_pickle: fall back to cloudpickle for lambdas and closures.

    Raises:
        ValueError: ``func`` has no importable name and ``allow_pickle`` is false.
    """
    func = unwrap(func)
    problem = reference_problem(func)
    module = _real_module(getattr(func, "__module__", None) or "__unknown__")
    qualname = getattr(func, "__qualname__", None) or repr(func)
    if problem is None:
        return FunctionRef(module=module, qualname=qualname, pickled=pickle_by_value(func))
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
