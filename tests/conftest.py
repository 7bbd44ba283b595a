"""Shared test setup."""

from __future__ import annotations

import os

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
