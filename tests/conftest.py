"""Shared test setup."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _no_inherited_gateway_block():
    """After an in-process PyFlink job, ``PYFLINK_GATEWAY_DISABLED=true`` is found in this
    process's environment (it is meant for Python UDF workers). Subprocesses started by
    later tests (a job script, ``flink run``) would inherit it and refuse to start their
    own gateway, so it is removed before each test."""
    os.environ.pop("PYFLINK_GATEWAY_DISABLED", None)
    yield
    os.environ.pop("PYFLINK_GATEWAY_DISABLED", None)


@pytest.fixture(autouse=True)
def _heap_thawed():
    """An agent operator's open() freezes this process's heap once (``python.gc-freeze``);
    a test process outlives many operators and must still collect their reference cycles
    (tests check that runs free what they made), so the heap is thawed after each test."""
    yield
    heap = sys.modules.get("flink_agents.runtime.flink.heap")
    if heap is not None:
        heap.thaw()


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One local standalone cluster (1 TaskManager, 3 slots: an operations test rescales to
    3) for the tests that submit jobs
    to a cluster, started on first use and stopped at the end of the session (starting one
    takes 13-22 s). Yields its work directory (``submit(..., workdir=...)``,
    ``flink-agents submit ... --cluster DIR``)."""
    from flink_agents.ops.cluster import start_cluster, stop_cluster
    from flink_agents.testing.ports import free_port

    workdir = tmp_path_factory.mktemp("standalone-cluster")
    # Flink's Prometheus reporter (from the PyFlink wheel's plugins/metrics-prometheus) on
    # ports of its own, for tests/observability/test_prometheus.py.
    prometheus = free_port()
    (workdir / "prometheus-port").write_text(str(prometheus))
    start_cluster(
        workdir,
        port=free_port(),
        slots=3,
        extra_config={
            "metrics.reporter.prom.factory.class": (
                "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"
            ),
            # a range: the JobManager takes the first free port, the TaskManager the next
            "metrics.reporter.prom.port": f"{prometheus}-{prometheus + 3}",
            "metrics.reporter.prom.interval": "1 s",
        },
    )
    try:
        yield workdir
    finally:
        stop_cluster(workdir)
