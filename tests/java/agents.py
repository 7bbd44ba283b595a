"""Agents and jobs used by the Java bridge tests; importable by the Python workers
(``tests.java.agents``).

The Java side is ``org.flinkagents.examples`` from the bridge jar: ``UpperCaseTool``,
``CalculatorTool`` and ``ScriptedJavaChatModel`` (replies chosen by turn, with placeholders
such as ``{input}`` and ``{tool_result:0}``).
"""

from __future__ import annotations

from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.java_chat_model import (
    JavaChatModelConnection,
    JavaChatModelSetup,
)
from flink_agents.api.embedding_models.java_embedding_model import (
    JavaEmbeddingModelConnection,
    JavaEmbeddingModelSetup,
)
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import ErrorEvent, InputEvent, OutputEvent
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.tools.java_tool import JavaTool

EXAMPLES = "org.flinkagents.examples."


def reverse_text(text: str) -> str:
    """Reverses a text (a Python tool next to the Java ones).

    Args:
        text: the text to reverse.
    """
    return text[::-1]


# -- actions -----------------------------------------------------------------------------------
def ask(event: InputEvent, ctx: RunnerContext) -> None:
    record = event.input
    ctx.short_term_memory.set("record", record)
    ctx.send_event(
        ChatRequestEvent(
            model=record.get("model", "java_model"),
            messages=[ChatMessage(role=MessageRole.USER, content=record["text"])],
        )
    )


def answer(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    record = ctx.short_term_memory.get("record")
    extra = event.response.extra_args
    ctx.send_event(
        OutputEvent(
            output={
                "id": record["id"],
                "reply": event.response.content,
                "java_model": extra.get("java_model"),
                "turn": extra.get("turn"),
            }
        )
    )


def report_error(event: ErrorEvent, ctx: RunnerContext) -> None:
    record = ctx.short_term_memory.get("record")
    ctx.send_event(
        OutputEvent(
            output={"id": record["id"], "error_type": event.error_type, "error": event.error}
        )
    )


def embed(event: InputEvent, ctx: RunnerContext) -> None:
    setup: Any = ctx.get_resource("embedder", ResourceType.EMBEDDING_MODEL)
    ctx.send_event(
        OutputEvent(output={"id": event.input["id"], "vector": setup.embed(event.input["text"])})
    )


# -- the agent ---------------------------------------------------------------------------------
def java_agent(lifecycle_file: str | None = None) -> Agent:
    """A Python agent using Java resources.

    Chat models (chosen by the record's ``model``, default ``java_model``):

    - ``java_model``: a Java scripted model that first calls the Java tool ``upper_case`` and
      the Python tool ``reverse_text`` on the input, then answers with both results;
      an input containing ``boom`` makes the Java model throw.
    - ``calc_model``: asks the Java ``calculator`` to divide by zero (a Java exception in a
      tool, which the model sees as the tool result), then answers with the tool results.
    - ``missing_tool_model``: offers a Java tool whose class does not exist.
    - ``missing_model``: a connection whose Java class does not exist.
    """
    lifecycle = {"lifecycle_file": lifecycle_file} if lifecycle_file else {}
    agent = Agent()
    agent.add_action("ask", InputEvent, ask)
    agent.add_action("answer", ChatResponseEvent, answer)
    agent.add_action("report_error", ErrorEvent, report_error)
    agent.add_resource(
        "upper_case",
        ResourceType.TOOL,
        ResourceDescriptor(clazz=JavaTool, java_clazz=EXAMPLES + "UpperCaseTool", **lifecycle),
    )
    agent.add_resource(
        "calculator",
        ResourceType.TOOL,
        ResourceDescriptor(clazz=JavaTool, java_clazz=EXAMPLES + "CalculatorTool"),
    )
    agent.add_resource(
        "missing_tool",
        ResourceType.TOOL,
        ResourceDescriptor(clazz=JavaTool, java_clazz="com.acme.DoesNotExist"),
    )
    agent.add_resource("reverse_text", ResourceType.TOOL, reverse_text)
    agent.add_resource(
        "java_conn",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(
            clazz=JavaChatModelConnection,
            java_clazz=EXAMPLES + "ScriptedJavaChatModel",
            script=[
                {
                    "content": "",
                    "tool_calls": [
                        {"function": {"name": "upper_case", "arguments": {"text": "{input}"}}},
                        {"function": {"name": "reverse_text", "arguments": {"text": "{input}"}}},
                    ],
                },
                "java={tool_result:0} python={tool_result:1} model={option:model}",
            ],
            fail_when="boom",
            **lifecycle,
        ),
    )
    agent.add_resource(
        "calc_conn",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(
            clazz=JavaChatModelConnection,
            java_clazz=EXAMPLES + "ScriptedJavaChatModel",
            script=[
                {
                    "tool_calls": [
                        {
                            "function": {
                                "name": "calculator",
                                "arguments": {"a": 6, "b": 0, "op": "div"},
                            }
                        },
                        {
                            "function": {
                                "name": "calculator",
                                "arguments": {"a": 6, "b": 7, "op": "mul"},
                            }
                        },
                    ]
                },
                "results: {tool_results}",
            ],
        ),
    )
    agent.add_resource(
        "missing_conn",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(clazz=JavaChatModelConnection, java_clazz="com.acme.MissingModel"),
    )
    agent.add_resource(
        "java_model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(
            clazz=JavaChatModelSetup,
            connection="java_conn",
            model="scripted-1",
            tools=["upper_case", "reverse_text"],
        ),
    )
    agent.add_resource(
        "calc_model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=JavaChatModelSetup, connection="calc_conn", tools=["calculator"]),
    )
    agent.add_resource(
        "missing_tool_model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(
            clazz=JavaChatModelSetup, connection="java_conn", tools=["missing_tool"]
        ),
    )
    agent.add_resource(
        "missing_model",
        ResourceType.CHAT_MODEL,
        ResourceDescriptor(clazz=JavaChatModelSetup, connection="missing_conn"),
    )
    return agent


