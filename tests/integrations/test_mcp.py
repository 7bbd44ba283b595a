"""MCPServer against a real MCP server process (tests/integrations/mcp_server.py), over stdio
and over streamable HTTP, directly and through an agent whose chat model calls its tools."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.tools.tool import ToolType
from flink_agents.errors import CallTimeoutError, ResourceError, ToolError
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)
from flink_agents.integrations.mcp.mcp import MCPServer
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.testing import servers as fs
from flink_agents.testing.ports import free_port
from flink_agents.testing.servers import Reply, ScriptedServer
from tests.integrations import agents
from tests.integrations.agents import FAST, ChatAgent

ROOT = str(Path(__file__).resolve().parents[2])
STDIO = {"command": sys.executable, "args": ["-m", "tests.integrations.mcp_server"], "cwd": ROOT}


@pytest.fixture(scope="module")
def stdio_server():
    os.environ["FA_TEST_MCP_SECRET"] = "s3cr3t-from-env"
    server = MCPServer(**STDIO, env_from=["FA_TEST_MCP_SECRET"], timeout=20)
    yield server
    server.close()


@pytest.fixture(scope="module")
def http_url():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integrations.mcp_server", "http", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the MCP HTTP server did not start")
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


def test_tools_are_listed_lazily_with_their_schemas(stdio_server):
    assert stdio_server._session is None  # nothing started by creating it
    tools = {t.name: t for t in stdio_server.list_tools()}
    assert set(tools) >= {"multiply", "explode", "env_value", "pid"}
    mul = tools["multiply"]
    assert mul.tool_type() is ToolType.MCP
    assert mul.metadata.description.startswith("Multiply two integers.")
    assert mul.metadata.args_schema["required"] == ["a", "b"]
    assert mul.metadata.args_schema["properties"]["a"]["type"] == "integer"
    assert stdio_server.get_tool("multiply") is mul
    with pytest.raises(KeyError):
        stdio_server.get_tool("nope")


async def test_calls_from_threads_and_event_loops(stdio_server):
    mul = stdio_server.get_tool("multiply")
    assert mul.call(a=6, b=7) == "42"
    assert await mul.acall(a=2, b=5) == "10"
    results: list = []
    threads = [
        threading.Thread(target=lambda i=i: results.append(asyncio.run(mul.acall(a=i, b=i))))
        for i in range(4)
    ]
    threads += [threading.Thread(target=lambda: results.append(mul.call(a=3, b=3)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert sorted(results) == sorted(["0", "1", "4", "9", "9"])


def test_mcp_errors_become_tool_errors(stdio_server):
    with pytest.raises(ToolError, match="exploded on purpose: because"):
        stdio_server.get_tool("explode").call(reason="because")
    with pytest.raises(ToolError, match="Unknown tool"):
        stdio_server.call_tool("not_there", {})
    with pytest.raises(ToolError, match="multiply"):
        stdio_server.call_tool("multiply", {"a": "not a number", "b": 1})


def test_env_from_passes_secrets_at_run_time_only(stdio_server):
    assert stdio_server.call_tool("env_value", {"name": "FA_TEST_MCP_SECRET"}) == "s3cr3t-from-env"
    assert "s3cr3t" not in stdio_server.model_dump_json()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_slow_call_is_cut_at_the_servers_timeout_and_the_session_goes_on(mode):
    server = MCPServer(**STDIO, timeout=60)
    try:
        server.list_tools()  # connected (a cold start is not what this test measures)
        server.timeout = 1.5
        nap = server.get_tool("nap")
        start = time.monotonic()
        with pytest.raises(CallTimeoutError) as info:
            if mode == "sync":
                nap.call(seconds=60)
            else:
                asyncio.run(nap.acall(seconds=60))
        assert time.monotonic() - start < 20
        assert (info.value.kind, info.value.timeout) == ("mcp", 1.5)
        assert "within 1.5s" in str(info.value)
        assert server.call_tool("multiply", {"a": 2, "b": 4}) == "8"
    finally:
        server.close()


def test_tools_are_marked_side_effecting_unless_declared_read_only(stdio_server):
    tools = {t.name: t for t in stdio_server.list_tools()}
    assert tools["multiply"].side_effects is False  # readOnlyHint
    assert tools["write_file"].side_effects is True  # destructiveHint
    assert tools["pid"].side_effects is True  # no hint: MCP assumes it may change things


def test_prompts(stdio_server):
    prompts = {p["name"]: p for p in stdio_server.list_prompts()}
    args = {a["name"]: a["required"] for a in prompts["review_code"]["arguments"]}
    assert args == {"language": True, "focus": False}
    prompt = stdio_server.get_prompt("review_code", language="Rust", focus="lifetimes")
    (message,) = prompt.format_messages()
    assert message.content == "Review this Rust code, focusing on lifetimes."
    with pytest.raises(ResourceError, match="missing_prompt"):
        stdio_server.get_prompt("missing_prompt")


def test_close_stops_the_server_process():
    server = MCPServer(**STDIO, timeout=20)
    pid = int(server.call_tool("pid", {}))
    os.kill(pid, 0)  # running
    server.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"MCP server process {pid} still runs after close()")


def test_unreachable_servers_give_clear_errors():
    missing = MCPServer(command="/nonexistent/mcp-server-binary", timeout=5)
    with pytest.raises(ResourceError, match="cannot connect to MCP server /nonexistent"):
        missing.list_tools()
    down = MCPServer(url=f"http://127.0.0.1:{free_port()}/mcp", timeout=3)
    with pytest.raises(ResourceError, match="MCP server http://127.0.0.1"):
        down.list_tools()
    with pytest.raises(ValueError, match="exactly one of"):
        MCPServer(command="x", url="http://y")


def _agent_with_mcp(server_url: str, mcp: MCPServer) -> ChatAgent:
    agent = ChatAgent()
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=OpenAIChatModelConnection, api_base_url=server_url + "/v1", **FAST
        ),
    )
    agent.add_resource(
        "model",
        ResourceDescriptor(
            clazz=OpenAIChatModelSetup, connection="conn", model="m", tools=["multiply", "explode"]
        ),
    )
    agent.add_resource("calc", mcp)
    return agent


def _scripted_model(request):
    """Asks for multiply(6, 7) and explode(...), then answers with what came back."""
    results = dict(agents.OPENAI.tool_results(request.body))
    if not results:
        return Reply(
            fs.openai_reply(
                None,
                [
                    ("call_mul", "multiply", {"a": 6, "b": 7}),
                    ("call_exp", "explode", {"reason": "test"}),
                ],
            )
        )
    return Reply(fs.openai_reply(f"product={results['call_mul']}; error={results['call_exp']}"))


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_agent_uses_mcp_tools_through_a_chat_model(transport, request):
    if transport == "stdio":
        mcp = MCPServer(**STDIO, timeout=20)
    else:
        mcp = MCPServer(endpoint=request.getfixturevalue("http_url"), timeout=20)
    with ScriptedServer(respond=_scripted_model) as model_server:
        agent = _agent_with_mcp(model_server.url, mcp)
        plan = AgentPlan.from_agent(agent)
        assert mcp._session is None  # compiling the plan contacts no MCP server
        assert plan.get_resource_provider("calc", ResourceType.MCP_SERVER) is not None
        out = agents.run_agent(agent, [{"key": "k", "value": "what is 6*7?"}])
    (answer,) = [o["k"]["content"] for o in out]
    assert answer.startswith("product=42; error=")
    assert "exploded on purpose: test" in answer
    first, second = (q.body for q in model_server.requests)
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(offered) == {"multiply", "explode"}
    assert offered["multiply"]["parameters"]["required"] == ["a", "b"]
    assert [m["tool_call_id"] for m in second["messages"] if m["role"] == "tool"] == [
        "call_mul",
        "call_exp",
    ]
    assert json.dumps(second).count("call_mul") >= 2  # the assistant call and its result


def test_stdio_server_starts_when_stderr_has_no_file_descriptor(monkeypatch):
    """A thread-mode Flink job runs Python embedded in the TaskManager, where sys.stderr is
    pemja's catcher without fileno(): the stdio transport must still start the server."""
    import io

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with pytest.raises(io.UnsupportedOperation):
        sys.stderr.fileno()
    server = MCPServer(**STDIO, timeout=60)
    try:
        assert "multiply" in {t.name for t in server.list_tools()}
    finally:
        server.close()


def test_a_model_cannot_call_an_mcp_tool_its_setup_does_not_offer(tmp_path):
    # The setup offers multiply and explode; the server also has write_file, which the
    # model asks for (as an injected instruction could make it do). It must never run.
    target = tmp_path / "pwned.txt"

    def respond(request):
        results = dict(agents.OPENAI.tool_results(request.body))
        if not results:
            return Reply(
                fs.openai_reply(
                    None,
                    [
                        ("call_w", "write_file", {"path": str(target), "text": "x"}),
                        ("call_m", "multiply", {"a": 6, "b": 7}),
                    ],
                )
            )
        return Reply(fs.openai_reply(f"w={results['call_w']}; m={results['call_m']}"))

    mcp = MCPServer(**STDIO, timeout=60)
    try:
        with ScriptedServer(respond=respond) as model_server:
            out = agents.run_agent(
                _agent_with_mcp(model_server.url, mcp), [{"key": "k", "value": "go"}]
            )
    finally:
        mcp.close()
    (answer,) = [o["k"]["content"] for o in out]
    assert not target.exists()
    assert answer == (
        "w=Error: unknown tool 'write_file'; the tools you can call are: explode, multiply; m=42"
    )
