"""Instructions per record of the Flink host's synchronous path, under valgrind (callgrind).

Wall-clock figures on this shared 2-vCPU machine drift by +-20 %; instruction counts do not.
This drives ``AgentProcessFunction.process_batch`` (what the thread-mode operator calls) with
the zero-latency chat agent of ``benchmarks/flink_host.py`` over fake keyed state (no JVM):
each record goes ``_process`` -> ``SlotRuntime.start_and_settle`` (the core's run on the
borrowed loop) -> commit and emit, the path every zero-latency record of a job takes. It
runs the program twice under callgrind, with ``--small`` and ``--large`` records, and prints
the difference of the totals divided by the difference of the records: start-up and imports
cancel out.

Usage::

    .venv/bin/python benchmarks/host_instructions.py [--small 500] [--large 2500]
        [--keys 100] [--memory | --floor]

``--memory`` uses the agent that reads and writes short-term memory (a key switch and a
memory commit per record). ``--floor`` measures the *floor* instead: the same records
through the agent's own code only (:func:`_floor`: its two actions called directly with their
events built, and the zero-latency model's call; no runner, no host), so that the framework's
share is the host path's figure minus this one. Needs ``valgrind`` on PATH.
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import subprocess
import sys
import tempfile
import types
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _drive(records: int, keys: int, memory: bool) -> None:
    """Process ``records`` inputs over ``keys`` keys in batches of 32 (the child)."""
    from flink_agents.plan.agent_plan import AgentPlan
    from flink_agents.runtime.flink import function as fn
    from flink_agents.runtime.flink.slot import SlotRuntime
    from flink_agents.runtime.flink.state import KeyedState
    from tests.fakes import FakeJavaBackend, FakeRuntimeContext
    from tests.flink import agents

    # PyFlink's embedded state module needs the JVM; the internals take only this from it.
    module = types.ModuleType("pyflink.fn_execution.embedded.state_impl")
    module.JVoidNamespace_INSTANCE = object()  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module

    agent = agents.memory_agent() if memory else agents.chat_agent()
    plan = AgentPlan.from_agent(agent)
    function = fn.AgentProcessFunction(
        plan.model_dump_json(), {}, packed=True, key_of=lambda r: r["key"]
    )
    state = KeyedState.open(FakeRuntimeContext(FakeJavaBackend(key=None)), ttl=None, keyless=False)
    slot = SlotRuntime(plan)
    function.bind(state, slot, batch_size=32, batch_linger_ms=5)
    raw = [
        [f"J{i % keys}", [0, [b"key", pickle.dumps({"key": f"k{i % keys}", "i": i})]], i]
        for i in range(records)
    ]

    def record(value: Any) -> Any:
        return pickle.loads(value[1][1])

    emitted = 0
    for start in range(0, records, 32):
        emitted += len(function.process_batch(raw[start : start + 32], record, None))
    assert emitted == records, (emitted, records)
    assert not function._active, "a zero-latency run went through a timer"
    slot.close()


class _FloorContext:
    """What the chat agent's actions use of a context: ``send_event`` (kept in a list)."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send_event(self, event: Any) -> None:
        self.sent.append(event)


def floor_runs(records: list[Any], setup: Any) -> Any:
    """The coroutine that takes ``records`` (decoded inputs) through the chat agent's own
    code only: ``ask_model`` with its input event, the zero-latency scripted model's call
    (``setup.achat``: prompt, connection, reply), ``answer`` with its response event; no
    runner, no context, no durable record, no deadline, no task per record, no host.

    The input and response events are made as the runtime makes them (``_trusted``, its
    cheapest); the agent's own events (``ChatRequestEvent``, ``OutputEvent``) through their
    constructors, as the actions build them. What is left is the cost of any design that
    hands these actions their events: the floor under the framework's share.
    """
    from flink_agents.api.events.chat_event import ChatResponseEvent
    from flink_agents.api.events.event import InputEvent
    from tests.flink import agents

    ask_model, answer = agents.ask_model, agents.answer
    trusted_input, trusted_response = InputEvent._trusted, ChatResponseEvent._trusted

    async def runs() -> int:
        emitted = 0
        for record in records:
            ctx = _FloorContext()
            ask_model(trusted_input({"input": record}), ctx)
            request = ctx.sent.pop()
            reply = await setup.achat(request.messages)
            answer(trusted_response({"request_id": request.id, "response": reply}), ctx)
            emitted += len(ctx.sent)
        return emitted

    return runs()


def floor_setup() -> tuple[Any, Any]:
    """``(runner, setup)``: the chat agent's model setup, made by a runner's resources (the
    runner only holds them; close it after)."""
    from flink_agents.api.resource import ResourceType
    from flink_agents.plan.agent_plan import AgentPlan
    from flink_agents.runtime.core.runner import AgentRunner
    from tests.flink import agents

    runner = AgentRunner(AgentPlan.from_agent(agents.chat_agent()))
    return runner, runner.resources.get("model", ResourceType.CHAT_MODEL)


def _drive_floor(records: int, keys: int) -> None:
    """:func:`floor_runs` over the records :func:`_drive` hands the host, decoded (the child
    of ``--floor``); one event loop, as the host's."""
    import asyncio

    raw = [pickle.dumps({"key": f"k{i % keys}", "i": i}) for i in range(records)]
    decoded = [pickle.loads(value) for value in raw]
    runner, setup = floor_setup()
    loop = asyncio.new_event_loop()
    try:
        emitted = loop.run_until_complete(floor_runs(decoded, setup))
    finally:
        loop.close()
        runner.close()
    assert emitted == records, (emitted, records)


def _instructions(records: int, args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        command = (
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                os.path.abspath(__file__),
                "--child",
                str(records),
                "--keys",
                str(args.keys),
            ]
            + (["--memory"] if args.memory else [])
            + (["--floor"] if args.floor else [])
        )
        # A fixed hash seed: string hashes (dict and set layouts) are the same in each run.
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env=env)
        with open(out) as file:
            text = file.read()
    match = re.search(r"^(?:summary|totals): (\d+)", text, re.MULTILINE)
    assert match, "no totals in callgrind's output"
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--large", type=int, default=2500)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--memory", action="store_true")
    parser.add_argument(
        "--floor", action="store_true", help="the agent's own code only (see the docstring)"
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor and args.memory:
        parser.error("--floor measures the chat agent only")
    if args.child is not None:
        if args.floor:
            _drive_floor(args.child, args.keys)
        else:
            _drive(args.child, args.keys, args.memory)
        return
    small = _instructions(args.small, args)
    large = _instructions(args.large, args)
    per_record = (large - small) / (args.large - args.small)
    print(
        f"{'memory' if args.memory else 'chat'} agent"
        f"{' (floor: its own code only)' if args.floor else ''}, {args.keys} keys: "
        f"{per_record / 1000:.1f}k instructions per record "
        f"({args.small}: {small}, {args.large}: {large})"
    )


if __name__ == "__main__":
    main()