def embedding_agent() -> Agent:
    """Embeds each record's text with the Java ``HashingEmbeddingModel``."""
    agent = Agent()
    agent.add_action("embed", InputEvent, embed)
    agent.add_resource(
        "embed_conn",
        ResourceType.EMBEDDING_MODEL_CONNECTION,
        ResourceDescriptor(
            clazz=JavaEmbeddingModelConnection,
            java_clazz=EXAMPLES + "HashingEmbeddingModel",
            dimension=16,
        ),
    )
    agent.add_resource(
        "embedder",
        ResourceType.EMBEDDING_MODEL,
        ResourceDescriptor(clazz=JavaEmbeddingModelSetup, connection="embed_conn"),
    )
    return agent


# -- a Java vector store -----------------------------------------------------------------------
STORE_DOCUMENTS = [
    {"id": "ckpt", "content": "checkpoints snapshot operator state", "metadata": {"t": "state"}},
    {"id": "wm", "content": "watermarks track event time progress", "metadata": {"t": "time"}},
    {"id": "rocks", "content": "rocksdb keeps large state on disk", "metadata": {"t": "state"}},
]


async def store_op(event: InputEvent, ctx: RunnerContext) -> None:
    """``{"op": "load"}`` adds the documents (embedded in Python), ``{"op": "ask", "q": ...}``
    asks the built-in retrieval action, ``{"op": "filter"}`` queries with a metadata filter,
    ``{"op": "collections"}`` manages collections."""
    from flink_agents.api.events.context_retrieval_event import ContextRetrievalRequestEvent
    from flink_agents.api.vector_stores.vector_store import Document, VectorStoreQuery

    request = event.input
    store: Any = ctx.get_resource("java_store", ResourceType.VECTOR_STORE)
    op = request["op"]
    if op == "load":
        ids = store.add([Document.model_validate(d) for d in STORE_DOCUMENTS])
        ctx.send_event(OutputEvent(output={"id": request["id"], "ids": ids}))
    elif op == "ask":
        ctx.sensory_memory.set("id", request["id"])
        ctx.send_event(
            ContextRetrievalRequestEvent(
                query=request["q"], vector_store="java_store", max_results=2
            )
        )
    elif op == "filter":
        found = store.query(
            VectorStoreQuery(query_text="state on disk", limit=5, filters={"t": "state"})
        ).documents
        ctx.send_event(OutputEvent(output={"id": request["id"], "found": [d.id for d in found]}))
    else:
        store.create_collection_if_not_exists("extra")
        store.add(Document(id="e1", content="extra doc"), collection_name="extra")
        names = store.list_collections()
        store.delete_collection("extra")
        ctx.send_event(
            OutputEvent(
                output={"id": request["id"], "before": names, "after": store.list_collections()}
            )
        )


def retrieved(event: Any, ctx: RunnerContext) -> None:
    ctx.send_event(
        OutputEvent(
            output={
                "id": ctx.sensory_memory.get("id"),
                "docs": [(d.id, round(d.score or 0.0, 3)) for d in event.documents],
            }
        )
    )


def vector_store_agent() -> Agent:
    """A Java vector store (``InMemoryJavaVectorStore``) with Python hashing embeddings."""
    from flink_agents.api.events.context_retrieval_event import ContextRetrievalResponseEvent
    from flink_agents.api.vector_stores.java_vector_store import (
        JavaCollectionManageableVectorStore,
    )
    from flink_agents.integrations.embedding_models.hashing_embedding_model import (
        HashingEmbeddingModelConnection,
        HashingEmbeddingModelSetup,
    )

    agent = Agent()
    agent.add_action("store_op", InputEvent, store_op)
    agent.add_action("retrieved", ContextRetrievalResponseEvent, retrieved)
    agent.add_resource(
        "emb_conn",
        ResourceType.EMBEDDING_MODEL_CONNECTION,
        ResourceDescriptor(clazz=HashingEmbeddingModelConnection, dimensions=64),
    )
    agent.add_resource(
        "embedder",
        ResourceType.EMBEDDING_MODEL,
        ResourceDescriptor(clazz=HashingEmbeddingModelSetup, connection="emb_conn"),
    )
    agent.add_resource(
        "java_store",
        ResourceType.VECTOR_STORE,
        ResourceDescriptor(
            clazz=JavaCollectionManageableVectorStore,
            java_clazz=EXAMPLES + "InMemoryJavaVectorStore",
            embedding_model="embedder",
            collection="docs",
        ),
    )
    return agent
