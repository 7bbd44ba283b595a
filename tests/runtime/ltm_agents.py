"""Agents and a scripted "mem0 brain" for the long-term memory tests (local and Flink).

:func:`mem0_brain` answers mem0's two prompts the way a capable model would, without one:

- fact extraction: the user's text is the fact (``{"facts": [text]}``);
- memory update: a fact already stored word for word is NONE, a fact that starts with the
  same three words as a stored one UPDATEs it ("Alice's favourite fruit is watermelon" ->
  "... bananas"), anything else is ADDed.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.decorators import action
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.memory.long_term_memory import MemorySetItem
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.integrations.embedding_models.hashing_embedding_model import (
    HashingEmbeddingModelConnection,
    HashingEmbeddingModelSetup,
)
from flink_agents.integrations.vector_stores.chroma.chroma_vector_store import ChromaVectorStore
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

_BLOCK = re.compile(r"```\s*(.*?)\s*```", re.S)


def _prefix(text: str) -> tuple[str, ...]:
    return tuple(text.lower().split()[:3])


def mem0_brain(messages: list[ChatMessage], tools: list[Any]) -> str:
    """Plays the model mem0 asks (see the module docstring)."""
    last = messages[-1].content or ""
    if last.startswith("Input:"):
        lines = [ln for ln in last.splitlines()[1:] if ln.startswith("user: ")]
        return json.dumps({"facts": [ln[len("user: ") :] for ln in lines]})
    blocks = _BLOCK.findall(last)
    empty = "Current memory is empty" in last
    old = [] if empty or len(blocks) < 2 else ast.literal_eval(blocks[-2])
    facts = ast.literal_eval(blocks[-1])
    decisions = []
    for fact in facts:
        same = next((m for m in old if m["text"] == fact), None)
        near = next((m for m in old if _prefix(m["text"]) == _prefix(fact)), None)
        if same is not None:
            decisions.append({"id": same["id"], "text": fact, "event": "NONE"})
        elif near is not None:
            decisions.append(
                {"id": near["id"], "text": fact, "event": "UPDATE", "old_memory": near["text"]}
            )
        else:
            decisions.append({"id": str(len(old) + len(decisions)), "text": fact, "event": "ADD"})
    return json.dumps({"memory": decisions})


LTM_CONFIG = {
    "long-term-memory.mem0.chat-model-setup": "brain",
    "long-term-memory.mem0.embedding-model-setup": "embedder",
    "long-term-memory.mem0.vector-store": "store",
}


def ltm_resources(
    agent: Agent,
    persist_directory: str,
    *,
    count_file: str | None = None,
    brain: dict[str, Any] | None = None,
    **store: Any,
) -> Agent:
    """Add the three resources long-term memory runs on to ``agent``: the scripted brain
    (or ``brain``: other ScriptedChatModelConnection arguments), hashing embeddings and a
    Chroma store in ``persist_directory``."""
    agent.add_resource(
        "brain_conn",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            count_file=count_file,
            **(brain or {"respond": "tests.runtime.ltm_agents:mem0_brain"}),
        ),
    )
    agent.add_resource(
        "brain", ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="brain_conn")
    )
    agent.add_resource(
        "emb_conn", ResourceDescriptor(clazz=HashingEmbeddingModelConnection, dimensions=128)
    )
    agent.add_resource(
        "embedder", ResourceDescriptor(clazz=HashingEmbeddingModelSetup, connection="emb_conn")
    )
    agent.add_resource(
        "store",
        ResourceDescriptor(
            clazz=ChromaVectorStore,
            embedding_model="embedder",
            persist_directory=persist_directory,
            **{"collection": "ltm", **store},
        ),
    )
    return agent


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, MemorySetItem):
        return {
            "id": value.id,
            "value": value.value,
            "set": value.memory_set_name,
            "metadata": value.additional_metadata,
            "dated": value.created_at is not None and value.updated_at is not None,
        }
    return value


class MemoryOpsAgent(Agent):
    """Input ``{"ops": [[method, {args}], ...]}``: calls the memory set methods (``set``
    names the set, default ``facts``) or ``delete_memory_set`` in order, each through
    ``ctx.durable_execute_async``; outputs the results (items as plain dicts)."""

    @action(InputEvent)
    @staticmethod
    async def run_ops(event: InputEvent, ctx: RunnerContext) -> None:
        ltm = ctx.long_term_memory
        results = []
        for op, args in event.input["ops"]:
            args = dict(args)
            if op == "delete_memory_set":
                results.append(await ctx.durable_execute_async(ltm.delete_memory_set, **args))
                continue
            memory_set = ltm.get_memory_set(args.pop("set", "facts"))
            found = await ctx.durable_execute_async(getattr(memory_set, op), **args)
            results.append(_plain(found))
        ctx.send_event(OutputEvent(output=results))


class BlockingSearchAgent(Agent):
    """Searches long-term memory directly in a sync action (blocks the run's loop)."""

    @action(InputEvent)
    @staticmethod
    def search(event: InputEvent, ctx: RunnerContext) -> None:
        hits = ctx.long_term_memory.get_memory_set("facts").search(event.input, limit=2)
        ctx.send_event(OutputEvent(output=[h.value for h in hits]))


def ops(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """An input for :class:`MemoryOpsAgent`."""
    return {"ops": [list(c) for c in calls]}
