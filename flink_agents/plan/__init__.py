"""Compiling an agent into an AgentPlan (JSON), and the built-in actions."""

from flink_agents.plan.agent_plan import ActionPlan, AgentPlan, ResourceProvider

__all__ = ["ActionPlan", "AgentPlan", "ResourceProvider"]
