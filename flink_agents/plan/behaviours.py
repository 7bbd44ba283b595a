"""Running interceptor chains and hooks (the API is in :mod:`flink_agents.api.interceptors`
and :mod:`flink_agents.api.hooks`).

:func:`run_chain` calls a chain of interceptors around a terminal call; :func:`run_hooks`
calls the hooks of one point. Both name the interceptor or hook that raised
(:class:`~flink_agents.errors.InterceptorError`, :class:`~flink_agents.errors.HookError`);
an error raised further down the chain and passed through an interceptor is left alone.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from flink_agents.api.hooks import HookContext
from flink_agents.errors import HookError, InterceptorError


async def run_chain(
    kind: str,
    chain: Sequence[tuple[str, Callable[..., Any]]],
    request: Any,
    terminal: Callable[[Any], Awaitable[Any]],
) -> Any:
    """Call ``chain`` (outermost first) around ``terminal`` with ``request``.

    Args:
        kind: ``"model"`` or ``"tool"`` (for error messages).
        chain: ``(name, interceptor(request, call_next))`` pairs.
        request: the request object handed down the chain.
        terminal: the real call, given the request the last interceptor passed on.

    Raises:
        InterceptorError: an interceptor raised (not an error it got from ``call_next``).
    """
    passed: set[int] = set()  # ids of errors raised below a link, re-raised unchanged

    async def invoke(index: int, req: Any) -> Any:
        if index == len(chain):
            return await terminal(req)
        name, interceptor = chain[index]

        async def call_next(next_req: Any) -> Any:
            try:
                return await invoke(index + 1, next_req)
            except Exception as exc:
                passed.add(id(exc))
                raise

        try:
            result = interceptor(req, call_next)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            if id(exc) in passed:
                raise
            raise InterceptorError(
                f"{kind} interceptor {name!r} failed: {type(exc).__name__}: {exc}", name=name
            ) from exc
        return result

    return await invoke(0, request)


async def run_hooks(hooks: Sequence[tuple[str, Callable[..., Any]]], hc: HookContext) -> None:
    """Run ``hooks`` in order on ``hc``; stops after the first that calls ``hc.stop``.

    Raises:
        HookError: a hook raised.
    """
    for name, func in hooks:
        try:
            returned = func(hc)
            if inspect.isawaitable(returned):
                await returned
        except Exception as exc:
            raise HookError(
                f"{hc.point.value} hook {name!r} failed: {type(exc).__name__}: {exc}",
                name=name,
                point=hc.point.value,
            ) from exc
        if hc.stopped:
            return
