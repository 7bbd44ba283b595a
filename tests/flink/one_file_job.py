"""A one-file job: everything the agent uses is defined in this script (``__main__``).

The agent class and its actions, a custom event class (type string from its path) and one
with its own type string, a pydantic output model and the model returned by a durable call,
a tool function, a chat model connection class and its reply function, the key selector:
all of it reaches Flink's Python workers by value (cloudpickle), as when a user runs
``python job.py`` or ``flink run -py job.py``. Imports only ``flink_agents`` and PyFlink, so
it also runs from an installed wheel.

    python one_file_job.py OUT [--local | --plan] [--mode thread|process] [--operators]

``OUT`` gets one JSON line per output; ``--local`` runs on the local environment instead
of Flink; ``--plan`` only writes the plan JSON; ``--operators`` prints the Java/PyFlink
operator classes of the agent's output stream (``OPERATORS [...]``). Prints ``DONE n``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any, ClassVar

from pydantic import BaseModel

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action, chat_model_connection, chat_model_setup, tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

RECORDS = [{"id": i, "text": text} for i, text in enumerate(["ab", "cde", "f", "ghij", "kl", "m"])]
#: A global of the script that the actions read (pickled with them).
WEIGHT = 10


class Scored(Event):
    """Type string from its path: ``__main__.Scored``."""

    text: str
    score: int


class Tagged(Event):
    EVENT_TYPE: ClassVar[str] = "one_file_tagged"
    text: str
    score: int
    tag: str


class Lookup(BaseModel):
    """What the durable call returns (recorded in state while the call's key waits)."""

    tag: str


class Verdict(BaseModel):
    """The agent's output record."""

    id: int
    text: str
    score: int
    tag: str
    reply: str
    seen: int


def score_of(text: str) -> int:
    return len(text) * WEIGHT


async def look_up(text: str) -> Lookup:
    await asyncio.sleep(0.05)
    return Lookup(tag="long" if len(text) > 2 else "short")


def shout_reply(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """The scripted model: ask for the tool, then answer with its result."""
    last = messages[-1]
    if last.role == MessageRole.TOOL:
        return f"tool said {last.content}"
    call = {"type": "function", "function": {"name": "shout", "arguments": {"text": last.content}}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


class ScriptConnection(ScriptedChatModelConnection):
    """A resource class of the script (travels by value)."""


class OneFileAgent(Agent):
    @tool
    @staticmethod
    def shout(text: str) -> str:
        """Upper-case a text.

        Args:
            text: the text.
        """
        return text.upper() + "!"

    @chat_model_connection
    @staticmethod
    def conn() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=ScriptConnection, respond=shout_reply, name="one-file")

    @chat_model_setup
    @staticmethod
    def model() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn", tools=["shout"])

    @action(InputEvent)
    @staticmethod
    def start(event: InputEvent, ctx: RunnerContext) -> None:
        seen = (ctx.short_term_memory.get("seen") or 0) + 1
        ctx.short_term_memory.set("seen", seen)
        ctx.short_term_memory.set("id", event.input["id"])
        text = event.input["text"]
        ctx.send_event(Scored(text=text, score=score_of(text)))

    @action(Scored)
    @staticmethod
    async def tag(event: Scored, ctx: RunnerContext) -> None:
        found = await ctx.durable_execute_async(look_up, event.text)
        ctx.send_event(Tagged(text=event.text, score=event.score, tag=found.tag))

    @action("one_file_tagged")
    @staticmethod
    def ask(event: Tagged, ctx: RunnerContext) -> None:
        ctx.sensory_memory.set("tagged", event.model_dump(mode="json", exclude={"id"}))
        ctx.send_event(ChatRequestEvent(model="model", messages=[ChatMessage(content=event.text)]))

    @action(ChatResponseEvent)
    @staticmethod
    def finish(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        tagged = ctx.sensory_memory.get("tagged")
        verdict = Verdict(
            id=ctx.short_term_memory.get("id"),
            text=tagged["text"],
            score=tagged["score"],
            tag=tagged["tag"],
            reply=event.response.content,
            seen=ctx.short_term_memory.get("seen"),
        )
        ctx.send_event(OutputEvent(output=verdict))


def key_of(record: dict[str, Any]) -> int:
    return record["id"] % 2


def run_local() -> list[Verdict]:
    env = AgentsExecutionEnvironment.get_execution_environment()
    items = [{"key": key_of(r), "value": r} for r in RECORDS]
    out = env.from_list(items).apply(OneFileAgent()).to_list()
    env.execute()
    return [next(iter(o.values())) for o in out]


def _operator_classes(stream: Any) -> list[str]:
    """Operator classes from the stream back to its source (PyFlink keeps them in Java)."""
    names, transformation = [], stream._j_data_stream.getTransformation()
    while transformation is not None:
        try:
            operator = transformation.getOperatorFactory().getOperator()
            names.append(str(operator.getClass().getName()))
        except Exception:  # noqa: BLE001 - a source has no operator factory
            pass
        inputs = transformation.getInputs()
        transformation = inputs.get(0) if inputs.size() else None
    return names


def run_flink(mode: str, operators: bool) -> list[Verdict]:
    from pyflink.common.typeinfo import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(
        env, **{"python.execution-mode": mode}
    )
    records = env.from_collection([json.dumps(r) for r in RECORDS], type_info=Types.STRING())
    records = records.map(json.loads, output_type=Types.PICKLED_BYTE_ARRAY())
    out = agents_env.from_datastream(records, key_selector=key_of).apply(OneFileAgent())
    stream = out.to_datastream()
    if operators:
        print("OPERATORS " + json.dumps(_operator_classes(stream)), flush=True)
    # The output objects are of this script's class: check them on the worker too.
    checked = stream.map(
        lambda v: v.model_dump_json() if isinstance(v, Verdict) else f"not a Verdict: {v!r}",
        output_type=Types.STRING(),
    )
    with checked.execute_and_collect() as results:
        return [Verdict.model_validate_json(r) for r in results]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--local", action="store_true")
    parser.add_argument("--plan", action="store_true")
    parser.add_argument("--operators", action="store_true")
    parser.add_argument("--mode", default=os.environ.get("FLINK_AGENTS_TEST_MODE", "thread"))
    args = parser.parse_args(argv)
    if args.plan:
        from flink_agents.plan.agent_plan import AgentPlan

        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(AgentPlan.from_agent(OneFileAgent()).model_dump_json())
        print("DONE plan", flush=True)
        return 0
    verdicts = run_local() if args.local else run_flink(args.mode, args.operators)
    with open(args.out, "w", encoding="utf-8") as fh:
        for verdict in sorted(verdicts, key=lambda v: v.id):
            fh.write(verdict.model_dump_json() + "\n")
    print(f"DONE {len(verdicts)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
