"""``run_agent`` in the local environment (this process)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flink_agents.api.approval import ApprovalResponse
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.testing._harness import AgentView, RunCapture


def run_local(
    view: AgentView,
    fed: list[Any],
    config: Mapping[str, Any],
    resources: Mapping[str, Any],
) -> tuple[list[RunCapture], str]:
    """Run the inputs in a fresh local environment; the captures and the plan JSON."""
    env = AgentsExecutionEnvironment.get_execution_environment()
    for name, value in config.items():
        env.get_config().set_str(name, value)
    for name, resource in resources.items():
        env.add_resource(name, resource)
    items = [f if isinstance(f, ApprovalResponse) else {"key": f.key, "value": f} for f in fed]
    builder = env.from_list(items).apply(view)
    outputs = builder.to_list()
    env.execute()
    plan = getattr(builder, "_plan", None)
    plan_json = plan.model_dump_json() if plan is not None else ""
    captures = []
    for item in outputs:
        for key, value in item.items():
            if isinstance(value, RunCapture):
                captures.append(value)
            else:  # an output that did not go through the kit's hook (cannot happen)
                captures.append(RunCapture(key=key, seq=None, outputs=[value]))
    return captures, plan_json


__all__ = ["run_local"]
