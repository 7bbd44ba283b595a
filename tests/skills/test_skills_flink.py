"""Upstream's quickstart MathAgent on a MiniCluster (thread mode): the skills load from the
package on the worker, the model loads the skill and the bash tool runs bc there."""

from __future__ import annotations

import pytest
from pyflink.common import Types

from flink_agents.testing.minicluster import collect, make_env
from tests.skills.agents import COMMANDS, MathAgent

pytestmark = pytest.mark.flink


def test_math_agent_with_skills_on_flink() -> None:
    env, agents_env = make_env(parallelism=1)
    questions = env.from_collection(list(COMMANDS), type_info=Types.STRING())
    out = (
        agents_env.from_datastream(input=questions, key_selector=lambda q: q)
        .apply(MathAgent())
        .to_datastream()
    )
    assert sorted(collect(out)) == sorted(["20", "1024", "3.33"])
