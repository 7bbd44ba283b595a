"""The Java bridge without Flink: the jar, the Java self test, the Python wrappers outside a
JVM, plan compilation and the mode checks."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_models.java_chat_model import JavaChatModelConnection
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.tools.java_tool import JavaTool
from flink_agents.api.tools.tool import ToolMetadata
from flink_agents.errors import JavaBridgeError, PlanValidationError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.java import (
    MODE_HINT,
    bridge_jars,
    check_java_resources,
    in_jvm,
    java_resources,
    job_jars,
)
from flink_agents.runtime.resources import ResourceCache
from tests.java import agents

ROOT = Path(__file__).resolve().parents[2]


def test_bridge_jar_is_built_and_shipped() -> None:
    jars = bridge_jars()
    assert [Path(j).name for j in jars] == ["flink-agents-bridge.jar"], "run `make java`"
    names = set(zipfile.ZipFile(jars[0]).namelist())
    for cls in (
        *("Bridge", "Handle", "JavaTool", "JavaChatModel", "JavaEmbeddingModel"),
        *("JavaVectorStore", "Json"),
    ):
        assert f"org/flinkagents/bridge/{cls}.class" in names
    assert "org/flinkagents/examples/ScriptedJavaChatModel.class" in names


def test_java_self_test_against_the_shipped_jar(tmp_path: Path) -> None:
    jar = bridge_jars()[0]
    sources = [str(p) for p in (ROOT / "java-bridge/src/test/java").rglob("*.java")]
    subprocess.run(
        ["javac", "--release", "11", "-cp", jar, "-d", str(tmp_path), *sources], check=True
    )
    run = subprocess.run(
        ["java", "-cp", f"{jar}:{tmp_path}", "org.flinkagents.bridge.BridgeSelfTest"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "checks passed" in run.stdout


def test_flink_operators_and_python_entry_points_speak_one_contract() -> None:
    from flink_agents.runtime.flink.entry import CONTRACT_VERSION

    run = subprocess.run(
        ["java", "-cp", bridge_jars()[0], "org.flinkagents.flink.Contract"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == CONTRACT_VERSION, "change both versions together"


def test_agent_with_java_resources_compiles_without_a_jvm() -> None:
    plan = AgentPlan.from_agent(agents.java_agent())
    found = java_resources(plan)
    assert ("tool", "upper_case", "org.flinkagents.examples.UpperCaseTool") in found
    assert ("tool", "missing_tool", "com.acme.DoesNotExist") in found
    assert (
        "chat_model_connection",
        "java_conn",
        "org.flinkagents.examples.ScriptedJavaChatModel",
    ) in found
    assert all(rtype != "chat_model" for rtype, _, _ in found)  # setups are pure Python
    again = AgentPlan.model_validate_json(plan.model_dump_json())
    assert java_resources(again) == found
    conn = again.get_resource_provider("java_conn", ResourceType.CHAT_MODEL_CONNECTION)
    assert conn is not None and conn.arguments is not None
    assert conn.arguments["fail_when"] == "boom"  # extra arguments = the Java configuration


def test_wrong_mode_fails_at_plan_time_with_the_mode_needed() -> None:
    plan = AgentPlan.from_agent(agents.java_agent())
    check_java_resources(plan, "thread")
    for mode, where in (("process", "python.execution-mode=process"), (None, "local environment")):
        with pytest.raises(PlanValidationError) as info:
            check_java_resources(plan, mode)
        message = str(info.value)
        assert where in message and "python.execution-mode=thread" in message
        assert "'upper_case' is a Java resource (org.flinkagents.examples.UpperCaseTool)" in message
    plain = Agent()
    plain.add_resource("t", ResourceType.TOOL, agents.reverse_text)
    check_java_resources(AgentPlan.from_agent(plain), "process")  # no Java: nothing to say


def test_creating_a_java_resource_outside_a_jvm_says_which_mode_is_needed() -> None:
    assert not in_jvm()
    cache = ResourceCache(AgentPlan.from_agent(agents.java_agent()))
    with pytest.raises(JavaBridgeError) as info:
        cache.get("upper_case", ResourceType.TOOL)
    assert "no JVM in this Python process" in str(info.value)
    assert MODE_HINT in str(info.value)
    with pytest.raises(JavaBridgeError, match="python.execution-mode=thread"):
        JavaChatModelConnection(java_clazz="com.acme.Model")


def test_local_environment_reports_the_mode_needed() -> None:
    env = AgentsExecutionEnvironment.get_execution_environment()
    out = env.from_list([{"key": "k", "value": {"id": 1, "text": "hi"}}])
    try:
        result = out.apply(agents.java_agent()).to_list()
        env.execute()
    except PlanValidationError as exc:  # the local environment checks at apply time
        assert "local environment" in str(exc) and "python.execution-mode=thread" in str(exc)
        return
    except JavaBridgeError as exc:  # or the resource creation fails the run
        assert MODE_HINT in str(exc)
        return
    pytest.fail(f"a Java resource ran in the local environment: {result}")


def test_java_vector_store_outside_a_jvm_says_which_mode_is_needed() -> None:
    from flink_agents.api.vector_stores.java_vector_store import JavaVectorStore

    with pytest.raises(JavaBridgeError, match="thread"):
        JavaVectorStore(java_clazz="org.flinkagents.examples.InMemoryJavaVectorStore")
    plan = AgentPlan.from_agent(agents.vector_store_agent())
    assert ("vector_store", "java_store", "org.flinkagents.examples.InMemoryJavaVectorStore") in (
        java_resources(plan)
    )
    with pytest.raises(PlanValidationError, match="java_store"):
        check_java_resources(plan, "process")


def test_java_tool_with_given_metadata_travels_in_the_plan_and_creates_lazily() -> None:
    tool = JavaTool(
        java_clazz="org.flinkagents.examples.UpperCaseTool",
        metadata=ToolMetadata(name="upper_case", description="upper"),
        name_hint="x",
    )
    assert tool.java_config == {"name_hint": "x"}
    agent = Agent()
    agent.add_resource("upper_case", ResourceType.TOOL, tool)
    plan = AgentPlan.from_agent(agent)
    cache = ResourceCache(AgentPlan.model_validate_json(plan.model_dump_json()))
    again = cache.get("upper_case", ResourceType.TOOL)
    assert isinstance(again, JavaTool) and again.metadata.description == "upper"
    with pytest.raises(JavaBridgeError, match="no JVM"):
        again.call(text="a")  # the Java object is created on first use
    cache.close()


def test_job_jars_adds_configured_user_jars(tmp_path: Path) -> None:
    user = tmp_path / "user.jar"
    user.write_bytes(b"PK")
    assert job_jars({"java.jars": [str(user)]}) == [*bridge_jars(), str(user.resolve())]
    with pytest.raises(PlanValidationError, match="is not a file"):
        job_jars({"java.jars": [str(tmp_path / "missing.jar")]})


def test_descriptor_style_matches_upstream_names() -> None:
    descriptor = ResourceDescriptor(
        clazz="flink_agents.api.chat_models.java_chat_model.JavaChatModelConnection",
        java_clazz="com.acme.Model",
        endpoint="http://x",
    )
    assert descriptor.clazz is JavaChatModelConnection
