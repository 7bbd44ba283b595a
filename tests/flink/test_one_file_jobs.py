"""One-file jobs: an agent defined in the job script itself (``__main__``).

``one_file_job.py`` defines everything its agent uses (actions, events, output model, tool,
chat model connection class, reply function, key selector) and is run as a user would:
``python one_file_job.py`` on the MiniCluster (in the mode under test) and on the local
environment; ``tests/cli/test_cli_cluster.py`` submits it to a standalone cluster. Its plan
JSON carries those objects by value and everything else by name, and runs in another
process (where ``__main__`` is something else).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api._function import dumps
from flink_agents.api.events.event import event_class_for
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.local.runner import LocalRunner

#: The mode under test (as in harness.py, which imports PyFlink: the plan tests here are fast).
MODE = os.environ.get("FLINK_AGENTS_TEST_MODE", "thread")

JOB = Path(__file__).with_name("one_file_job.py")

#: What the job outputs: per id, its text, the score (length x WEIGHT), the durable call's
#: tag, the tool's answer through the chat model, and how many inputs its key has seen.
EXPECTED = [
    {"id": 0, "text": "ab", "score": 20, "tag": "short", "reply": "tool said AB!", "seen": 1},
    {"id": 1, "text": "cde", "score": 30, "tag": "long", "reply": "tool said CDE!", "seen": 1},
    {"id": 2, "text": "f", "score": 10, "tag": "short", "reply": "tool said F!", "seen": 2},
    {"id": 3, "text": "ghij", "score": 40, "tag": "long", "reply": "tool said GHIJ!", "seen": 2},
    {"id": 4, "text": "kl", "score": 20, "tag": "short", "reply": "tool said KL!", "seen": 3},
    {"id": 5, "text": "m", "score": 10, "tag": "short", "reply": "tool said M!", "seen": 3},
]
SCRIPT_ACTIONS = {"start", "tag", "ask", "finish"}


def run_script(
    script: Path, *args: str, cwd: Path, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python script args`` with ``cwd`` as working directory: its folder, not the
    repository, is on the path, as for a user's script."""
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def read_outputs(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_one_file_job_runs_on_the_local_environment(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    proc = run_script(JOB, str(out), "--local", cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert read_outputs(out) == EXPECTED


@pytest.fixture(scope="module")
def plan_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("plan")
    proc = run_script(JOB, str(tmp / "plan.json"), "--plan", cwd=tmp, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return (tmp / "plan.json").read_text(encoding="utf-8")


def test_plan_json_carries_the_script_by_value_and_the_rest_by_name(plan_text: str) -> None:
    data = json.loads(plan_text)
    actions = data["actions"]
    for name in SCRIPT_ACTIONS:
        func = actions[name]["func"]
        assert func["module"] == "__main__" and func["qualname"] == f"OneFileAgent.{name}"
        assert func["pickled"], name  # by value, the name kept for readers
    for name in set(actions) - SCRIPT_ACTIONS:  # built-in actions: by name, as ever
        assert actions[name]["func"]["module"] == f"flink_agents.plan.actions.{name}"
        assert actions[name]["func"]["pickled"] is None
    # Event type strings: from the class path, or the class's own.
    assert actions["tag"]["listen_event_types"] == ["__main__.Scored"]
    assert actions["ask"]["listen_event_types"] == ["one_file_tagged"]
    providers = data["resource_providers"]
    connection = providers["chat_model_connection"]["conn"]
    assert connection["clazz"] == "__main__.ScriptConnection" and connection["clazz_pickled"]
    respond = connection["arguments"]["respond"]["__function__"]
    assert respond["qualname"] == "shout_reply" and respond["pickled"]
    setup = providers["chat_model"]["model"]
    assert setup["clazz"] == "flink_agents.testing.scripted_chat_model.ScriptedChatModelSetup"
    assert "clazz_pickled" not in setup  # classes by name keep the JSON they had
    tool = providers["tool"]["shout"]
    assert tool["clazz"] == "flink_agents.api.tools.function_tool.FunctionTool"
    assert tool["serialized"]["func"]["qualname"] == "OneFileAgent.shout"
    assert tool["serialized"]["func"]["pickled"]


def test_plan_json_round_trips_and_runs_in_another_process(plan_text: str) -> None:
    """Here ``__main__`` is pytest's: the plan can only work from what it carries."""
    plan = AgentPlan.model_validate_json(plan_text)
    assert plan.model_dump_json() == plan_text
    assert plan.main_module_references() == []
    assert plan.by_value_references() == [
        "__main__.OneFileAgent.ask",
        "__main__.OneFileAgent.finish",
        "__main__.OneFileAgent.shout",
        "__main__.OneFileAgent.start",
        "__main__.OneFileAgent.tag",
        "__main__.ScriptConnection",
        "__main__.shout_reply",
    ]
    keyed = [(r["id"] % 2, {"id": r["id"], "text": r["text"]}) for r in EXPECTED]
    results = LocalRunner(plan).run(keyed)
    outputs = [out.model_dump() for result in results for out in result.outputs]
    assert sorted(outputs, key=lambda o: o["id"]) == EXPECTED
    # Records of the script's classes are pickled (outputs, durable call results) with
    # cloudpickle when plain pickle cannot find the class by name, as here.
    verdict = results[0].outputs[0]
    with pytest.raises(pickle.PicklingError):
        pickle.dumps(verdict)
    assert pickle.loads(dumps(verdict)) == verdict
    assert pickle.loads(dumps({"plain": 1})) == {"plain": 1}
    # The script's event class came with the actions; its type string finds it.
    scored = event_class_for("__main__.Scored")
    assert scored is not None and scored.__module__ == "__main__"
    assert set(scored.model_fields) >= {"text", "score"}


REACT = textwrap.dedent(
    """
    import sys
    from pydantic import BaseModel
    from flink_agents.api.agents.react_agent import ReActAgent
    from flink_agents.api.resource import ResourceDescriptor
    from flink_agents.plan.agent_plan import AgentPlan
    from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

    class Rating(BaseModel):  # the output schema, defined in the script
        score: int

    agent = ReActAgent(
        ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn"),
        output_schema=Rating,
    )
    # A descriptor argument that is a pydantic model of the script.
    agent.add_resource("conn", ResourceDescriptor(
        clazz=ScriptedChatModelConnection, replies=['{"score": 4}'], name="r",
        example=Rating(score=1),  # not used: only its plan encoding is checked
    ))
    sys.stdout.write(AgentPlan.from_agent(agent).model_dump_json())
    """
)


def test_a_react_schema_and_a_model_argument_of_the_script_travel_by_value(tmp_path) -> None:
    from flink_agents.api.agents.react_agent import parse_output
    from flink_agents.plan.agent_plan import MODEL_MARKER, decode_argument

    script = tmp_path / "react_job.py"
    script.write_text(REACT, encoding="utf-8")
    proc = run_script(script, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = AgentPlan.model_validate_json(proc.stdout)
    schema = next(a.config["schema"] for a in plan.actions.values() if "schema" in a.config)
    assert schema["class"] == "__main__.Rating" and schema["pickled"]
    rating = parse_output('{"score": 5}', schema)
    assert type(rating).__name__ == "Rating" and rating.score == 5
    argument = plan.resource_providers["chat_model_connection"]["conn"].arguments["example"]
    assert argument[MODEL_MARKER] == "__main__.Rating" and argument["pickled"]
    assert decode_argument(argument).score == 1
    assert plan.main_module_references() == []
    assert "__main__.Rating" in plan.by_value_references()


UNPICKLABLE = textwrap.dedent(
    """
    import threading, sys
    from flink_agents.api.agents.agent import Agent
    from flink_agents.api.decorators import action
    from flink_agents.api.events.event import InputEvent, OutputEvent
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment
    from flink_agents.errors import PlanValidationError

    LOCK = threading.Lock()  # cloudpickle cannot pickle a lock

    class LockingAgent(Agent):
        @action(InputEvent)
        @staticmethod
        def echo(event, ctx):
            with LOCK:
                ctx.send_event(OutputEvent(output=event.input * 2))

    local = AgentsExecutionEnvironment.get_execution_environment()
    out = local.from_list([1, 2]).apply(LockingAgent()).to_list()
    local.execute()
    print("LOCAL", sorted(v for o in out for v in o.values()))

    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env)
    try:
        agents_env.from_datastream(env.from_collection([1, 2])).apply(LockingAgent())
    except PlanValidationError as exc:
        print("REJECTED", exc)
    """
)


@pytest.mark.flink
def test_a_script_object_that_cannot_be_pickled_runs_locally_and_is_rejected_by_flink(
    tmp_path: Path,
) -> None:
    script = tmp_path / "locking_job.py"
    script.write_text(UNPICKLABLE, encoding="utf-8")
    proc = run_script(script, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LOCAL [2, 4]" in proc.stdout
    rejected = proc.stdout[proc.stdout.index("REJECTED") :]
    assert "action 'echo': __main__.LockingAgent.echo could not be pickled by value" in rejected
    assert "lock" in rejected  # cloudpickle's reason
    assert "move it into a module" in rejected


@pytest.mark.flink
def test_one_file_job_runs_on_the_minicluster(tmp_path: Path) -> None:
    """``python one_file_job.py`` in the mode under test; the job's own map checks that the
    outputs are of the script's class on the worker too."""
    out = tmp_path / "out.jsonl"
    proc = run_script(JOB, str(out), "--mode", MODE, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert read_outputs(out) == EXPECTED
