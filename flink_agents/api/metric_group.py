"""Metrics an action can update (counters, gauges, histograms, meters)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class MetricGroup(ABC):
    """A named group of metrics; sub-groups nest."""

    @abstractmethod
    def get_sub_group(self, name: str) -> MetricGroup:
        """A nested group."""

    @abstractmethod
    def get_counter(self, name: str) -> Any:
        """A counter with ``inc(n=1)``, ``dec(n=1)``, ``get_count()``."""

    @abstractmethod
    def get_gauge(self, name: str) -> Any:
        """A gauge with ``update(value)``, ``get_value()``."""

    @abstractmethod
    def get_histogram(self, name: str) -> Any:
        """A histogram with ``update(value)``, ``get_count()``, ``get_values()``."""

    @abstractmethod
    def get_meter(self, name: str) -> Any:
        """A meter with ``mark(n=1)`` (alias ``mark_event``), ``get_count()``,
        ``get_rate()`` (events per second)."""
