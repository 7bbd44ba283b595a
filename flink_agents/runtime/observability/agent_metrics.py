"""The built-in agent metrics (names as in Apache Flink Agents), counted by an observer.

Counted into the runner's metric group (:attr:`AgentRunner.metrics`, the group
``ctx.agent_metric_group`` returns), which the local environment keeps and the Flink host
publishes to Flink (``runtime/flink/metric_publisher.py``):

- agent scope: ``numOfEventProcessed`` / ``numOfEventProcessedPerSec``,
  ``numOfActionsExecuted`` / ``numOfActionsExecutedPerSec`` (upstream's names), and ours:
  ``runsInFlight`` and ``pendingInputs`` (gauges), ``runLatencyMs``, ``modelCallLatencyMs``,
  ``toolCallLatencyMs`` (histograms), ``numOfRuns``, ``numOfRunsFailed``,
  ``numOfModelCalls``, ``numOfToolCalls``, ``numOfActionsFailed`` / ``Retried`` /
  ``Ignored`` (errors by outcome), ``numOfCallsReplayed`` (durable calls answered from the log
  after a restore), ``numOfInputsRejected`` (records that could not become an input event),
  ``numOfDeadLetters`` (runs set aside by the ``dead-letter`` strategy),
  ``numOfRunsOverLimit`` (runs stopped by ``max-events-per-run`` / ``max-action-time-per-run``);
- key-value group ``action`` = action name: ``numOfActionsExecuted`` (+``PerSec``); within
  it, group ``model`` = chat model resource name: ``promptTokens``, ``completionTokens``,
  ``retryCount``; group ``tool`` = tool name: ``numOfToolCalls``.
"""

from __future__ import annotations

from collections.abc import Callable

from flink_agents.api.core_options import ConfigOption, register_options
from flink_agents.runtime.metric_groups import (
    Counter,
    CounterView,
    Histogram,
    Meter,
    SimpleMetricGroup,
)
from flink_agents.runtime.observability import CallFinished, RunCounts, RunFinished, RunObserver

#: Counts that have a ``...PerSec`` meter too (upstream's).
_METERED = ("numOfEventProcessed", "numOfActionsExecuted")


class MetricsOptions:
    """Options of the built-in metrics."""

    ENABLED: ConfigOption[bool] = ConfigOption(
        key="metrics.enabled",
        config_type=bool,
        default=True,
        description="count the built-in agent metrics (user metrics are always kept)",
    )


register_options(MetricsOptions)


class AgentMetrics(RunObserver):
    """The built-in metrics in ``group`` (the agent metric group).

    Counts of runs, events and actions are read from the loop's :class:`RunCounts` when a
    metric is read (no work per event or action); this observer times runs and counts
    model and tool calls.

    Args:
        group: the runner's agent metric group.
        counts: the runner's counts.
    """

    observes_steps = False

    def __init__(self, group: SimpleMetricGroup, counts: RunCounts) -> None:
        self.group = group
        self.counts = counts

        def view(name: str, read: Callable[[], int], target: SimpleMetricGroup = group) -> None:
            counter = target.register(name, CounterView(read))
            if name.startswith("numOf") and name in _METERED:
                target.register(f"{name}PerSec", Meter(counter))

        view("numOfEventProcessed", lambda: counts.events)
        view("numOfActionsExecuted", lambda: counts.actions)
        view("numOfRuns", lambda: counts.runs)
        view("numOfRunsFailed", lambda: counts.runs_failed)
        view("numOfActionsFailed", lambda: counts.failed)
        view("numOfActionsRetried", lambda: counts.retried)
        view("numOfActionsIgnored", lambda: counts.ignored)
        view("numOfInputsRejected", lambda: counts.rejected)
        view("numOfDeadLetters", lambda: counts.dead_letters)
        view("numOfRunsOverLimit", lambda: counts.over_limit)
        for action, cell in counts.by_action.items():
            view(
                "numOfActionsExecuted",
                lambda cell=cell: cell[0],  # type: ignore[misc]
                group.get_sub_group("action", action),
            )
        self.run_latency = group.get_histogram("runLatencyMs")
        self.model_latency = group.get_histogram("modelCallLatencyMs")
        self.tool_latency = group.get_histogram("toolCallLatencyMs")
        self.model_calls = group.get_counter("numOfModelCalls")
        self.tool_calls = group.get_counter("numOfToolCalls")
        self.replayed = group.get_counter("numOfCallsReplayed")
        group.get_gauge("runsInFlight").set_source(lambda: counts.in_flight)
        self._pending = group.get_gauge("pendingInputs")
        self._pending.update(0)
        self._by_model: dict[tuple[str, str], tuple[Counter, Counter, Counter]] = {}
        self._by_tool: dict[tuple[str, str], Counter] = {}

    @property
    def in_flight(self) -> int:
        """Runs in progress."""
        return self.counts.in_flight

    def set_pending_source(self, source: Callable[[], int]) -> None:
        """Where the ``pendingInputs`` gauge reads its value (a host's queue length)."""
        self._pending.set_source(source)

    # -- observer ------------------------------------------------------------------------------
    def call_finished(self, call: CallFinished) -> None:
        if call.replayed:
            self.replayed.add_single_writer()
            return
        kind, action, name, seconds = call.kind, call.action, call.name, call.seconds
        if kind == "model":
            self.model_calls.add_single_writer()
            self.model_latency.update(seconds * 1000.0)
            counters = self._by_model.get((action, name))
            if counters is None:
                sub = self.group.get_sub_group("action", action).get_sub_group("model", name)
                counters = self._by_model[(action, name)] = (
                    sub.get_counter("promptTokens"),
                    sub.get_counter("completionTokens"),
                    sub.get_counter("retryCount"),
                )
            extra = getattr(call.result, "extra_args", None)
            if extra:
                usage = extra.get("usage")
                if usage:
                    counters[0].add_single_writer(int(usage.get("prompt_tokens") or 0))
                    counters[1].add_single_writer(int(usage.get("completion_tokens") or 0))
                attempts = extra.get("attempts")
                if attempts and attempts > 1:
                    counters[2].add_single_writer(int(attempts) - 1)
        elif kind == "tool":
            self.tool_calls.add_single_writer()
            self.tool_latency.update(seconds * 1000.0)
            counter = self._by_tool.get((action, name))
            if counter is None:
                sub = self.group.get_sub_group("action", action).get_sub_group("tool", name)
                counter = self._by_tool[(action, name)] = sub.get_counter("numOfToolCalls")
            counter.add_single_writer()

    def run_finished(self, finished: RunFinished) -> None:
        self.run_latency.update(finished.seconds * 1000.0)


def histogram_values_since(histogram: Histogram, seen: int) -> list[float]:
    """The values ``histogram`` got after its first ``seen`` updates (those it still keeps)."""
    new = histogram.get_count() - seen
    if new <= 0:
        return []
    values = histogram.get_values()
    return values[-new:] if new < len(values) else values
