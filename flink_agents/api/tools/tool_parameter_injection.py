"""Tool parameter injection (as in Apache Flink Agents): arguments the runtime fills in.

An injected parameter is left out of the schema the model sees; when the built-in tool action
calls the tool, it reads the value from its source and passes it, overriding anything the
model sent under that name (a model cannot spoof a tenant id)::

    @tool(injected_args={"tenant_id": InjectedArg.from_config("tenant.id")})
    @staticmethod
    def query_order(order_id: str, tenant_id: str) -> str: ...

Sources: the agent configuration (a key set on the environment's configuration), sensory
memory and short-term memory (a dotted path holding a value), and (ours) the run's key.
A spec without ``key`` reads the parameter's own name; a spec given as a dict defaults to
sensory memory (``{"key": "request.tenant_id"}``). A missing value fails that tool call:
the model gets an error response, the details go to the event log.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict


class ToolParameterSource(str, Enum):
    """Where an injected tool parameter's value comes from."""

    CONFIG = "config"
    SENSORY_MEMORY = "sensory_memory"
    SHORT_TERM_MEMORY = "short_term_memory"
    #: The key of the run (ours; Apache Flink Agents has no such source).
    KEY = "key"

    @classmethod
    def _missing_(cls, value: object) -> ToolParameterSource | None:
        if isinstance(value, str):
            lowered = value.lower()
            for source in cls:
                if source.value == lowered:
                    return source
        return None


class InjectedArg(BaseModel):
    """Where one injected tool parameter comes from.

    Attributes:
        source: the source (sensory memory by default, as upstream).
        key: the configuration key or memory path (default: the parameter's name).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: ToolParameterSource = ToolParameterSource.SENSORY_MEMORY
    key: str | None = None

    @staticmethod
    def from_config(key: str) -> InjectedArg:
        """The value of the configuration key ``key``."""
        return InjectedArg(source=ToolParameterSource.CONFIG, key=key)

    @staticmethod
    def from_sensory_memory(path: str) -> InjectedArg:
        """The value at ``path`` in sensory memory."""
        return InjectedArg(source=ToolParameterSource.SENSORY_MEMORY, key=path)

    @staticmethod
    def from_short_term_memory(path: str) -> InjectedArg:
        """The value at ``path`` in short-term memory."""
        return InjectedArg(source=ToolParameterSource.SHORT_TERM_MEMORY, key=path)

    @staticmethod
    def from_key() -> InjectedArg:
        """The key of the run (ours)."""
        return InjectedArg(source=ToolParameterSource.KEY)

    def with_default_key(self, key: str) -> InjectedArg:
        """This spec, reading ``key`` when it names none."""
        if self.key:
            return self
        return InjectedArg(source=self.source, key=key)


def normalize_injected_args(
    injected_args: dict[str, InjectedArg | dict[str, Any]] | None,
) -> dict[str, InjectedArg]:
    """``injected_args`` as ``parameter -> InjectedArg`` (dict specs read as InjectedArg,
    a missing key set to the parameter's name).

    Raises:
        TypeError: not a dict, or a spec that is neither an InjectedArg nor a dict.
        pydantic.ValidationError: a dict spec with an unknown source or field.
    """
    if injected_args is None:
        return {}
    if not isinstance(injected_args, dict):
        raise TypeError(
            "'injected_args' must be a dict mapping parameter names to injection specs "
            '(e.g. {"tenant_id": InjectedArg.from_config("tenant.id")})'
        )
    result: dict[str, InjectedArg] = {}
    for name, spec in injected_args.items():
        if isinstance(spec, InjectedArg):
            result[name] = spec.with_default_key(name)
        elif isinstance(spec, dict):
            result[name] = InjectedArg.model_validate(spec).with_default_key(name)
        else:
            raise TypeError(
                f"Unsupported injected arg spec for {name!r}: {spec!r} (use InjectedArg or "
                "a dict like {'source': 'config', 'key': 'tenant.id'})"
            )
    return result


def merge_injected_args(
    annotated: dict[str, InjectedArg] | None,
    declared: dict[str, InjectedArg] | None,
    *,
    tool_name: str,
) -> dict[str, InjectedArg]:
    """The specs of ``@tool(injected_args=...)`` and of the tool's declaration together.

    Raises:
        ValueError: both give a parameter different specs.
    """
    merged = dict(annotated or {})
    for name, spec in (declared or {}).items():
        existing = merged.get(name)
        if existing is not None and existing != spec:
            raise ValueError(
                f"Tool {tool_name!r}: injected_args conflict for parameter {name!r} between "
                "@tool and the tool's declaration; give it once"
            )
        merged[name] = spec
    return merged


def validate_injected_arg_names(func: Callable[..., Any], injected: dict[str, InjectedArg]) -> None:
    """Check that every injected parameter is a parameter of ``func`` (any name is, when
    it takes ``**kwargs``).

    Raises:
        ValueError: naming the parameters it does not have.
    """
    if not injected:
        return
    target = func.__func__ if isinstance(func, (staticmethod, classmethod)) else func
    parameters = inspect.signature(target).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    unknown = sorted(name for name in injected if name not in parameters)
    if unknown:
        raise ValueError(
            f"Injected tool parameter(s) {', '.join(unknown)} do not match function "
            f"{getattr(target, '__qualname__', target)} parameters "
            f"({', '.join(parameters) or 'none'})."
        )
