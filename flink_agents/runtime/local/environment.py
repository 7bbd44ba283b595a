"""The local execution environment (``from_list`` / ``to_list``), no Flink needed."""

from __future__ import annotations

import uuid
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.approval import ApprovalResponse
from flink_agents.api.dead_letter import DeadLetter
from flink_agents.api.events.event import Event
from flink_agents.api.events.listener import EventContext, EventListener
from flink_agents.api.events.tool_event import ToolRequestEvent
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


def _check_key(index: int, key: Any) -> None:
    """Keys must be hashable (they index each key's memory and order)."""
    try:
        hash(key)
    except TypeError:
        raise TypeError(
            f"input {index} has the key {key!r}, a {type(key).__name__}, which cannot be a "
            "key: keys must be hashable (str, int, tuple...); use e.g. "
            "json.dumps(key, sort_keys=True) or a tuple of its fields"
        ) from None


class LocalAgentBuilder(AgentBuilder):
    """Input list + agent; outputs land in the list returned by :meth:`to_list`, dead
    letters in the one :meth:`dead_letters` returns."""

    def __init__(self, env: LocalExecutionEnvironment, records: list[Any]) -> None:
        self._env = env
        # Read at execute(), as upstream does: records appended after the pipeline was
        # built are inputs too.
        self._input = records
        self._executed = False
        self._plan: AgentPlan | None = None
        self._outputs: list[dict[str, Any]] | None = None
        self._dead_letters: list[DeadLetter] = []
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

    def dead_letters(self) -> list[DeadLetter]:
        """The runs set aside by ``execute()`` (``error-handling-strategy: dead-letter``,
        and inputs that could not become an input event), in input order: each holds the
        key, the reason and the record's repr (masked, bounded)."""
        return self._dead_letters

    def get_metric_group(self) -> SimpleMetricGroup | None:
        """The agent metric group of this input's runs (built-in and user metrics), kept
        after ``execute()``; None before. ``.to_dict()`` gives the values, nested."""
        return self._metrics

    def _execute(self) -> None:
        if self._plan is None or self._outputs is None:
            raise RuntimeError("from_list(...).apply(agent).to_list() must come before execute()")
        records = [_split(r) for r in self._input]
        for index, (key, _) in enumerate(records):
            _check_key(index, key)
        self._executed = True
        if self.runner is None:
            self.runner = LocalRunner(self._plan)
            self._metrics = self.runner.runner.metrics
            self.runner.runner.add_listener(self._env._tool_requests)
        results = self.runner.run(records)
        for result in results:
            self._outputs.extend({result.key: out} for out in result.outputs)
            if result.dead_letter is not None:
                self._dead_letters.append(result.dead_letter)


class _ToolRequestRecorder(EventListener):
    """Keeps the tool requests of the environment's runs (``get_tool_request_events``)."""

    def __init__(self) -> None:
        self.events: list[ToolRequestEvent] = []

    def on_event_processed(self, context: EventContext, event: Event) -> None:
        if isinstance(event, ToolRequestEvent):
            self.events.append(event)


class LocalExecutionEnvironment(AgentsExecutionEnvironment):
    """Runs agents in this process: for development, tests and small batch jobs."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        for key, value in kwargs.items():
            self.get_config().set_str(key, value)
        self._builders: list[LocalAgentBuilder] = []
        self._tool_requests = _ToolRequestRecorder()

    def from_list(self, input: list[Any]) -> LocalAgentBuilder:  # noqa: A002
        """Input records: ``{"key": k, "value": v}`` / ``{"k": .., "v": ..}`` dicts or bare
        values (each bare value gets a key of its own)."""
        if not isinstance(input, list):
            raise TypeError(f"from_list takes a list, got {type(input).__name__}")
        builder = LocalAgentBuilder(self, input)
        self._builders.append(builder)
        return builder

    def get_tool_request_events(self) -> list[ToolRequestEvent]:
        """The tool request events the runs of :meth:`execute` sent, in order (as
        upstream's local environment keeps them: to check which tools a model asked for)."""
        return list(self._tool_requests.events)

    def execute(self) -> None:
        """Run every ``from_list(...).apply(...).to_list()`` built since the last
        ``execute()``; outputs are appended to the lists ``to_list()`` returned. The input
        lists are read now (records appended after ``from_list`` are inputs too).
        Resources are closed afterwards.

        Raises:
            RuntimeError: nothing new to run: every pipeline already ran (as upstream, a
                second ``execute()`` is an error rather than a second run of the inputs).
        """
        pending = [b for b in self._builders if not b._executed]
        if not pending:
            raise RuntimeError(
                "execute() has no pipeline to run: every from_list(...).apply(...).to_list() "
                "of this environment already ran; build another with from_list(...) first"
            )
        try:
            for builder in pending:
                builder._execute()
        finally:
            for builder in pending:
                if builder.runner is not None:
                    builder.runner.close()
                    builder.runner = None
