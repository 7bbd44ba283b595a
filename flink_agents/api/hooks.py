"""Hooks: code the runtime calls at fixed points of a run, able to change what happens next.

=================  ==========================================  ===============================
point              when                                        what it may change
=================  ==========================================  ===============================
``before_agent``   once per input, before any action runs      ``input``; ``stop(answer)``
                                                               outputs ``answer``, no action
                                                               runs
``after_agent``    once per input, after the last action       ``outputs`` (a list, in place)
``before_model``   before each model call of the chat loop     ``messages``; ``stop(answer)``
                                                               answers without calling the
                                                               model
``after_model``    after each model call of the chat loop      ``response``; ``stop(answer)``
                                                               ends the loop with ``answer``
                                                               (no tool calls)
``before_tool``    before each tool call the model asked for   ``arguments``;
                   (the built-in tool action)                  ``require_approval()`` asks a
                                                               human first (the approval hook,
                                                               see :mod:`~flink_agents.api.
                                                               approval`); ``stop(result)``
                                                               answers without calling the
                                                               tool
=================  ==========================================  ===============================

Every hook may read and change the key's short-term memory (``memory``). A hook is a
module-level function or static method ``hook(hc: HookContext) -> None`` (``async def``
too), declared with ``@hook("before_model")`` on an agent method (the method name is the
hook's name) or ``agent.add_hook(name, point, func)``; hooks of one point run in declaration
order. Names are unique per agent (a duplicate is a plan validation error).

A hook that raises fails with a :class:`~flink_agents.errors.HookError` naming it, which the
error strategy handles like an action failure. Model hooks run outside the model call's
durable record, so they run again (deterministically) when a run is replayed.

A ``before_tool`` hook runs before the approval check and the tool interceptors; it runs
again when a run paused for approval resumes (deterministically: the decision comes from
the durable log). A new point is one more :class:`HookPoint` member and one ``run_hooks``
call where it happens (``flink_agents.plan.behaviours``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.memory_object import MemoryObject

__all__ = ["HookContext", "HookPoint"]


class HookPoint(str, Enum):
    """Where a hook runs."""

    BEFORE_AGENT = "before_agent"
    AFTER_AGENT = "after_agent"
    BEFORE_MODEL = "before_model"
    AFTER_MODEL = "after_model"
    BEFORE_TOOL = "before_tool"


@dataclass
class HookContext:
    """What a hook sees and may change.

    Attributes:
        point: where the hook runs.
        key: the key of the input.
        memory: the key's short-term memory.
        input: the input (``before_agent`` may replace it).
        outputs: the outputs of the run (``after_agent`` may change the list).
        model: the chat model setup name (model hooks).
        messages: the messages about to be sent (``before_model``) or that were sent
            (``after_model``); ``before_model`` may change them.
        response: the model's reply (``after_model`` may replace it).
        iteration: the model call's number in the chat loop, from 1 (model hooks).
        tool: the tool's name (``before_tool``).
        arguments: the tool call's arguments (``before_tool`` may change them).
        tool_call_id: the model's id of the tool call (``before_tool``).
        side_effects: the tool is marked as changing the world (``before_tool``; see
            ``Tool.side_effects``): e.g. ``if hc.side_effects: hc.require_approval()``.
    """

    point: HookPoint
    key: Any
    memory: MemoryObject
    input: Any = None
    outputs: list[Any] = field(default_factory=list)
    model: str | None = None
    messages: list[ChatMessage] = field(default_factory=list)
    response: ChatMessage | None = None
    iteration: int = 0
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    tool_call_id: str | None = None
    side_effects: bool = False
    _answer: Any = None
    _stopped: bool = False
    _approval: bool = False

    def require_approval(self) -> None:
        """``before_tool``: ask a human before this call, as for a tool declared with
        ``requires_approval=True`` (the run pauses and the agent emits an
        :class:`~flink_agents.api.approval.ApprovalRequest`)."""
        if self.point is not HookPoint.BEFORE_TOOL:
            raise ValueError(f"require_approval() is for before_tool hooks, not {self.point.value}")
        self._approval = True

    @property
    def approval_required(self) -> bool:
        """Whether a hook called :meth:`require_approval`."""
        return self._approval

    def stop(self, answer: Any) -> None:
        """End here with ``answer``: the run's output (``before_agent``), the chat loop's
        final answer (``before_model``/``after_model``: a ``str`` or a ``ChatMessage``) or
        the tool's result without calling it (``before_tool``)."""
        self._answer = answer
        self._stopped = True

    @property
    def stopped(self) -> bool:
        """Whether a hook called :meth:`stop`."""
        return self._stopped

    @property
    def answer(self) -> Any:
        """The answer given to :meth:`stop`."""
        return self._answer
