"""Paused runs: what both hosts keep while a run waits for a human decision.

A run that reaches ``ctx.request_approval`` without a decision in its durable log ends as a
paused :class:`~flink_agents.runtime.core.RunResult`. The host keeps a :class:`PausedRun`
(the input, the durable records so far, where the decision goes), emits the request and
holds the key's later inputs back. An :class:`~flink_agents.api.approval.ApprovalResponse`
accepted by :func:`accept_response` (or :func:`expired_response` at the deadline) becomes
the decision record, and the host runs the input again with :meth:`PausedRun.resume_log`.
See docs/ARCHITECTURE.md, "Approval".
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from flink_agents.api.approval import ApprovalRequest, ApprovalResponse
from flink_agents.runtime.core import APPROVAL_DECISION, DurableRecord, RunResult
from flink_agents.runtime.metric_groups import SimpleMetricGroup

log = logging.getLogger("flink_agents.runtime.approval")

#: Counter of approval responses dropped (unknown request id, wrong key).
DROPPED_COUNTER = "numOfApprovalResponsesDropped"


@dataclass
class PausedRun:
    """A run waiting for a decision.

    Attributes:
        value: the paused input.
        durable: every durable record of the run so far (replayed on resume).
        request: the request that was emitted.
        call_id: the durable call id the decision is recorded under.
    """

    value: Any
    durable: dict[str, DurableRecord]
    request: ApprovalRequest
    call_id: str

    @classmethod
    def of(
        cls, value: Any, durable: dict[str, DurableRecord] | None, result: RunResult
    ) -> PausedRun:
        """The paused run of ``result`` (a run of ``value`` given the log ``durable``)."""
        assert result.approval is not None and result.approval_call_id is not None
        return cls(
            value=value,
            durable={**(durable or {}), **result.durable_records},
            request=result.approval,
            call_id=result.approval_call_id,
        )

    def resume_log(self, response: ApprovalResponse) -> dict[str, DurableRecord]:
        """The durable log to run the input again with: the records so far and the
        decision."""
        return {**self.durable, self.call_id: DurableRecord(APPROVAL_DECISION, result=response)}

    def expired(self, now: float | None = None) -> bool:
        """The request's deadline has passed."""
        deadline = self.request.expires_at
        return deadline is not None and (time.time() if now is None else now) >= deadline


def accept_response(
    request: ApprovalRequest | None,
    key: Any,
    response: ApprovalResponse,
    metrics: SimpleMetricGroup,
) -> bool:
    """Whether ``response`` (arrived under ``key``) answers ``request``, the key's paused
    run's (None: no run of the key is paused). A response
    that does not (no paused run, another request id, a ``key`` field naming another key) is
    logged and counted in ``numOfApprovalResponsesDropped``; it never resumes a run."""
    problem = None
    if response.key != key:
        problem = f"it names key {response.key!r} but arrived under key {key!r}"
    elif request is None:
        problem = "no run of this key waits for a decision (answered, expired or unknown)"
    elif request.request_id != response.request_id:
        problem = f"the key's paused run waits for request {request.request_id}"
    if problem is None:
        return True
    metrics.get_counter(DROPPED_COUNTER).inc()
    log.warning(
        "dropped approval response for request %s of key %r: %s",
        response.request_id,
        key,
        problem,
    )
    return False


def expired_response(request: ApprovalRequest) -> ApprovalResponse:
    """The rejection recorded when ``request`` was not answered in time."""
    waited = (request.expires_at or time.time()) - request.created_at
    return request.reject(f"no decision within approval.timeout ({waited:g}s)")


def plan_needs_approval(plan: Any) -> bool:
    """Whether a tool of ``plan`` (or of a sub-agent's) requires approval, or a
    ``before_tool`` hook may ask for it (the Flink environment then routes
    :class:`ApprovalResponse` inputs by their ``key``)."""
    from flink_agents.api.resource import ResourceType

    if any(h.point == "before_tool" for h in plan.hooks.values()):
        return True
    providers = [
        *plan.resource_providers.get(ResourceType.TOOL, {}).values(),
        *plan.resource_providers.get(ResourceType.AGENT, {}).values(),
    ]
    if any(
        (p.serialized or {}).get("requires_approval")
        or (p.arguments or {}).get("requires_approval")
        for p in providers
    ):
        return True
    return any(plan_needs_approval(section) for section in plan.subagents.values())
