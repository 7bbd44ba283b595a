"""RAG agent: retrieve documents from a vector store, then answer with them as context.

What it shows:

- an in-memory vector store (:class:`InMemoryVectorStore`) pre-loaded from constructor
  arguments (each task slot gets the same documents, embedded on first query),
- an embedding model (:class:`HashingEmbeddingModelConnection`: hashed bag of words,
  deterministic and offline; swap in ``OpenAIEmbeddingModelConnection`` or
  ``OllamaEmbeddingModelConnection`` for a real model),
- the retrieval protocol: ``ContextRetrievalRequestEvent`` -> (built-in action) ->
  ``ContextRetrievalResponseEvent`` -> ``ChatRequestEvent`` -> ``ChatResponseEvent``,
- the local environment (``from_list`` / ``to_list``), no Flink needed.

Model: the **scripted model** from :mod:`flink_agents.testing` (offline, deterministic):
:func:`scripted_rag_model` answers with the first sentence of the best context passage and
cites its source; with a real model, the same messages produce a written answer.

Run: ``python -m examples.rag_agent``.
"""

from __future__ import annotations

import re
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.integrations.embedding_models.hashing_embedding_model import (
    HashingEmbeddingModelConnection,
    HashingEmbeddingModelSetup,
)
from flink_agents.integrations.vector_stores.in_memory_vector_store import InMemoryVectorStore
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

DOCUMENTS = [
    {
        "id": "checkpoints",
        "content": "Flink checkpoints snapshot operator state periodically, so a failed job "
        "restarts from the latest checkpoint without losing data.",
        "metadata": {"source": "flink-docs/checkpointing"},
    },
    {
        "id": "watermarks",
        "content": "Watermarks tell Flink how far event time has progressed, which lets event "
        "time windows close even when events arrive out of order.",
        "metadata": {"source": "flink-docs/event-time"},
    },
    {
        "id": "keyed-state",
        "content": "Keyed state is scoped to the current key: each key of a keyed stream has "
        "its own value, list and map state.",
        "metadata": {"source": "flink-docs/state"},
    },
    {
        "id": "rocksdb",
        "content": "The RocksDB state backend keeps state on local disk, so jobs can hold "
        "state much larger than memory.",
        "metadata": {"source": "flink-docs/state-backends"},
    },
]

SYSTEM_PROMPT = (
    "Answer the question using only the context passages below. Cite the source in "
    "brackets. If the context does not contain the answer, say you do not know.\n\n"
    "Context:\n{context}"
)

_PASSAGE = re.compile(r"^\[(?P<source>[^\]]+)\] (?P<text>.+)$", re.M)


def scripted_rag_model(messages: list[ChatMessage], tools: list[Any]) -> str:
    """Plays the LLM: the first sentence of the best passage, with its source."""
    system = next((m.content for m in messages if m.role is MessageRole.SYSTEM), "")
    best = _PASSAGE.search(system)
    if best is None:
        return "I do not know."
    sentence = best.group("text").split(". ")[0].rstrip(".")
    return f"{sentence}. [{best.group('source')}]"


class RagAgent(Agent):
    """Retrieves the two passages closest to the question, then asks the model.

    Args:
        knowledge: the vector store holding the passages (default: an in-memory store
            pre-loaded with :data:`DOCUMENTS`); its ``embedding_model`` is ``"embedder"``.
    """

    def __init__(self, knowledge: ResourceDescriptor | None = None) -> None:
        super().__init__()
        self.add_resource(
            "embedding_connection", ResourceDescriptor(clazz=HashingEmbeddingModelConnection)
        )
        self.add_resource(
            "embedder",
            ResourceDescriptor(clazz=HashingEmbeddingModelSetup, connection="embedding_connection"),
        )
        self.add_resource(
            "knowledge",
            knowledge
            or ResourceDescriptor(
                clazz=InMemoryVectorStore, embedding_model="embedder", documents=DOCUMENTS
            ),
        )
        self.add_resource(
            "chat_connection",
            ResourceDescriptor(clazz=ScriptedChatModelConnection, respond=scripted_rag_model),
        )
        self.add_resource(
            "chat_model",
            ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="chat_connection"),
        )

    @action(InputEvent)
    @staticmethod
    def retrieve(event: InputEvent, ctx: RunnerContext) -> None:
        """Look up passages for the question."""
        ctx.sensory_memory.set("question", event.input)
        ctx.send_event(
            ContextRetrievalRequestEvent(query=event.input, vector_store="knowledge", max_results=2)
        )

    @action(ContextRetrievalResponseEvent)
    @staticmethod
    def ask(event: ContextRetrievalResponseEvent, ctx: RunnerContext) -> None:
        """Put the passages into the system prompt and ask the model."""
        context = "\n".join(
            f"[{d.metadata.get('source', d.id)}] {d.content}" for d in event.documents
        )
        ctx.sensory_memory.set("sources", [d.metadata.get("source") for d in event.documents])
        ctx.send_event(
            ChatRequestEvent(
                model="chat_model",
                messages=[
                    ChatMessage(
                        role=MessageRole.SYSTEM, content=SYSTEM_PROMPT.format(context=context)
                    ),
                    ChatMessage(role=MessageRole.USER, content=event.query),
                ],
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        """Output the answer with the sources it was given."""
        ctx.send_event(
            OutputEvent(
                output={
                    "question": ctx.sensory_memory.get("question"),
                    "answer": event.response.content,
                    "sources": ctx.sensory_memory.get("sources"),
                }
            )
        )


QUESTIONS = [
    "How does Flink recover a failed job without losing data?",
    "What lets event time windows close when events arrive out of order?",
    "Where does the RocksDB backend keep state?",
]


def main() -> list[dict[str, Any]]:
    """Answer the sample questions in the local environment; prints and returns outputs."""
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    env = AgentsExecutionEnvironment.get_execution_environment()
    out = (
        env.from_list([{"key": i, "value": q} for i, q in enumerate(QUESTIONS)])
        .apply(RagAgent())
        .to_list()
    )
    env.execute()
    for record in out:
        print(record)
    return out


if __name__ == "__main__":
    main()
