"""In-process metric groups: what actions and the built-in metrics update.

The local environment keeps them (``LocalAgentBuilder.get_metric_group()``); the Flink host
publishes them to Flink's metric system from the operator thread
(``runtime/flink/metric_publisher.py``): counters and meters by their change since the last
publication, histogram values as they came, gauges read by Flink.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
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

    def add_single_writer(self, n: int = 1) -> None:
        """``inc(n)`` without the lock, for a counter that only one thread at a time updates
        (the built-in metrics: the observer runs where the runner's loop runs)."""
        self._count += n

    def get_count(self) -> int:
        return self._count


class CounterView(Counter):
    """A counter whose count is read from elsewhere (a plain integer another part keeps);
    it cannot be changed through this object."""

    def __init__(self, read: Callable[[], int]) -> None:
        super().__init__()
        self._read = read

    def inc(self, n: int = 1) -> None:
        raise TypeError("this counter is kept by flink-agents and cannot be changed")

    dec = inc
    add_single_writer = inc

    def get_count(self) -> int:
        return self._read()


class Gauge:
    """The last value set, or what a source function returns."""

    def __init__(self) -> None:
        self._value: Any = None
        self._source: Callable[[], Any] | None = None

    def update(self, value: Any) -> None:
        self._value = value

    def set_source(self, source: Callable[[], Any]) -> None:
        """Read the value from ``source()`` from now on."""
        self._source = source

    def get_value(self) -> Any:
        return self._source() if self._source is not None else self._value


class Meter:
    """Events per second: ``mark(n)`` counts, :meth:`get_rate` is the rate over the last
    minute (as Flink's ``MeterView``). A meter may count into a :class:`Counter` (as Flink's
    ``MeterView(counter)``), so a count and its rate cost one update."""

    def __init__(self, counter: Counter | None = None) -> None:
        self.counter = counter or Counter()
        self._created = time.monotonic()
        self._window: deque[tuple[float, int]] = deque()

    def mark(self, n: int = 1) -> None:
        self.counter.inc(n)

    mark_event = mark

    def get_count(self) -> int:
        return self.counter.get_count()

    def get_rate(self) -> float:
        """Events per second since the meter was made, over at most the last 60 s."""
        now = time.monotonic()
        count = self.get_count()
        window = self._window
        window.append((now, count))
        while len(window) > 1 and now - window[0][0] > 60:
            window.popleft()
        since, before = window[0] if len(window) > 1 else (self._created, 0)
        return (count - before) / max(now - since, 1e-9)


class Histogram:
    """Keeps the last 1,000 values."""

    def __init__(self) -> None:
        self._values: deque[float] = deque(maxlen=1000)
        self._count = 0

    def update(self, value: float) -> None:
        self._count += 1
        self._values.append(value)

    def get_count(self) -> int:
        return self._count

    def get_values(self) -> list[float]:
        return list(self._values)


class SimpleMetricGroup(MetricGroup):
    """Metrics kept in memory, nested by name (or by key and value, as Flink's
    ``addGroup(key, value)``: a reporter such as Prometheus makes the key a label)."""

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._groups: dict[str | tuple[str, str], SimpleMetricGroup] = {}
        self._metrics: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get_sub_group(self, name: str, value: str | None = None) -> SimpleMetricGroup:
        """A nested group ``name``, or with ``value`` the key-value group ``name=value``."""
        key: str | tuple[str, str] = name if value is None else (name, str(value))
        group = self._groups.get(key)
        if group is not None:
            return group
        with self._lock:
            label = name if value is None else f"{name}.{value}"
            return self._groups.setdefault(key, SimpleMetricGroup(f"{self.name}.{label}"))

    def groups(self) -> Iterator[tuple[str | tuple[str, str], SimpleMetricGroup]]:
        """The nested groups: ``(name or (key, value), group)``."""
        return iter(list(self._groups.items()))

    def metrics(self) -> Iterator[tuple[str, Any]]:
        """The metrics of this group (not of nested ones): ``(name, metric)``."""
        return iter(list(self._metrics.items()))

    def _get(self, name: str, factory: type) -> Any:
        metric = self._metrics.get(name)
        if metric is None:
            with self._lock:
                metric = self._metrics.setdefault(name, factory())
        if not isinstance(metric, factory):
            raise TypeError(f"metric {name!r} is a {type(metric).__name__}")
        return metric

    def get_counter(self, name: str) -> Counter:
        return self._get(name, Counter)

    def get_gauge(self, name: str) -> Gauge:
        return self._get(name, Gauge)

    def get_histogram(self, name: str) -> Histogram:
        return self._get(name, Histogram)

    def register(self, name: str, metric: Any) -> Any:
        """Add ``metric`` under ``name`` (an error if the name is taken); returns it."""
        with self._lock:
            if name in self._metrics:
                raise ValueError(f"metric {name!r} exists in group {self.name!r}")
            self._metrics[name] = metric
        return metric

    def get_meter(self, name: str, counter: Counter | None = None) -> Meter:
        """A meter (``counter``: count into this counter, for a new meter)."""
        meter = self._metrics.get(name)
        if meter is None and counter is not None:
            with self._lock:
                meter = self._metrics.setdefault(name, Meter(counter))
        return self._get(name, Meter)

    def to_dict(self) -> dict[str, Any]:
        """Current values, nested."""
        out: dict[str, Any] = {}
        for name, m in self.metrics():
            if isinstance(m, (Counter, Meter)):
                out[name] = m.get_count()
            elif isinstance(m, Gauge):
                out[name] = m.get_value()
            else:
                out[name] = m.get_values()
        for key, g in self.groups():
            if isinstance(key, tuple):
                out.setdefault(key[0], {})[key[1]] = g.to_dict()
            else:
                out[key] = g.to_dict()
        return out
