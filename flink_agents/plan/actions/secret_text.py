"""Text for a model passes the secret rule of the logs: nothing secret leaves to a provider.

Everything the built-in actions send to a model goes through :func:`masked_messages` in
``calls.call_model_offering`` (the one place a model is called): tool results and tool
errors, text ReAct's observations, the summaries of chat history, the prompt's arguments.
Tool errors are masked where they are made too (``tool_call_action``), so that the
:class:`ToolResponseEvent` and the chat loop's state hold no secret either.

The rule is the project's one secret rule (:class:`flink_agents.secrets.Masker`, as for logs,
errors and the event log): every secret value the plan knows (a resource's ``api_key``,
``token``, ``password``... kept out of the plan JSON, ``AgentPlan.secrets``), and the
credentials inside those values' URLs, are replaced by ``***`` wherever they appear, and the
rule's text patterns (``api_key=...``, ``Bearer ...``, URL passwords) are masked with them.
Values shorter than 4 characters are left alone (masking them would garble ordinary text).
A plan without secrets sends model text unchanged (the common case costs nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.runner_context import RunnerContext


def secret_masker(ctx: RunnerContext) -> Callable[[str], str] | None:
    """A function masking the plan's secret values in a text; None when the plan has none
    (the common case costs nothing). The plan makes its masker once."""
    masker = getattr(getattr(ctx, "agent_plan", None), "masker", None)
    return masker.mask if masker else None


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
