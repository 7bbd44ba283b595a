"""Helpers of the Java bridge Flink tests (importable by the Python workers)."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest
from pyflink.common import Configuration
from pyflink.common.typeinfo import Types
from pyflink.datastream import DataStream, StreamExecutionEnvironment

from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.runtime.flink import environment as flink_environment
from flink_agents.runtime.flink.function import AgentProcessFunction
from flink_agents.runtime.java import init_java_bridge


class BridgeInitFunction(AgentProcessFunction):
    """The host's function, initializing the Java bridge first on the operator thread.

    Used only while the host's own ``open()`` does not call ``init_java_bridge`` (the one line
    the host needs, see ``flink_agents.runtime.java``).
    """

    def open(self, runtime_context: Any) -> None:
        super().open(runtime_context)
        assert self.slot is not None
        init_java_bridge(self.slot.runner.resources)


def host_initializes_bridge() -> bool:
    """Whether the Flink host calls ``init_java_bridge`` in its function's ``open()``."""
    return "init_java_bridge" in inspect.getsource(AgentProcessFunction.open)


@pytest.fixture
def bridge_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make agent jobs initialize the bridge on the operator thread."""
    if not host_initializes_bridge():
        monkeypatch.setattr(flink_environment, "AgentProcessFunction", BridgeInitFunction)


def make_env(mode: str = "thread", parallelism: int = 1, **config: Any) -> tuple[Any, Any]:
    """A stream environment and an agents environment over it in ``mode``."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(parallelism)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": mode, **config}
    )
    return env, agents_env


def source(env: StreamExecutionEnvironment, records: list[dict[str, Any]]) -> DataStream:
    """A bounded stream of ``records``."""
    return env.from_collection([json.dumps(r) for r in records], type_info=Types.STRING()).map(
        json.loads, output_type=Types.PICKLED_BYTE_ARRAY()
    )


def collect(stream: DataStream) -> list[Any]:
    """Run the job; every record of ``stream``."""
    with stream.execute_and_collect() as results:
        return list(results)
