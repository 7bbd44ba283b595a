"""Java bridge benchmark (not a test): calls/s of a trivial Java tool vs a Python tool.

Runs inside a Flink thread-mode Python worker (a MiniCluster job), where the bridge works:
one task creates, through the resource cache as an agent would, a Java tool
(``org.flinkagents.examples.EchoTool``, returns its arguments) and a Python ``FunctionTool``
doing the same, then times ``tool.call(x=i)`` for each, on the operator thread and on a
second Python thread (where agent runs execute), plus the raw handle call (JSON string in,
JSON string out) to show the bridge's own cost. Prints one line per measurement.

Run: ``.venv/bin/python -m benchmarks.java_bridge [calls]`` (default 50,000).
"""

from __future__ import annotations

import json
import os
import platform
import site
import sys
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def echo(x: int) -> dict[str, int]:
    """Returns its argument (the Python tool of the benchmark).

    Args:
        x: any number.
    """
    return {"x": x}


def _rate(fn: Any, calls: int) -> float:
    fn(0)  # warm up (first call creates/caches)
    started = time.perf_counter()
    for i in range(calls):
        fn(i)
    return calls / (time.perf_counter() - started)


def measure(calls: int) -> dict[str, float]:
    """The measurements; must run inside a thread-mode worker (operator thread)."""
    from flink_agents.api.agents.agent import Agent
    from flink_agents.api.resource import ResourceDescriptor, ResourceType
    from flink_agents.api.tools.java_tool import JavaTool
    from flink_agents.plan.agent_plan import AgentPlan
    from flink_agents.runtime.java import init_java_bridge
    from flink_agents.runtime.resources import ResourceCache

    agent = Agent()
    agent.add_resource(
        "echo",
        ResourceType.TOOL,
        ResourceDescriptor(clazz=JavaTool, java_clazz="org.flinkagents.examples.EchoTool"),
    )
    agent.add_resource("py_echo", ResourceType.TOOL, echo)
    cache = ResourceCache(AgentPlan.from_agent(agent))
    init_java_bridge(cache)
    java_tool = cache.get("echo", ResourceType.TOOL)
    py_tool = cache.get("py_echo", ResourceType.TOOL)
    handle = java_tool._handle()
    assert java_tool.call(x=7) == {"x": 7} and py_tool.call(x=7) == {"x": 7}

    results = {
        "java_tool": _rate(lambda i: java_tool.call(x=i), calls),
        "python_tool": _rate(lambda i: py_tool.call(x=i), calls),
        "java_raw": _rate(lambda i: handle.call_raw('{"x": 1}'), calls),
    }
    other: dict[str, float] = {}

    def off_thread() -> None:
        other["java_tool_other_thread"] = _rate(lambda i: java_tool.call(x=i), calls)
        other["python_tool_other_thread"] = _rate(lambda i: py_tool.call(x=i), calls)

    worker = threading.Thread(target=off_thread)
    worker.start()
    worker.join()
    results.update(other)
    cache.close()
    return results


def main() -> None:
    from pyflink.common import Configuration, Types
    from pyflink.datastream import MapFunction, StreamExecutionEnvironment

    from flink_agents.runtime.java import bridge_jars

    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
    jars = bridge_jars()
    if not jars:
        raise SystemExit("the bridge jar is not built: run `make java`")

    class Bench(MapFunction):  # type: ignore[misc]
        def map(self, value: Any) -> str:
            # imported by name so the Python tool's function has an importable reference
            from benchmarks.java_bridge import measure as measure_in_worker

            return json.dumps(measure_in_worker(value))

    conf = Configuration()
    conf.set_string("python.execution-mode", "thread")
    conf.set_string("python.executable", sys.executable)
    conf.set_string("python.pythonpath", os.pathsep.join([ROOT, *site.getsitepackages()]))
    env = StreamExecutionEnvironment.get_execution_environment(conf)
    env.set_parallelism(1)
    # Not chained to the legacy collection source: a chained Python function runs on the
    # source's own thread, where pemja's findClass crashes the JVM (measured, pemja 0.5.7).
    env.disable_operator_chaining()
    env.add_jars(*("file://" + j for j in jars))
    stream = env.from_collection([calls], type_info=Types.INT())
    with stream.map(Bench(), output_type=Types.STRING()).execute_and_collect() as out:
        results = json.loads(next(iter(out)))

    print(f"java bridge benchmark ({calls} calls each; {platform.python_version()}, thread mode)")
    lines = [
        ("java tool   (JavaTool.call, JSON args/result)", "java_tool"),
        ("python tool (FunctionTool.call, validated)", "python_tool"),
        ("java raw    (Handle.call, JSON strings)", "java_raw"),
        ("java tool   on a second Python thread", "java_tool_other_thread"),
        ("python tool on a second Python thread", "python_tool_other_thread"),
    ]
    for label, key in lines:
        print(f"  {label:<46}: {results[key]:>11,.0f} calls/s")


if __name__ == "__main__":
    main()
