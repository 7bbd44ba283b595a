"""Deadlines of model calls, embedding calls, tool calls, MCP calls and actions.

Every call to something outside has a deadline by default (the table of defaults is in
docs/user-guide/timeouts.md):

- **chat model calls**: the connections of the built-in providers bound each call as a
  whole, connect, send and the complete reply of every attempt plus the waits between
  attempts (``total_timeout``, default :data:`DEFAULT_MODEL_DEADLINE` seconds; ``timeout``
  bounds one attempt the same way, default 60 s); the built-in chat action bounds calls to
  any other connection by :data:`DEFAULT_MODEL_DEADLINE` unless ``model.timeout`` or the
  setup's ``timeout`` says otherwise;
- **embedding calls**: the connections bound them the same way (default
  :data:`DEFAULT_EMBEDDING_DEADLINE`);
- **tool calls** of the built-in tool action: ``tool.timeout`` (default
  :data:`DEFAULT_TOOL_TIMEOUT`), or the tool's own ``timeout``;
- **MCP calls**: the server's ``timeout`` (default 30 s) bounds connecting and the call;
- **actions**: ``action.timeout`` bounds an async action (unset: no bound).

``model.timeout`` (unset by default) bounds a model call of the built-in chat action end to
end, the wait for a free place of the connection included. A setup's ``timeout=``,
``@tool(timeout=...)``, ``FunctionTool.from_callable(..., timeout=...)`` and an action's
``timeout`` config (``@action(InputEvent, timeout=5)``) override the options. A call past
its deadline raises :class:`~flink_agents.errors.CallTimeoutError` (a ``TimeoutError``;
for a model or embedding connection the :class:`~flink_agents.errors.ModelCallTimeoutError`
that is also a ``ModelCallError``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Generator
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


#: Seconds a chat model call may take by default, every attempt included.
DEFAULT_MODEL_DEADLINE = 300.0
#: Seconds an embedding call may take by default, every attempt included.
DEFAULT_EMBEDDING_DEADLINE = 120.0
#: Seconds a tool call of the built-in tool action may take by default.
DEFAULT_TOOL_TIMEOUT = 120.0


class TimeoutOptions:
    """Timeouts in seconds (``none``: no timeout)."""

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
        description="Seconds a chat model call of the built-in chat action may take end to "
        "end, waiting for a free place of the connection included (a setup's `timeout` "
        "overrides it); past it the call is cancelled and fails with CallTimeoutError. "
        "Unset: the connection's own deadline (`total_timeout`, default 300 s, for the "
        "built-in providers), else 300 s.",
    )
    TOOL_TIMEOUT: ConfigOption[float | None] = ConfigOption(
        key="tool.timeout",
        config_type=float,
        default=DEFAULT_TOOL_TIMEOUT,
        parse=_seconds,
        check=_positive_or_unset,
        description="Seconds a tool call may take (a tool's `timeout` overrides it; `none`: "
        "no timeout); past it the call fails with CallTimeoutError, which the model sees as "
        "the tool's error.",
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

    The wrapper keeps ``func``'s name (as ``functools.wraps``) and, for a bound method, its
    ``__self__``: the durable call log records it under the same signature with or without
    a timeout, and the metrics still see whose call it is (a chat model setup, a tool).
    """
    if seconds is None:
        return func

    def expired() -> CallTimeoutError:
        return CallTimeoutError(
            f"{kind} {name!r} did not finish within its timeout of {seconds:g}s",
            kind=kind,
            name=name,
            timeout=seconds,
        )

    # A plain function returning await_within's coroutine (not an ``async def`` awaiting
    # it): one coroutine frame less per call. The durable call log knows it by its code.
    def call(*args: Any, **kwargs: Any) -> Coroutine[Any, Any, _T]:
        return await_within(func(*args, **kwargs), seconds, expired)

    # What functools.wraps copies that the durable log and the metrics read (at a fraction
    # of its cost: every tool call and many model calls are bounded).
    call.__module__ = func.__module__
    call.__name__ = func.__name__
    call.__qualname__ = func.__qualname__
    call.__wrapped__ = func  # type: ignore[attr-defined]
    owner = getattr(func, "__self__", None)
    if owner is not None:
        call.__self__ = owner  # type: ignore[attr-defined]
    return call


_monotonic = time.monotonic

#: The code of every wrapper :func:`bounded` makes (the durable call log recognizes them by
#: it: ``runtime/core/context.py``).
BOUNDED_CODE = bounded(asyncio.sleep, 1.0, "", "").__code__


async def await_within(
    awaitable: Awaitable[_T], seconds: float, expired: Callable[[], BaseException]
) -> _T:
    """Await ``awaitable`` for at most ``seconds``; past them it is cancelled and
    ``expired()`` is raised.

    The deadline cancels the awaiting task itself (the idea of ``asyncio.timeout``, written
    out for Python 3.10 too): no task of its own and no extra loop iteration per call, which
    matters because every tool call and many model calls are bounded by default. The
    awaitable's first step runs before any timer exists: one that finishes without waiting
    (a cached answer, a zero-latency stand-in) costs no timer at all; one that waits gets
    its timer then, due ``seconds`` after the call began (the first step's time counts). A
    ``TimeoutError`` the awaitable raises itself stays what it is. A blocking function on
    a worker thread (``asyncio.to_thread``) is abandoned at once: its thread runs on until
    the function returns (Python cannot stop a thread). A coroutine that swallows its
    cancellation is waited for.
    """
    started = _monotonic()  # not loop.time(): a Python-level call, needed only if it waits
    steps = awaitable.__await__()
    try:
        step = steps.send(None)
    except StopIteration as done:  # finished without waiting: nothing to bound
        return done.value
    loop = asyncio.get_running_loop()
    due = loop.time() + seconds - (_monotonic() - started)
    task = asyncio.current_task()
    if task is None:  # not inside a task (a bare coroutine driven by hand): nothing to cancel
        return await _Resumed(steps, step)
    # Cancellations of the task already requested before this deadline are not ours.
    uncancel = getattr(task, "uncancel", None)  # Python 3.11+
    before = task.cancelling() if uncancel is not None else 0
    fired = False

    def expire() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    handle = loop.call_at(due, expire)
    taken_back = False
    try:
        return await _Resumed(steps, step)
    except asyncio.CancelledError:
        if not fired:
            raise
        taken_back = True
        # Ours, unless somebody else also cancelled the task meanwhile (then theirs wins).
        if uncancel is not None and uncancel() > before:
            raise
        raise expired() from None
    finally:
        handle.cancel()
        if fired and not taken_back and uncancel is not None and task.cancelling() > before:
            # The deadline fired but the awaitable swallowed the cancellation and ended:
            # take the request back so that it does not hit a later await of the task.
            uncancel()


class _Resumed:
    """The rest of an awaitable whose first step already ran and yielded ``step``: awaiting
    it goes on as ``yield from`` would have (what the task sends or throws is passed on,
    closing it closes the awaitable)."""

    __slots__ = ("_step", "_steps")

    def __init__(self, steps: Any, step: Any) -> None:
        self._steps = steps
        self._step = step

    def __await__(self) -> Generator[Any, Any, Any]:
        steps, step = self._steps, self._step
        self._steps = self._step = None
        while True:
            try:
                sent = yield step
            except GeneratorExit:
                steps.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - thrown in by the task: passed on
                try:
                    step = steps.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    step = steps.send(sent)
                except StopIteration as done:
                    return done.value
