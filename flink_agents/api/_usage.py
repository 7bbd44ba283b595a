"""Where token usage reported by resources goes: the request scope of the runtime.

The runtime opens a scope (a list) around each action execution while it counts the
built-in metrics of a plan that has embedding models; a resource that learns how many tokens
a call used (an embedding setup, from its connection's :class:`EmbeddingResult`) reports
them here, and the runtime books them to that action (``action.<name>.model.<resource>``).
A context variable, so concurrent runs of other keys on the same loop keep their own scope;
worker threads of durable calls get the caller's context. With no scope open, a report does
nothing.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

#: The open scope: ``(resource, prompt tokens, total tokens)`` per report, or None.
USAGE_SCOPE: ContextVar[list[tuple[Any, int, int]] | None] = ContextVar(
    "flink_agents_usage_scope", default=None
)


def report_usage(resource: Any, prompt_tokens: int, total_tokens: int) -> None:
    """Book tokens used by a call of ``resource`` to the request in progress, if any."""
    scope = USAGE_SCOPE.get()
    if scope is not None:
        scope.append((resource, int(prompt_tokens), int(total_tokens)))
