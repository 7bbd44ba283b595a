"""What crosses the core's boundary with a host: durable records and run results.

A :class:`DurableRecord` is stored pickled in keyed state (``fa-durable``), so its class keeps
the module path ``flink_agents.runtime.core`` that earlier versions pickled it under.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flink_agents.api.approval import ApprovalRequest
from flink_agents.api.dead_letter import DeadLetter
from flink_agents.api.events.event import ErrorEvent


@dataclass
class DurableRecord:
    """A durable call: what was called and what it gave (or raised).

    Attributes:
        signature: ``module.qualname`` of the function called.
        result: what it returned.
        error: what it raised, if it failed.
        pending: the call was started and has not finished: written before a call that has
            a reconciler, so that a restore can tell "maybe happened" from "never started".
    """

    signature: str
    result: Any = None
    error: BaseException | None = None
    pending: bool = False


#: Signatures of the two durable records of an approval step.
APPROVAL_REQUEST = "flink_agents.approval.request"
APPROVAL_DECISION = "flink_agents.approval.decision"


def decision_call_id(request_call_id: str) -> str:
    """The durable call id of the decision that follows the approval request recorded under
    ``request_call_id`` (``request_approval`` takes the two ids in a row; call ids count up)."""
    return str(int(request_call_id) + 1)


class RunPaused(BaseException):
    """Raised through the actions when a run waits for a human decision; a BaseException so
    that no action's ``except Exception`` swallows it. :meth:`AgentRunner.run` turns it into
    a paused :class:`RunResult`."""

    def __init__(self, request: ApprovalRequest, call_id: str) -> None:
        super().__init__(request.request_id)
        self.request = request
        self.call_id = call_id


@dataclass
class RunResult:
    """What a run produced, for the host to commit.

    Attributes:
        key: the input's key.
        outputs: ``OutputEvent.output`` values, in the order they were sent.
        memory_updates: short-term memory paths set (flattened) and their values.
        memory_deletes: short-term memory paths removed.
        durable_records: durable calls completed in this run, by call id.
        errors: error events of failures the IGNORE strategy let pass.
        approval: set when the run paused for a human decision: the request (also the one
            output). The host keeps the input and ``durable_records`` uncommitted and runs
            the input again once the decision is recorded at ``approval_call_id``.
        approval_call_id: the durable call id the decision is recorded under.
        dead_letter: set when the run failed under the ``dead-letter`` strategy (or its
            input could not become an event): nothing else of the run is to be committed;
            the host commits the input as done and emits this to its dead letters.
    """

    key: Any
    outputs: list[Any] = field(default_factory=list)
    memory_updates: dict[str, Any] = field(default_factory=dict)
    memory_deletes: list[str] = field(default_factory=list)
    durable_records: dict[str, DurableRecord] = field(default_factory=dict)
    errors: list[ErrorEvent] = field(default_factory=list)
    approval: ApprovalRequest | None = None
    approval_call_id: str | None = None
    dead_letter: DeadLetter | None = None

    def applied_to(self, memory: dict[str, Any]) -> dict[str, Any]:
        """``memory`` (flattened) after this run's changes: a new dict, or ``memory``
        itself when the run changed nothing."""
        if not self.memory_updates and not self.memory_deletes:
            return memory
        updated = dict(memory)
        for path in self.memory_deletes:
            updated.pop(path, None)
        updated.update(self.memory_updates)
        return updated


# Pickled into keyed state under this path since the first release: keep it stable.
DurableRecord.__module__ = "flink_agents.runtime.core"
