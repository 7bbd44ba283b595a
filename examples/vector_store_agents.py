"""RAG and long-term memory on an embedded database: Qdrant (local mode) or Milvus Lite.

What it shows:

- a vector store that needs no server: ``QdrantVectorStore(path=...)`` (``pip install
  'flink-agents-py[qdrant]'``) or ``MilvusVectorStore(uri="....db")`` (``[milvus]``, Linux
  and macOS); both keep their data in ``--data-dir`` across runs;
- **RAG**: documents are loaded into the store once (:func:`load_documents`, as a batch job
  would), then :class:`~examples.rag_agent.RagAgent` answers questions from them through
  ``ContextRetrievalRequestEvent`` (the built-in retrieval action queries the store);
- **long-term memory** (mem0, ``[mem0]``): :class:`MemoryAgent` remembers what each user
  tells it in ``ctx.long_term_memory`` and recalls it by similarity; the same store class
  holds the memories (``long-term-memory.mem0.vector-store``). A second run of the
  environment, with fresh resources, still finds them in the store's directory.

Models are offline and deterministic: hashing embeddings (swap in any embedding
connection) and scripted chat models from :mod:`flink_agents.testing` (``memory_brain``
plays the model mem0 asks to extract and merge facts).

Run: ``python -m examples.vector_store_agents --store qdrant --data-dir /tmp/agent-data``
(or ``--store milvus``).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from examples.rag_agent import DOCUMENTS, QUESTIONS, RagAgent
from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.decorators import action
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.integrations.embedding_models.hashing_embedding_model import (
    HashingEmbeddingModelConnection,
    HashingEmbeddingModelSetup,
)
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

STORES = ("qdrant", "milvus")
DIMENSIONS = 256  # the hashing embedding's default, as RagAgent uses it


def store_descriptor(store: str, data_dir: str | Path, collection: str) -> ResourceDescriptor:
    """The vector store ``store`` keeping its data under ``data_dir``."""
    directory = Path(data_dir)
    if store == "qdrant":
        return ResourceDescriptor(
            clazz="flink_agents.integrations.vector_stores.qdrant.qdrant_vector_store."
            "QdrantVectorStore",
            path=str(directory / "qdrant"),
            embedding_model="embedder",
            collection=collection,
        )
    if store == "milvus":
        return ResourceDescriptor(
            clazz="flink_agents.integrations.vector_stores.milvus.milvus_vector_store."
            "MilvusVectorStore",
            uri=str(directory / "milvus.db"),
            embedding_model="embedder",
            collection=collection,
        )
    raise ValueError(f"unknown store {store!r}; use one of {STORES}")


def _add_embedder(agent: Agent) -> None:
    agent.add_resource(
        "embedding_connection",
        ResourceDescriptor(clazz=HashingEmbeddingModelConnection, dimensions=DIMENSIONS),
    )
    agent.add_resource(
        "embedder",
        ResourceDescriptor(clazz=HashingEmbeddingModelSetup, connection="embedding_connection"),
    )


# --- RAG ----------------------------------------------------------------------------------


def load_documents(store: str, data_dir: str | Path) -> list[str]:
    """Embed the example documents and write them into the store (ingestion, done once)."""
    connection = HashingEmbeddingModelConnection(dimensions=DIMENSIONS)
    embedder = HashingEmbeddingModelSetup(
        connection="embedding_connection", get_resource=lambda name, rtype: connection
    )
    resources = {"embedder": embedder}
    descriptor = store_descriptor(store, data_dir, "knowledge")
    vector_store = descriptor.clazz(
        **descriptor.arguments, get_resource=lambda name, rtype: resources[name]
    )
    try:
        return vector_store.add([Document.model_validate(d) for d in DOCUMENTS])
    finally:
        vector_store.close()


def rag_agent(store: str, data_dir: str | Path) -> Agent:
    """:class:`RagAgent` reading its passages from the store instead of memory."""
    return RagAgent(knowledge=store_descriptor(store, data_dir, "knowledge"))


def run_rag(store: str, data_dir: str | Path) -> list[dict[str, Any]]:
    """Answer the RAG example's questions from the store."""
    env = AgentsExecutionEnvironment.get_execution_environment()
    inputs = [{"key": i, "value": q} for i, q in enumerate(QUESTIONS)]
    out = env.from_list(inputs).apply(rag_agent(store, data_dir)).to_list()
    env.execute()
    return out


