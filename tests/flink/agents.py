"""Agents used by the Flink tests; importable by the Python workers (``tests.flink.agents``).

Each agent is made by a factory so a test can choose latency, count files and strategies;
actions are module-level functions because plans store functions by reference.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.core_options import ErrorHandlingStrategy
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import ErrorEvent, InputEvent, OutputEvent
from flink_agents.api.resource import Resource, ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing.minicluster import committed_records
from flink_agents.testing.scripted_chat_model import (
    ScriptedChatModelConnection,
    ScriptedChatModelSetup,
)


# -- chat agent: InputEvent -> ChatRequestEvent -> model -> ChatResponseEvent -> OutputEvent --
def ask_model(event: InputEvent, ctx: RunnerContext) -> None:
    ctx.send_event(
        ChatRequestEvent(
            model="model",
            messages=[ChatMessage(role=MessageRole.USER, content=json.dumps(event.input))],
        )
    )


def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output=json.loads(event.response.content)))


def echo(messages: list[ChatMessage], tools: Any) -> str:
    """The scripted model's reply: the last user message (a JSON document)."""
    return messages[-1].content


def _model(agent: Agent, latency: float | list[float], count_file: str | None) -> None:
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond="tests.flink.agents:echo",
            latency=latency,
            count_file=count_file,
            name="flink-test",
        ),
    )
    agent.add_resource("model", ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn"))


def chat_agent(latency: float | list[float] = 0.0, count_file: str | None = None) -> Agent:
    """Echoes each input through the scripted chat model."""
    agent = Agent()
    agent.add_action("ask_model", InputEvent, ask_model)
    agent.add_action("answer", ChatResponseEvent, answer)
    _model(agent, latency, count_file)
    return agent


# -- timed chat agent: outputs carry when their run started and ended ---------------------------
def ask_model_timed(event: InputEvent, ctx: RunnerContext) -> None:
    ask_model(InputEvent(input={**event.input, "t0": time.time()}), ctx)


def answer_timed(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    ctx.send_event(OutputEvent(output={**json.loads(event.response.content), "t1": time.time()}))


def timed_chat_agent(latency: float, count_file: str | None = None) -> Agent:
    """The chat agent; outputs also carry ``t0`` (run start) and ``t1`` (run end)."""
    agent = Agent()
    agent.add_action("ask_model", InputEvent, ask_model_timed)
    agent.add_action("answer", ChatResponseEvent, answer_timed)
    _model(agent, latency, count_file)
    return agent


# -- memory agent: counts inputs per key in short-term memory, through the model ----------------
def remember(event: InputEvent, ctx: RunnerContext) -> None:
    record = event.input
    memory = ctx.short_term_memory
    count = (memory.get("stats.count") or 0) + 1
    memory.set("stats.count", count)
    seen = list(memory.get("seen") or [])
    seen.append(record["i"])
    memory.set("seen", seen)
    doc = {"key": record["key"], "i": record["i"], "count": count, "seen": seen}
    ctx.send_event(
        ChatRequestEvent(
            model="model",
            messages=[ChatMessage(role=MessageRole.USER, content=json.dumps(doc))],
        )
    )


def memory_agent(latency: float | list[float] = 0.0, count_file: str | None = None) -> Agent:
    """Outputs ``{key, i, count, seen}``: how many inputs of the key it has seen so far."""
    agent = Agent()
    agent.add_action("remember", InputEvent, remember)
    agent.add_action("answer", ChatResponseEvent, answer)
    _model(agent, latency, count_file)
    return agent


# -- resource counting ----------------------------------------------------------------------------
class CountedTool(Resource):
    """A resource that appends a line to ``count_file`` each time it is created."""

    count_file: str

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.TOOL

    def model_post_init(self, context: Any) -> None:
        with open(self.count_file, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")


def use_counted(event: InputEvent, ctx: RunnerContext) -> None:
    ctx.get_resource("counted", ResourceType.TOOL)
    ask_model(event, ctx)


def counted_agent(count_file: str, latency: float = 0.0) -> Agent:
    """The chat agent, also using a resource that counts its instantiations."""
    agent = Agent()
    agent.add_action("use_counted", InputEvent, use_counted)
    agent.add_action("answer", ChatResponseEvent, answer)
    agent.add_resource("counted", ResourceDescriptor(clazz=CountedTool, count_file=count_file))
    _model(agent, latency, None)
    return agent


# -- failures -------------------------------------------------------------------------------------
def _capture_log(ctx: RunnerContext) -> None:
    path = ctx.config.get("test.log_file")
    logger = logging.getLogger("flink_agents")
    if path and not any(getattr(h, "_test_file", None) == path for h in logger.handlers):
        handler = logging.FileHandler(path)
        handler._test_file = path  # type: ignore[attr-defined]
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)


def picky(event: InputEvent, ctx: RunnerContext) -> None:
    """Raises on inputs with ``bad`` set, otherwise asks the model."""
    _capture_log(ctx)
    if event.input.get("bad"):
        raise ValueError(f"bad input {event.input['i']}")
    ask_model(event, ctx)


def report_error(event: ErrorEvent, ctx: RunnerContext) -> None:
    ctx.send_event(
        OutputEvent(
            output={"error": event.error, "action": event.action, "event_id": event.failed_event_id}
        )
    )


def picky_agent(strategy: ErrorHandlingStrategy, latency: float = 0.0) -> Agent:
    """Fails on bad inputs under ``strategy``; error events become outputs."""
    agent = Agent()
    agent.add_action("picky", InputEvent, picky, **{"error-handling-strategy": strategy.value})
    agent.add_action("answer", ChatResponseEvent, answer)
    agent.add_action("report_error", ErrorEvent, report_error)
    _model(agent, latency, None)
    return agent


# -- recovery: fails once, after some outputs were committed by a checkpoint --------------------
def flaky(event: InputEvent, ctx: RunnerContext) -> None:
    """Counts inputs per key in memory. Fails once: on the first input from ``test.fail_at``
    on that finds outputs committed by the sink (a completed checkpoint), recording which
    ones (``<marker>.committed``)."""
    record = event.input
    marker = ctx.config.get("test.marker")
    if record["i"] >= ctx.config.get("test.fail_at") and not os.path.exists(marker):
        committed = committed_records(ctx.config.get("test.out_dir"))
        if committed:
            with open(marker + ".committed", "w", encoding="utf-8") as fh:
                json.dump(sorted(o["i"] for o in committed), fh)
            with open(marker, "w", encoding="utf-8") as fh:
                fh.write("failed once\n")
            raise RuntimeError(f"injected failure at input {record['i']}")
    memory = ctx.short_term_memory
    count = (memory.get("count") or 0) + 1
    memory.set("count", count)
    doc = {
        "key": record["key"],
        "i": record["i"],
        "count": count,
        "calls": ctx.config.get("test.calls_file"),
        "marker": marker,
    }
    ctx.send_event(
        ChatRequestEvent(
            model="model",
            messages=[ChatMessage(role=MessageRole.USER, content=json.dumps(doc))],
        )
    )


def logging_echo(messages: list[ChatMessage], tools: Any) -> str:
    """Echo that logs each call's input and whether it came after the injected failure."""
    doc = json.loads(messages[-1].content)
    after = os.path.exists(doc.pop("marker"))
    with open(doc.pop("calls"), "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"i": doc["i"], "after_failure": after, "t": time.time()}) + "\n")
    return json.dumps(doc)


async def answer_later(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    """:func:`answer` after ``test.hold`` seconds: the run stays in flight after its call."""
    await asyncio.sleep(ctx.config.get("test.hold") or 0)
    answer(event, ctx)


def recovery_agent(latency: float) -> Agent:
    """Outputs ``{key, i, count}``; see :func:`flaky` and :func:`answer_later`."""
    agent = Agent()
    agent.add_action("flaky", InputEvent, flaky)
    agent.add_action("answer", ChatResponseEvent, answer_later)
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond="tests.flink.agents:logging_echo",
            latency=latency,
        ),
    )
    agent.add_resource("model", ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn"))
    return agent


# -- tables: inputs are Rows ----------------------------------------------------------------------
def remember_row(event: InputEvent, ctx: RunnerContext) -> None:
    row = event.input
    remember(InputEvent(input={"key": row["key"], "i": int(row["i"])}), ctx)


def row_memory_agent(latency: float = 0.0) -> Agent:
    """:func:`memory_agent` over ``Row(key, i)`` inputs."""
    agent = Agent()
    agent.add_action("remember", InputEvent, remember_row)
    agent.add_action("answer", ChatResponseEvent, answer)
    _model(agent, latency, None)
    return agent


def pause(event: InputEvent, ctx: RunnerContext) -> None:
    """Blocks the operator for ``input["pause"]`` seconds (a synchronous action)."""
    time.sleep(event.input.get("pause", 0))


def ttl_agent() -> Agent:
    """:func:`memory_agent` plus an action that can hold the operator up (for TTL tests)."""
    agent = memory_agent()
    agent.add_action("pause", InputEvent, pause)
    return agent


# -- a durable call completed before a checkpoint, then a failure ---------------------------------
def counted_call(calls_file: str, i: int) -> int:
    """A durable call that logs each time it really runs (``{"i", "t"}`` lines)."""
    time.sleep(0.05)
    with open(calls_file, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"i": i, "t": time.time()}) + "\n")
    return i


def _tick_committed_after(out_dir: str, since: float) -> bool:
    """Whether a finalized part file holds a tick that the operator processed after
    ``since``: the checkpoint that committed it had its barrier after that tick."""
    try:
        outputs = committed_records(out_dir)
    except OSError:  # a part file renamed while reading
        return False
    return any(o.get("kind") == "tick" and o["t0"] > since for o in outputs)


async def call_once(event: InputEvent, ctx: RunnerContext) -> None:
    """``slow``: a durable call of ``seconds`` (warms up the slot's run-time estimate);
    ``tick``: an output at once, stamped with when it ran (``t0``); ``call``: a durable call
    counted in ``test.calls_file``, then, the first time, waits until a checkpoint taken
    after the call has completed (a later tick is committed by the sink) and fails."""
    record = event.input
    kind = record["kind"]
    if kind == "tick":
        ctx.send_event(OutputEvent(output={**record, "t0": time.time()}))
        return
    if kind == "slow":
        await ctx.durable_execute_async(time.sleep, record["seconds"])
        ctx.send_event(OutputEvent(output=record))
        return
    config = ctx.config
    calls_file = config.get("test.calls_file")
    result = await ctx.durable_execute_async(counted_call, calls_file, record["i"])
    called = time.time()
    marker = config.get("test.marker")
    if not os.path.exists(marker):
        deadline = called + 60
        while not _tick_committed_after(config.get("test.out_dir"), called):
            if time.time() > deadline:
                with open(marker + ".no-checkpoint", "w", encoding="utf-8") as fh:
                    fh.write("no checkpoint completed after the call\n")
                break
            await asyncio.sleep(0.02)
        with open(marker, "w", encoding="utf-8") as fh:
            fh.write(f"failed at {time.time()}, call at {called}\n")
        raise RuntimeError(f"injected failure after the durable call of input {record['i']}")
    ctx.send_event(OutputEvent(output={**record, "result": result}))


def call_once_agent() -> Agent:
    """See :func:`call_once`."""
    agent = Agent()
    agent.add_action("call_once", InputEvent, call_once)
    return agent


# -- operations (tests/flink/ops_job.py): memory, logged model calls, runs held in flight -------
def remember_logged(event: InputEvent, ctx: RunnerContext) -> None:
    """:func:`remember`, with the calls file and how long to hold the run after its call;
    logs each run's start to ``<calls file>.started``."""
    record = event.input
    calls = ctx.config.get("test.calls_file")
    with open(calls + ".started", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"i": record["i"], "t": time.time()}) + "\n")
    memory = ctx.short_term_memory
    count = (memory.get("count") or 0) + 1
    memory.set("count", count)
    seen = [*(memory.get("seen") or []), record["i"]]
    memory.set("seen", seen)
    doc = {
        "key": record["key"],
        "i": record["i"],
        "count": count,
        "seen": seen,
        "hold": record.get("hold", 0),
        "calls": calls,
    }
    ctx.send_event(
        ChatRequestEvent(
            model="model",
            messages=[ChatMessage(role=MessageRole.USER, content=json.dumps(doc))],
        )
    )


