"""The local execution environment (``from_list`` / ``to_list``), no Flink needed."""

from __future__ import annotations

import uuid
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.approval import ApprovalResponse
from flink_agents.api.execution_environment import AgentBuilder, AgentsExecutionEnvironment
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.local.runner import LocalRunner
from flink_agents.runtime.metric_groups import SimpleMetricGroup


def _split(item: Any) -> tuple[Any, Any]:
    """``{"key": k, "value": v}``, ``{"k": k, "v": v}`` or a bare value (own key; an
    ``ApprovalResponse``: the key of the run it answers)."""
    if isinstance(item, ApprovalResponse):
        return item.key, item
    if isinstance(item, dict):
        if "value" in item and set(item) <= {"key", "value"}:
            return item.get("key", str(uuid.uuid4())), item["value"]
        if "v" in item and set(item) <= {"k", "v"}:
            return item.get("k", str(uuid.uuid4())), item["v"]
    return str(uuid.uuid4()), item


class LocalAgentBuilder(AgentBuilder):
    """Input list + agent; outputs land in the list returned by :meth:`to_list`."""

    def __init__(self, env: LocalExecutionEnvironment, records: list[Any]) -> None:
        self._env = env
        self._records = [_split(r) for r in records]
        self._plan: AgentPlan | None = None
        self._outputs: list[dict[str, Any]] | None = None
        self.runner: LocalRunner | None = None
        self._metrics: SimpleMetricGroup | None = None

    def apply(self, agent: Agent | str) -> LocalAgentBuilder:
        if self._plan is not None:
            raise RuntimeError("apply() was already called on this input; call from_list again")
        agent = self._env._agent_to_apply(agent)  # an agent loaded with load_yaml, by name
        plan = AgentPlan.from_agent(
            agent, self._env.get_config(), self._env.resources, self._env.interceptors
        )
        from flink_agents.runtime.java import check_java_resources

        check_java_resources(plan, "local")  # Java resources need a thread-mode Flink worker
        self._plan = plan
        return self

    def to_list(self) -> list[dict[str, Any]]:
        if self._plan is None:
            raise RuntimeError("call apply(agent) before to_list()")
        self._outputs = []
        return self._outputs

    def get_metric_group(self) -> SimpleMetricGroup | None:
        """The agent metric group of this input's runs (built-in and user metrics), kept
        after ``execute()``; None before. ``.to_dict()`` gives the values, nested."""
        return self._metrics

    def _execute(self) -> None:
        if self._plan is None or self._outputs is None:
            raise RuntimeError("from_list(...).apply(agent).to_list() must come before execute()")
        if self.runner is None:
            self.runner = LocalRunner(self._plan)
            self._metrics = self.runner.runner.metrics
        results = self.runner.run(self._records)
        for result in results:
            self._outputs.extend({result.key: out} for out in result.outputs)


class LocalExecutionEnvironment(AgentsExecutionEnvironment):
    """Runs agents in this process: for development, tests and small batch jobs."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        for key, value in kwargs.items():
            self.get_config().set_str(key, value)
        self._builders: list[LocalAgentBuilder] = []

    def from_list(self, input: list[Any]) -> LocalAgentBuilder:  # noqa: A002
        """Input records: ``{"key": k, "value": v}`` / ``{"k": .., "v": ..}`` dicts or bare
        values (each bare value gets a key of its own)."""
        if not isinstance(input, list):
            raise TypeError(f"from_list takes a list, got {type(input).__name__}")
        builder = LocalAgentBuilder(self, input)
        self._builders.append(builder)
        return builder

    def execute(self) -> None:
        """Run every ``from_list(...).apply(...).to_list()`` built so far; outputs are
        appended to the lists ``to_list()`` returned. Resources are closed afterwards."""
        try:
            for builder in self._builders:
                builder._execute()
        finally:
            for builder in self._builders:
                if builder.runner is not None:
                    builder.runner.close()
                    builder.runner = None
