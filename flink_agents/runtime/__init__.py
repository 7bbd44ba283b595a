"""The execution core, independent of any host (local or Flink)."""

from flink_agents.runtime.core import AgentRunner, RunResult
from flink_agents.runtime.resources import ResourceCache

__all__ = ["AgentRunner", "ResourceCache", "RunResult"]