def logged_echo(messages: list[ChatMessage], tools: Any) -> str:
    """Echo that appends each completed call (``{"i", "t", "pid"}``) to the calls file."""
    doc = json.loads(messages[-1].content)
    with open(doc.pop("calls"), "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"i": doc["i"], "t": time.time(), "pid": os.getpid()}) + "\n")
    return json.dumps(doc)


async def answer_held(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    """:func:`answer` after the input's ``hold`` seconds: the run stays in flight (pending,
    with its call's durable record) after its call."""
    doc = json.loads(event.response.content)
    await asyncio.sleep(doc.pop("hold"))
    ctx.send_event(OutputEvent(output=doc))


def ops_agent(latency: float) -> Agent:
    """Outputs ``{key, i, count, seen}``; every completed model call is logged."""
    agent = Agent()
    agent.add_action("remember", InputEvent, remember_logged)
    agent.add_action("answer", ChatResponseEvent, answer_held)
    agent.add_resource(
        "conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond="tests.flink.agents:logged_echo",
            latency=latency,
        ),
    )
    agent.add_resource("model", ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn"))
    return agent


# -- a key in flight at a checkpoint, then a failure elsewhere ------------------------------------
def submit_until_failed(calls_file: str, marker: str, i: int) -> str:
    """A durable call that logs when it really runs, then hangs until the job has failed
    (``marker`` exists): its outcome is never recorded before the failure."""
    with open(calls_file, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"call": "submit", "i": i, "t": time.time()}) + "\n")
    deadline = time.time() + 60
    while not os.path.exists(marker) and time.time() < deadline:
        time.sleep(0.02)
    return f"submitted-{i}"


async def submit_or_echo(event: InputEvent, ctx: RunnerContext) -> None:
    """``call``: the durable call :func:`submit_until_failed` with a reconciler (which logs
    too); any other input: echoed at once."""
    record = event.input
    if record["kind"] != "call":
        ctx.send_event(OutputEvent(output=record))
        return
    calls_file = ctx.config.get("test.calls_file")

    def reconcile() -> str:
        with open(calls_file, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"call": "reconcile", "i": record["i"]}) + "\n")
        return f"reconciled-{record['i']}"

    result = await ctx.durable_execute_async(
        submit_until_failed,
        calls_file,
        ctx.config.get("test.marker"),
        record["i"],
        reconciler=reconcile,
    )
    ctx.send_event(OutputEvent(output={**record, "result": result}))


def submit_or_echo_agent() -> Agent:
    """See :func:`submit_or_echo`."""
    agent = Agent()
    agent.add_action("submit_or_echo", InputEvent, submit_or_echo)
    return agent
