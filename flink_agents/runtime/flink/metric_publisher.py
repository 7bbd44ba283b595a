"""Publishes the runner's metric group (built-in and user metrics) to Flink's metric system.

Metrics are counted in Python (``runtime/metric_groups.py``); :meth:`FlinkMetrics.publish` walks
the group tree on the operator thread and hands Flink what changed: counter and meter
increments (one call each per publication, not per update: in thread mode every call into a
Flink metric is a call into Java), histogram values as a Flink distribution. Gauges: in
process mode registered once for Flink to read; in thread mode a Flink counter set to the
gauge's value (rounded to an integer) at each publication, because Flink reads a gauge from
its own metric threads, and a read that comes while the task closes the embedded
interpreter crashed the TaskManager (SIGSEGV in ``take_gil``, seen on a standalone cluster
whose REST metrics were polled while a job was cancelled). Thread mode publishes at most every
``metrics.publish-interval-ms`` (looked at with each batch and each timer), when the last
key with work in flight commits, and when the function closes; process mode (Beam reports
metrics at bundle end) publishes with every batch.

Names: the agent group is the operator's metric group; sub-groups become Flink groups and
key-value groups (``action`` = name) Flink key-value groups, so the REST API shows
``<operator>.action.<name>.numOfActionsExecuted`` and Prometheus an ``action`` label.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from flink_agents.api.core_options import ConfigOption, register_options
from flink_agents.runtime.metric_groups import (
    Counter,
    Gauge,
    Histogram,
    Meter,
    SimpleMetricGroup,
)
from flink_agents.runtime.observability.agent_metrics import histogram_values_since

log = logging.getLogger("flink_agents.runtime.flink")


class FlinkMetricsOptions:
    """How often metrics reach Flink."""

    PUBLISH_INTERVAL_MS: ConfigOption[int] = ConfigOption(
        key="metrics.publish-interval-ms",
        config_type=int,
        default=500,
        description="thread mode: the longest time between two publications of the agent "
        "metrics to Flink while records or timers come (they are also published when no "
        "run is left in flight and at close)",
        check=lambda ms: None if ms > 0 else "must be > 0",
    )


register_options(FlinkMetricsOptions)


def _gauge_reader(gauge: Gauge) -> Any:
    def read() -> Any:
        value = gauge.get_value()
        return value if isinstance(value, (int, float)) else 0

    return read


class FlinkMetrics:
    """Mirrors ``root`` into ``flink_group`` (a PyFlink ``MetricGroup``).

    Args:
        root: the runner's agent metric group.
        flink_group: ``runtime_context.get_metrics_group()``.
        interval: seconds between publications (0: every :meth:`publish` call publishes).
        gauges_by_value: publish gauges as counters set to their value (thread mode: Flink
            never calls into Python).
    """

    def __init__(
        self,
        root: SimpleMetricGroup,
        flink_group: Any,
        interval: float,
        *,
        gauges_by_value: bool = False,
    ) -> None:
        self.root = root
        self.flink_group = flink_group
        self.interval = interval
        self.gauges_by_value = gauges_by_value
        self._last = 0.0
        #: id(python metric) -> [flink metric, published count]
        self._mirrored: dict[int, list[Any]] = {}
        self._groups: dict[int, Any] = {id(root): flink_group}
        self._failed = False

    def maybe_publish(self) -> None:
        """Publish when the interval has passed (cheap otherwise: one clock read)."""
        if time.monotonic() - self._last >= self.interval:
            self.publish()

    def publish(self) -> None:
        """Hand Flink every change since the last publication (never raises)."""
        self._last = time.monotonic()
        if self._failed:
            return
        try:
            self._publish(self.root, self.flink_group)
        except Exception as exc:  # noqa: BLE001 - metrics must never fail the job
            self._failed = True
            log.warning("cannot publish agent metrics to Flink (%s); they stay local", exc)

    def _publish(self, group: SimpleMetricGroup, flink_group: Any) -> None:
        mirrored = self._mirrored
        for name, metric in group.metrics():
            entry = mirrored.get(id(metric))
            if entry is None:
                entry = mirrored[id(metric)] = [self._register(flink_group, name, metric), 0]
            target, seen = entry
            if target is None:
                continue
            if isinstance(metric, Counter):
                count = metric.get_count()
                if count != seen:
                    target.inc(count - seen)
                    entry[1] = count
            elif isinstance(metric, Meter):
                count = metric.get_count()
                if count != seen:
                    target.mark_event(count - seen)
                    entry[1] = count
            elif isinstance(metric, Histogram):
                for value in histogram_values_since(metric, seen):
                    target.update(int(value))
                entry[1] = metric.get_count()
            elif isinstance(metric, Gauge):  # published by value (thread mode)
                try:
                    value = round(_gauge_reader(metric)())
                except Exception:  # noqa: BLE001 - a failing source skips this publication
                    continue
                if value != seen:
                    target.inc(value - seen)
                    entry[1] = value
        for key, sub in group.groups():
            flink_sub = self._groups.get(id(sub))
            if flink_sub is None:
                flink_sub = self._groups[id(sub)] = (
                    flink_group.add_group(key[0], key[1])
                    if isinstance(key, tuple)
                    else flink_group.add_group(key)
                )
            self._publish(sub, flink_sub)

    def _register(self, flink_group: Any, name: str, metric: Any) -> Any:
        if isinstance(metric, Counter):
            return flink_group.counter(name)
        if isinstance(metric, Meter):
            return flink_group.meter(name, time_span_in_seconds=60)
        if isinstance(metric, Histogram):
            return flink_group.distribution(name)
        if isinstance(metric, Gauge):
            if self.gauges_by_value:
                return flink_group.counter(name)
            flink_group.gauge(name, _gauge_reader(metric))
        return None
