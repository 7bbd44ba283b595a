"""Human approval of tool calls in a stream.

A tool declared with ``@tool(requires_approval=True)`` (or
``FunctionTool.from_callable(f, requires_approval=True)``, or any ``Tool`` with
``requires_approval=True``) is not called by the built-in tool action until a human decided.
The run pauses instead: the agent emits an :class:`ApprovalRequest` as an output (route it
by type: ``isinstance(output, ApprovalRequest)``), the key's run state stays in keyed state,
and the run resumes when an :class:`ApprovalResponse` for that request arrives on the
agent's input, keyed like the run's inputs (approve, reject with a reason, or approve with
edited arguments). ``approval.timeout`` rejects a request nobody answered. A workflow
agent's own action can ask too: ``decision = await ctx.request_approval("refund", args)``.

How it works (docs/ARCHITECTURE.md, "Approval"): the paused input stays uncommitted; the
request and the decision are durable records of the run, and resuming re-runs the input with
the durable call log answering every call made before the pause, as after a restore.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import BaseModel, Field

from flink_agents.api.core_options import ConfigOption, register_options


class ApprovalRequest(BaseModel):
    """An agent's request for a human decision on a tool call (an output of the agent).

    Attributes:
        request_id: unique id; the :class:`ApprovalResponse` must carry it.
        key: the key of the paused run (the response must arrive under the same key).
        tool_name: the tool the model (or action) wants to call.
        arguments: the arguments it wants to call it with.
        tool_call_id: the model's id of the tool call, if any.
        created_at: when the request was made (seconds since the epoch).
        expires_at: when it is rejected unless answered (seconds since the epoch), or None.
    """

    request_id: str
    key: Any
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    tool_call_id: str | None = None
    created_at: float
    expires_at: float | None = None

    @classmethod
    def new(
        cls,
        key: Any,
        tool_name: str,
        arguments: dict[str, Any],
        tool_call_id: str | None = None,
        timeout: float | None = None,
    ) -> ApprovalRequest:
        """A request with a fresh id, created now."""
        now = time.time()
        return cls(
            request_id=uuid.uuid4().hex,
            key=key,
            tool_name=tool_name,
            arguments=dict(arguments),
            tool_call_id=tool_call_id,
            created_at=now,
            expires_at=now + timeout if timeout else None,
        )

    def approve(self, arguments: dict[str, Any] | None = None) -> ApprovalResponse:
        """The response approving this request (with edited ``arguments``, if given)."""
        return ApprovalResponse(
            request_id=self.request_id, key=self.key, approved=True, arguments=arguments
        )

    def reject(self, reason: str = "") -> ApprovalResponse:
        """The response rejecting this request."""
        return ApprovalResponse(
            request_id=self.request_id, key=self.key, approved=False, reason=reason
        )


class ApprovalResponse(BaseModel):
    """A human decision on an :class:`ApprovalRequest` (an input of the agent).

    Send it into the agent's input stream keyed like the run's inputs (the Flink
    environment keys it by :attr:`key` itself; on the local environment give it as
    ``{"key": request.key, "value": response}``). A response whose request id is unknown
    for its key (already answered, expired, made up) or whose ``key`` is not the key it
    arrived under is logged, counted (``numOfApprovalResponsesDropped``) and dropped.

    Attributes:
        request_id: the request's id.
        key: the request's key.
        approved: True to call the tool, False to reject the call.
        reason: why it was rejected (the model sees it as the tool's result).
        arguments: approved with these arguments instead of the requested ones.
    """

    request_id: str
    key: Any
    approved: bool
    reason: str = ""
    arguments: dict[str, Any] | None = None


class ApprovalOptions:
    """Options of human approval."""

    APPROVAL_TIMEOUT: ConfigOption[float] = ConfigOption(
        key="approval.timeout",
        config_type=float,
        default=86400.0,
        description="Seconds an approval request waits for its response before it is "
        "rejected (the model sees the rejection as the tool's result).",
        check=lambda v: None if v > 0 else "must be > 0 seconds",
    )


register_options(ApprovalOptions)
