"""``benchmarks/host_instructions.py`` without valgrind: the floor (the chat agent's own code)
and the host path it is compared with take the same records (docs/benchmarks.md, "The
floor")."""

from __future__ import annotations

import asyncio
import sys

import pytest

from benchmarks import host_instructions


def test_the_floor_and_the_host_path_each_emit_one_output_per_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # _drive stands a module in for PyFlink's embedded state (it needs the JVM): put back after.
    monkeypatch.setitem(sys.modules, "pyflink.fn_execution.embedded.state_impl", None)
    host_instructions._drive_floor(30, 7)  # asserts one output per record
    host_instructions._drive(30, 7, False)  # the same, and that no run went through a timer


def test_the_floor_runs_the_agents_actions_and_the_model() -> None:
    runner, setup = host_instructions.floor_setup()
    connection = setup.get_connection()
    loop = asyncio.new_event_loop()
    try:
        emitted = loop.run_until_complete(
            host_instructions.floor_runs([{"key": "k", "i": i} for i in range(5)], setup)
        )
        assert connection.calls == 5  # the model answered each record
    finally:
        loop.close()
        runner.close()
    assert emitted == 5
