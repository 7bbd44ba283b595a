"""The execution core: one run loop for both hosts (see docs/ARCHITECTURE.md, section 2).

- :mod:`.runner`: :class:`AgentRunner`, the run loop (events through actions, error
  strategies, agent hooks) and its observer calls;
- :mod:`.context`: one run's state and the :class:`RunContext` an action sees, durable calls
  and approval requests;
- :mod:`.records`: what crosses the boundary with a host: :class:`RunResult`,
  :class:`DurableRecord`.
"""

from flink_agents.runtime.core.context import RunContext
from flink_agents.runtime.core.records import (
    APPROVAL_DECISION,
    APPROVAL_REQUEST,
    DurableRecord,
    RunPaused,
    RunResult,
    decision_call_id,
)
from flink_agents.runtime.core.runner import AgentRunner

__all__ = [
    "APPROVAL_DECISION",
    "APPROVAL_REQUEST",
    "AgentRunner",
    "DurableRecord",
    "RunContext",
    "RunPaused",
    "RunResult",
    "decision_call_id",
]