# --- long-term memory ----------------------------------------------------------------------

_BLOCK = re.compile(r"```\s*(.*?)\s*```", re.S)


def memory_brain(messages: list[ChatMessage], tools: list[Any]) -> str:
    """Plays the model mem0 asks: each user line is a fact; a fact already stored is kept
    (NONE), a new one added (ADD)."""
    last = messages[-1].content or ""
    if last.startswith("Input:"):
        lines = [ln[len("user: ") :] for ln in last.splitlines()[1:] if ln.startswith("user: ")]
        return json.dumps({"facts": lines})
    blocks = _BLOCK.findall(last)
    known = [] if "Current memory is empty" in last or len(blocks) < 2 else _literal(blocks[-2])
    decisions = []
    for fact in _literal(blocks[-1]):
        same = next((m for m in known if m["text"] == fact), None)
        if same is not None:
            decisions.append({"id": same["id"], "text": fact, "event": "NONE"})
        else:
            decisions.append({"id": str(len(known) + len(decisions)), "text": fact, "event": "ADD"})
    return json.dumps({"memory": decisions})


def _literal(text: str) -> Any:
    import ast

    return ast.literal_eval(text)


class MemoryAgent(Agent):
    """``{"user": ..., "tell": text}`` remembers a fact about the user;
    ``{"user": ..., "ask": text}`` outputs the user's facts closest to the question."""

    @action(InputEvent)
    @staticmethod
    async def remember_or_recall(event: InputEvent, ctx: RunnerContext) -> None:
        request = event.input
        memories = ctx.long_term_memory.get_memory_set(f"facts_{request['user']}")
        if "tell" in request:
            await ctx.durable_execute_async(memories.add, request["tell"])
            ctx.send_event(OutputEvent(output={"user": request["user"], "stored": True}))
            return
        found = await ctx.durable_execute_async(memories.search, request["ask"], limit=1)
        ctx.send_event(
            OutputEvent(output={"user": request["user"], "recalled": [m.value for m in found]})
        )


def memory_agent(store: str, data_dir: str | Path) -> Agent:
    """:class:`MemoryAgent` with the resources long-term memory runs on."""
    agent = MemoryAgent()
    _add_embedder(agent)
    agent.add_resource(
        "brain_connection",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond="examples.vector_store_agents:memory_brain",
        ),
    )
    agent.add_resource(
        "brain", ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="brain_connection")
    )
    agent.add_resource("memory_store", store_descriptor(store, data_dir, "memories"))
    return agent


MEMORY_CONFIG = {
    "long-term-memory.mem0.chat-model-setup": "brain",
    "long-term-memory.mem0.embedding-model-setup": "embedder",
    "long-term-memory.mem0.vector-store": "memory_store",
}


def run_memory(store: str, data_dir: str | Path, inputs: list[dict[str, Any]]) -> list[Any]:
    """One run of the memory agent over ``inputs`` (fresh resources each time)."""
    env = AgentsExecutionEnvironment.get_execution_environment(**MEMORY_CONFIG)
    keyed = [{"key": i["user"], "value": i} for i in inputs]
    out = env.from_list(keyed).apply(memory_agent(store, data_dir)).to_list()
    env.execute()
    return [v for o in out for v in o.values()]


TELL = [
    {"user": "alice", "tell": "Alice lives in Lisbon"},
    {"user": "alice", "tell": "Alice works on stream processing"},
    {"user": "bob", "tell": "Bob prefers tea over coffee"},
]
ASK = [
    {"user": "alice", "ask": "Where does Alice live?"},
    {"user": "bob", "ask": "What does Bob drink?"},
]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run RAG and long-term memory on the chosen store; prints and returns the outputs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=STORES, default="qdrant")
    parser.add_argument("--data-dir", default=None, help="where the store keeps its data")
    args = parser.parse_args(argv)
    data_dir = args.data_dir or tempfile.mkdtemp(prefix=f"agents-{args.store}-")
    load_documents(args.store, data_dir)
    results = {
        "rag": run_rag(args.store, data_dir),
        "told": run_memory(args.store, data_dir, TELL),
        # a second environment: the memories come back from the store's files
        "recalled": run_memory(args.store, data_dir, ASK),
    }
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
