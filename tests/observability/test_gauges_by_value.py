"""Thread mode publishes gauges as Flink counters set to their value: Flink never calls
into the embedded interpreter from its metric threads (a read while the task closed the
interpreter crashed the TaskManager with a SIGSEGV in take_gil)."""

from __future__ import annotations

from typing import Any

from flink_agents.runtime.flink.metric_publisher import FlinkMetrics
from flink_agents.runtime.metric_groups import SimpleMetricGroup


class _Counter:
    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        self.count += n


class _Group:
    """Records what a PyFlink metric group is asked for."""

    def __init__(self) -> None:
        self.counters: dict[str, _Counter] = {}
        self.gauges: dict[str, Any] = {}

    def counter(self, name: str) -> _Counter:
        return self.counters.setdefault(name, _Counter())

    def gauge(self, name: str, read: Any) -> None:
        self.gauges[name] = read


def test_thread_mode_gauges_are_counters_set_to_the_value() -> None:
    root = SimpleMetricGroup()
    value = {"n": 3}
    root.get_gauge("runsInFlight").set_source(lambda: value["n"])
    root.get_gauge("ratio").update(0.6)
    root.get_gauge("broken").set_source(lambda: 1 // 0)
    group = _Group()
    metrics = FlinkMetrics(root, group, 0, gauges_by_value=True)
    metrics.publish()
    assert group.gauges == {}  # nothing for Flink to call back
    assert group.counters["runsInFlight"].count == 3
    assert group.counters["ratio"].count == 1  # rounded
    assert group.counters["broken"].count == 0  # a failing source skips, the rest publish
    value["n"] = 1
    metrics.publish()
    assert group.counters["runsInFlight"].count == 1
    value["n"] = 5
    metrics.publish()
    assert group.counters["runsInFlight"].count == 5


def test_process_mode_gauges_are_read_by_flink() -> None:
    root = SimpleMetricGroup()
    root.get_gauge("runsInFlight").set_source(lambda: 2)
    group = _Group()
    FlinkMetrics(root, group, 0).publish()
    assert group.counters == {}
    assert group.gauges["runsInFlight"]() == 2
