"""The uids of the agent's operators (what a savepoint is restored by), without a Flink job."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from flink_agents.errors import ConfigurationError
from flink_agents.runtime.flink.environment import FlinkExecutionEnvironment


def _uid(env: SimpleNamespace, uid: str | None, name: str) -> str:
    return FlinkExecutionEnvironment.operator_uid(env, uid, name)  # type: ignore[arg-type]


def test_default_uids_come_from_the_agent_class_and_are_numbered_per_job() -> None:
    env = SimpleNamespace(_uids=set())
    assert _uid(env, None, "ReviewAgent") == "flink-agents-ReviewAgent"
    assert _uid(env, None, "ReviewAgent") == "flink-agents-ReviewAgent-2"
    assert _uid(env, None, "Agent") == "flink-agents-Agent"
    assert _uid(env, "reviews", "ReviewAgent") == "reviews"


@pytest.mark.parametrize("bad", ["", "  ", 3])
def test_a_bad_or_repeated_uid_is_a_clear_error(bad) -> None:
    env = SimpleNamespace(_uids=set())
    with pytest.raises(ConfigurationError, match="non-empty string"):
        _uid(env, bad, "A")
    _uid(env, "mine", "A")
    with pytest.raises(ConfigurationError, match="already used"):
        _uid(env, "mine", "B")
