"""Text for a model passes the secret rule of the logs: nothing secret leaves to a provider.

Everything the built-in actions send to a model goes through :func:`masked_messages` in
``calls.call_model_offering`` (the one place a model is called): tool results and tool
errors, text ReAct's observations, the summaries of chat history, the prompt's arguments.
Tool errors are masked where they are made too (``tool_call_action``), so that the
:class:`ToolResponseEvent` and the chat loop's state hold no secret either.

The rule is the event log's: every secret value the plan knows (a resource's ``api_key``,
``token``, ``password``... kept out of the plan JSON, ``AgentPlan.secrets``) is replaced by
``***`` wherever it appears. Values shorter than 4 characters are left alone (masking them
would garble ordinary text). This module is the one place that rule is applied to model
text: when the project's shared secret rule changes, this is what changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.runner_context import RunnerContext

MASK = "***"
_MIN_LENGTH = 4


def secret_masker(ctx: RunnerContext) -> Callable[[str], str] | None:
    """A function masking the plan's secret values in a text; None when the plan has none
    (the common case costs nothing). Made once per plan."""
    plan = getattr(ctx, "agent_plan", None)
    if plan is None:
        return None
    cached = _MASKERS.get(id(plan))
    if cached is not None and cached[0] is plan:
        return cached[1]
    masker = _masker(getattr(plan, "secrets", None) or {})
    if len(_MASKERS) >= _MAX_PLANS:
        _MASKERS.clear()  # plans live as long as their runner: a few per process
    _MASKERS[id(plan)] = (plan, masker)
    return masker


def _masker(values: Mapping[str, Any]) -> Callable[[str], str] | None:
    secrets = sorted(
        {v for v in values.values() if isinstance(v, str) and len(v) >= _MIN_LENGTH},
        key=len,
        reverse=True,  # a secret containing another is masked whole
    )
    if not secrets:
        return None

    def mask(text: str) -> str:
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    return mask


#: Masker by plan (the plan kept with it, so that its id is not reused meanwhile).
_MASKERS: dict[int, tuple[Any, Callable[[str], str] | None]] = {}
_MAX_PLANS = 64


def masked_messages(
    messages: list[ChatMessage], mask: Callable[[str], str] | None
) -> list[ChatMessage]:
    """``messages`` with secrets masked in their content (a message is copied only when it
    holds one)."""
    if mask is None:
        return messages
    out = []
    for m in messages:
        content = m.content
        if isinstance(content, str) and content:
            masked = mask(content)
            if masked != content:
                m = m.model_copy(update={"content": masked})
        out.append(m)
    return out


def masked_arguments(
    arguments: Mapping[str, Any] | None, mask: Callable[[str], str] | None
) -> dict[str, Any] | None:
    """Prompt arguments with secrets masked in their text values."""
    if arguments is None or mask is None:
        return None if arguments is None else dict(arguments)
    return {k: mask(v) if isinstance(v, str) else v for k, v in arguments.items()}
