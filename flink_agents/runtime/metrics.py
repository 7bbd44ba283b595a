"""In-process metric groups (the Flink host may bridge them to Flink metrics)."""

from __future__ import annotations

import threading
from typing import Any

from flink_agents.api.metric_group import MetricGroup


class Counter:
    """A thread-safe counter."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def inc(self, n: int = 1) -> None:
        with self._lock:
            self._count += n

    def dec(self, n: int = 1) -> None:
        with self._lock:
            self._count -= n

    def get_count(self) -> int:
        return self._count


class Gauge:
    """The last value set."""

    def __init__(self) -> None:
        self._value: Any = None

    def update(self, value: Any) -> None:
        self._value = value

    def get_value(self) -> Any:
        return self._value


class Histogram:
    """Keeps the last 1,000 values."""

    def __init__(self) -> None:
        self._values: list[float] = []
        self._count = 0

    def update(self, value: float) -> None:
        self._count += 1
        self._values.append(value)
        if len(self._values) > 1000:
            del self._values[:-1000]

    def get_count(self) -> int:
        return self._count

    def get_values(self) -> list[float]:
        return list(self._values)


class SimpleMetricGroup(MetricGroup):
    """Metrics kept in memory, nested by name."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._groups: dict[str, SimpleMetricGroup] = {}
        self._metrics: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get_sub_group(self, name: str) -> SimpleMetricGroup:
        with self._lock:
            return self._groups.setdefault(name, SimpleMetricGroup(f"{self.name}.{name}"))

    def _get(self, name: str, factory: type) -> Any:
        with self._lock:
            metric = self._metrics.setdefault(name, factory())
        if not isinstance(metric, factory):
            raise TypeError(f"metric {name!r} is a {type(metric).__name__}")
        return metric

    def get_counter(self, name: str) -> Counter:
        return self._get(name, Counter)  # type: ignore[no-any-return]

    def get_gauge(self, name: str) -> Gauge:
        return self._get(name, Gauge)  # type: ignore[no-any-return]

    def get_histogram(self, name: str) -> Histogram:
        return self._get(name, Histogram)  # type: ignore[no-any-return]

    def to_dict(self) -> dict[str, Any]:
        """Current values, nested."""
        out: dict[str, Any] = {}
        for name, m in self._metrics.items():
            if isinstance(m, Counter):
                out[name] = m.get_count()
            elif isinstance(m, Gauge):
                out[name] = m.get_value()
            else:
                out[name] = m.get_values()
        for name, g in self._groups.items():
            out[name] = g.to_dict()
        return out
