"""The built-in agent metrics (names as in Apache Flink Agents), counted by an observer.

Counted into the runner's metric group (:attr:`AgentRunner.metrics`, the group
``ctx.agent_metric_group`` returns), which the local environment keeps and the Flink host
publishes to Flink (``runtime/flink/metrics.py``):

- agent scope: ``numOfEventProcessed`` / ``numOfEventProcessedPerSec``,
  ``numOfActionsExecuted`` / ``numOfActionsExecutedPerSec`` (upstream's names), and ours:
  ``runsInFlight`` and ``pendingInputs`` (gauges), ``runLatencyMs``, ``modelCallLatencyMs``,
  ``toolCallLatencyMs`` (histograms), ``numOfRuns``, ``numOfRunsFailed``,
  ``numOfModelCalls``, ``numOfToolCalls``, ``numOfActionsFailed`` / ``Retried`` /
  ``Ignored`` (errors by outcome), ``numOfCallsReplayed`` (durable calls answered from the log
  after a restore);
- key-value group ``action`` = action name: ``numOfActionsExecuted`` (+``PerSec``); within
  it, group ``model`` = chat model resource name: ``promptTokens``, ``completionTokens``,
  ``retryCount``; group ``tool`` = tool name: ``numOfToolCalls``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from flink_agents.api.core_options import ConfigOption, register_options
from flink_agents.runtime.metrics import Counter, Histogram, SimpleMetricGroup
from flink_agents.runtime.observability import RunInfo, RunObserver

if TYPE_CHECKING:
    from flink_agents.api.events.event import Event


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
    """Counts the built-in metrics into ``group`` (the agent metric group).

    Args:
        group: the runner's agent metric group.
    """

    def __init__(self, group: SimpleMetricGroup) -> None:
        self.group = group
        self.events = group.get_counter("numOfEventProcessed")
        group.get_meter("numOfEventProcessedPerSec", self.events)
        self.actions = group.get_counter("numOfActionsExecuted")
        group.get_meter("numOfActionsExecutedPerSec", self.actions)
        self.runs = group.get_counter("numOfRuns")
        self.runs_failed = group.get_counter("numOfRunsFailed")
        self.run_latency = group.get_histogram("runLatencyMs")
        self.model_latency = group.get_histogram("modelCallLatencyMs")
        self.tool_latency = group.get_histogram("toolCallLatencyMs")
        self.model_calls = group.get_counter("numOfModelCalls")
        self.tool_calls = group.get_counter("numOfToolCalls")
        self.replayed = group.get_counter("numOfCallsReplayed")
        self.outcomes = {
            "failed": group.get_counter("numOfActionsFailed"),
            "retried": group.get_counter("numOfActionsRetried"),
            "ignored": group.get_counter("numOfActionsIgnored"),
        }
        self.in_flight = 0
        group.get_gauge("runsInFlight").set_source(lambda: self.in_flight)
        self._pending = group.get_gauge("pendingInputs")
        self._pending.update(0)
        self._by_action: dict[str, Counter] = {}
        self._by_model: dict[tuple[str, str], tuple[Counter, Counter, Counter]] = {}
        self._by_tool: dict[tuple[str, str], Counter] = {}

    def set_pending_source(self, source: Callable[[], int]) -> None:
        """Where the ``pendingInputs`` gauge reads its value (a host's queue length)."""
        self._pending.set_source(source)

    def _action_counter(self, action: str) -> Counter:
        counter = self._by_action.get(action)
        if counter is None:
            sub = self.group.get_sub_group("action", action)
            counter = self._by_action[action] = sub.get_counter("numOfActionsExecuted")
            sub.get_meter("numOfActionsExecutedPerSec", counter)
        return counter

    # -- observer ------------------------------------------------------------------------------
    def run_started(self, run: RunInfo) -> None:
        self.in_flight += 1

    def events_sent(
        self, run: RunInfo, events: Sequence[Event], parent: Event | None, action: str | None
    ) -> None:
        self.events.inc(len(events))

    def action_finished(
        self,
        run: RunInfo,
        action: str,
        event: Event,
        started: float,
        seconds: float,
        error: BaseException | None,
        outcome: str | None,
    ) -> None:
        self.actions.inc()
        self._action_counter(action).inc()
        if outcome is not None:
            self.outcomes[outcome].inc()

    def call_finished(
        self,
        run: RunInfo,
        action: str,
        kind: str,
        name: str,
        started: float,
        seconds: float,
        result: Any,
        error: BaseException | None,
        replayed: bool,
    ) -> None:
        if replayed:
            self.replayed.inc()
            return
        if kind == "model":
            self.model_calls.inc()
            self.model_latency.update(seconds * 1000.0)
            counters = self._by_model.get((action, name))
            if counters is None:
                sub = self.group.get_sub_group("action", action).get_sub_group("model", name)
                counters = self._by_model[(action, name)] = (
                    sub.get_counter("promptTokens"),
                    sub.get_counter("completionTokens"),
                    sub.get_counter("retryCount"),
                )
            extra = getattr(result, "extra_args", None)
            if extra:
                usage = extra.get("usage")
                if usage:
                    counters[0].inc(int(usage.get("prompt_tokens") or 0))
                    counters[1].inc(int(usage.get("completion_tokens") or 0))
                attempts = extra.get("attempts")
                if attempts and attempts > 1:
                    counters[2].inc(int(attempts) - 1)
        elif kind == "tool":
            self.tool_calls.inc()
            self.tool_latency.update(seconds * 1000.0)
            counter = self._by_tool.get((action, name))
            if counter is None:
                sub = self.group.get_sub_group("action", action).get_sub_group("tool", name)
                counter = self._by_tool[(action, name)] = sub.get_counter("numOfToolCalls")
            counter.inc()

    def run_finished(self, run: RunInfo, seconds: float, error: BaseException | None) -> None:
        self.in_flight -= 1
        self.runs.inc()
        self.run_latency.update(seconds * 1000.0)
        if error is not None:
            self.runs_failed.inc()


def histogram_values_since(histogram: Histogram, seen: int) -> list[float]:
    """The values ``histogram`` got after its first ``seen`` updates (those it still keeps)."""
    new = histogram.get_count() - seen
    if new <= 0:
        return []
    values = histogram.get_values()
    return values[-new:] if new < len(values) else values
