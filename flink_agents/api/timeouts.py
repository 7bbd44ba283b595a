"""Timeouts of model calls, tool calls and actions.

Options (seconds, unset = no timeout): ``model.timeout`` bounds each chat model call of the
built-in chat action, ``tool.timeout`` each tool call of the built-in tool action,
``action.timeout`` each run of an async action. A resource's own ``timeout`` (a chat model
setup's ``timeout=`` argument, ``@tool(timeout=...)``, ``FunctionTool.from_callable(...,
timeout=...)``) and an action's ``timeout`` config (``@action(InputEvent, timeout=5)``)
override them. A call past its timeout raises
:class:`~flink_agents.errors.CallTimeoutError` (a ``TimeoutError``). See
docs/user-guide/timeouts.md for what is cancelled and what can only be abandoned.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from flink_agents.api.core_options import ConfigOption, register_options
from flink_agents.errors import CallTimeoutError

_T = TypeVar("_T")


def _positive_or_unset(value: Any) -> str | None:
    return None if value is None or value > 0 else "must be > 0 seconds (unset: no timeout)"


def _seconds(value: Any) -> float | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    if isinstance(value, bool):
        raise TypeError("expected a number of seconds, got a bool")
    return float(value)


class TimeoutOptions:
    """Timeouts in seconds; unset (the default) means no timeout."""

    ACTION_TIMEOUT: ConfigOption[float | None] = ConfigOption(
        key="action.timeout",
        config_type=float,
        default=None,
        parse=_seconds,
        check=_positive_or_unset,
        description="Seconds an async action may run (an action's own `timeout` config "
        "overrides it); past it the action fails with CallTimeoutError.",
    )
    MODEL_TIMEOUT: ConfigOption[float | None] = ConfigOption(
        key="model.timeout",
        config_type=float,
        default=None,
        parse=_seconds,
        check=_positive_or_unset,
        description="Seconds a chat model call may take (a setup's `timeout` overrides "
        "it); past it the call is cancelled and fails with CallTimeoutError.",
    )
    TOOL_TIMEOUT: ConfigOption[float | None] = ConfigOption(
        key="tool.timeout",
        config_type=float,
        default=None,
        parse=_seconds,
        check=_positive_or_unset,
        description="Seconds a tool call may take (a tool's `timeout` overrides it); past it "
        "the call fails with CallTimeoutError, which the model sees as the tool's error.",
    )


register_options(TimeoutOptions)


def check_timeout(value: Any, where: str) -> float | None:
    """``value`` as a timeout in seconds (None: no timeout).

    Raises:
        ConfigurationError: not a positive number; the message names ``where``.
    """
    from flink_agents.errors import ConfigurationError

    try:
        seconds = _seconds(value)
    except (TypeError, ValueError):
        raise ConfigurationError(
            f"{where}: timeout must be a number of seconds > 0, got {value!r}"
        ) from None
    if seconds is not None and not seconds > 0:
        raise ConfigurationError(f"{where}: timeout must be > 0 seconds, got {value!r}")
    return seconds


def bounded(
    func: Callable[..., Awaitable[_T]], seconds: float | None, kind: str, name: str
) -> Callable[..., Awaitable[_T]]:
    """``func`` (an async callable) bounded by ``seconds``: past it the call is cancelled
    and :class:`CallTimeoutError` is raised. ``func`` itself when ``seconds`` is None.

    The wrapper keeps ``func``'s name (``functools.wraps``), so the durable call log
    records it under the same signature with or without a timeout.
    """
    if seconds is None:
        return func

    @functools.wraps(func)
    async def call(*args: Any, **kwargs: Any) -> _T:
        # Not asyncio.wait_for: a TimeoutError raised by func itself must stay what it is,
        # and a call that ignores its cancellation must not hold the run past the timeout.
        task = asyncio.ensure_future(func(*args, **kwargs))
        try:
            done, _ = await asyncio.wait((task,), timeout=seconds)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            task.add_done_callback(_consume)
            raise CallTimeoutError(
                f"{kind} {name!r} did not finish within its timeout of {seconds:g}s",
                kind=kind,
                name=name,
                timeout=seconds,
            )
        return task.result()

    return call


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned call's outcome, so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()
