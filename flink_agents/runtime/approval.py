"""Paused runs: what the per-key protocol keeps while a run waits for a human decision.

A run that reaches ``ctx.request_approval`` without a decision in its durable log ends as a
paused :class:`~flink_agents.runtime.core.RunResult`. The key's
:class:`~flink_agents.runtime.sequencing.KeySequencer` keeps a :class:`PausedRun` (the input,
the durable records so far, where the decision goes), the host emits the request and the
key's later inputs are held back. An :class:`~flink_agents.api.approval.ApprovalResponse`
that :func:`response_problem` finds nothing wrong with (or :func:`expired_response` at the
deadline) becomes the decision record, and the input runs again with it. A response that
resumes nothing is dropped by the host with :func:`drop_response`. See
docs/ARCHITECTURE.md, "Approval".
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from flink_agents.api.approval import ApprovalRequest, ApprovalResponse
from flink_agents.runtime.core import DurableRecord, RunResult
from flink_agents.runtime.metric_groups import SimpleMetricGroup

log = logging.getLogger("flink_agents.runtime.approval")

#: Counter of approval responses dropped (unknown request id, wrong key).
DROPPED_COUNTER = "numOfApprovalResponsesDropped"


@dataclass(frozen=True)
class PausedRun:
    """A run waiting for a decision.

    Attributes:
        item: the paused input (the host's: an object with an ``id``).
        durable: every durable record of the run so far (replayed on resume).
        result: the paused run's result; its one output is the request.
        call_id: the durable call id the decision is recorded under.
    """

    item: Any
    durable: dict[str, DurableRecord]
    result: RunResult
    call_id: str

    @property
    def request(self) -> ApprovalRequest:
        """The request that was emitted."""
        assert self.result.approval is not None
        return self.result.approval

    @classmethod
    def of(
        cls, item: Any, durable: dict[str, DurableRecord] | None, result: RunResult
    ) -> PausedRun:
        """The paused run of ``result`` (a run of ``item`` given the log ``durable``)."""
        assert result.approval is not None and result.approval_call_id is not None
        return cls(
            item=item,
            durable={**(durable or {}), **result.durable_records},
            result=result,
            call_id=result.approval_call_id,
        )


def response_problem(
    request: ApprovalRequest | None, key: Any, response: ApprovalResponse
) -> str | None:
    """Why ``response`` (arrived under ``key``) does not answer ``request``, the key's paused
    run's (None: no run of the key is paused); None when it does."""
    if response.key != key:
        return f"it names key {response.key!r} but arrived under key {key!r}"
    if request is None:
        return "no run of this key waits for a decision (answered, expired or unknown)"
    if request.request_id != response.request_id:
        return f"the key's paused run waits for request {request.request_id}"
    return None


def drop_response(
    key: Any, response: ApprovalResponse, reason: str, metrics: SimpleMetricGroup
) -> None:
    """Log and count (``numOfApprovalResponsesDropped``) a response that resumes nothing;
    ``reason`` says why (:func:`response_problem`)."""
    metrics.get_counter(DROPPED_COUNTER).inc()
    log.warning(
        "dropped approval response for request %s of key %r: %s",
        response.request_id,
        key,
        reason,
    )


def expired_response(request: ApprovalRequest) -> ApprovalResponse:
    """The rejection recorded when ``request`` was not answered in time."""
    waited = (request.expires_at or time.time()) - request.created_at
    return request.reject(f"no decision within approval.timeout ({waited:g}s)")


def plan_needs_approval(plan: Any) -> bool:
    """Whether a tool of ``plan`` requires approval, or a ``before_tool`` hook may ask for
    it (the Flink environment then routes :class:`ApprovalResponse` inputs by their
    ``key``)."""
    from flink_agents.api.resource import ResourceType

    if any(h.point == "before_tool" for h in plan.hooks.values()):
        return True
    tools = plan.resource_providers.get(ResourceType.TOOL, {})
    return any(
        (p.serialized or {}).get("requires_approval")
        or (p.arguments or {}).get("requires_approval")
        for p in tools.values()
    )
