"""Short names a YAML agents file may use: event aliases for ``listen_to`` /
``trigger_conditions`` and class aliases for ``clazz:`` (as in Apache Flink Agents).

Class aliases depend on the section (``ollama`` is a connection class under
``chat_model_connections`` and a setup class under ``chat_model_setups``). A ``clazz:``
that is not an alias is a dotted class path.
"""

from __future__ import annotations

from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.api.resource import ResourceName, ResourceType

#: Event alias -> the event type string it stands for.
EVENT_ALIASES: dict[str, str] = {
    "input": InputEvent.EVENT_TYPE,
    "output": OutputEvent.EVENT_TYPE,
    "chat_request": ChatRequestEvent.EVENT_TYPE,
    "chat_response": ChatResponseEvent.EVENT_TYPE,
    "tool_request": ToolRequestEvent.EVENT_TYPE,
    "tool_response": ToolResponseEvent.EVENT_TYPE,
    "context_retrieval_request": ContextRetrievalRequestEvent.EVENT_TYPE,
    "context_retrieval_response": ContextRetrievalResponseEvent.EVENT_TYPE,
}

#: Resource type -> alias -> class path (Python implementations). Apache Flink Agents'
#: Python aliases (``tongyi``, ``azure_openai``, ``vllm``, ``mem0``) plus ours for the
#: providers it has in Java only (``bedrock``, ``gemini``, ``milvus``, ``elasticsearch``,
#: ``opensearch``) and for the stores it lacks (``qdrant``, ``pgvector``, ``redis``).
CLAZZ_ALIASES: dict[ResourceType, dict[str, str]] = {
    ResourceType.CHAT_MODEL_CONNECTION: {
        "ollama": ResourceName.ChatModel.OLLAMA_CONNECTION,
        "openai": ResourceName.ChatModel.OPENAI_COMPLETIONS_CONNECTION,
        "anthropic": ResourceName.ChatModel.ANTHROPIC_CONNECTION,
        "azure_openai": ResourceName.ChatModel.AZURE_OPENAI_CONNECTION,
        "vllm": ResourceName.ChatModel.VLLM_CONNECTION,
        "tongyi": ResourceName.ChatModel.TONGYI_CONNECTION,
        "bedrock": ResourceName.ChatModel.BEDROCK_CONNECTION,
        "gemini": ResourceName.ChatModel.GEMINI_CONNECTION,
    },
    ResourceType.CHAT_MODEL: {
        "ollama": ResourceName.ChatModel.OLLAMA_SETUP,
        "openai": ResourceName.ChatModel.OPENAI_COMPLETIONS_SETUP,
        "anthropic": ResourceName.ChatModel.ANTHROPIC_SETUP,
        "azure_openai": ResourceName.ChatModel.AZURE_OPENAI_SETUP,
        "vllm": ResourceName.ChatModel.VLLM_SETUP,
        "tongyi": ResourceName.ChatModel.TONGYI_SETUP,
        "bedrock": ResourceName.ChatModel.BEDROCK_SETUP,
        "gemini": ResourceName.ChatModel.GEMINI_SETUP,
    },
    ResourceType.EMBEDDING_MODEL_CONNECTION: {
        "ollama": ResourceName.EmbeddingModel.OLLAMA_CONNECTION,
        "openai": ResourceName.EmbeddingModel.OPENAI_CONNECTION,
        "azure_openai": ResourceName.EmbeddingModel.AZURE_OPENAI_CONNECTION,
        "tongyi": ResourceName.EmbeddingModel.TONGYI_CONNECTION,
        "bedrock": ResourceName.EmbeddingModel.BEDROCK_CONNECTION,
        "gemini": ResourceName.EmbeddingModel.GEMINI_CONNECTION,
    },
    ResourceType.EMBEDDING_MODEL: {
        "ollama": ResourceName.EmbeddingModel.OLLAMA_SETUP,
        "openai": ResourceName.EmbeddingModel.OPENAI_SETUP,
        "azure_openai": ResourceName.EmbeddingModel.AZURE_OPENAI_SETUP,
        "tongyi": ResourceName.EmbeddingModel.TONGYI_SETUP,
        "bedrock": ResourceName.EmbeddingModel.BEDROCK_SETUP,
        "gemini": ResourceName.EmbeddingModel.GEMINI_SETUP,
    },
    ResourceType.VECTOR_STORE: {
        "chroma": ResourceName.VectorStore.CHROMA_VECTOR_STORE,
        "in_memory": ResourceName.VectorStore.IN_MEMORY_VECTOR_STORE,
        "mem0": ResourceName.VectorStore.MEM0_VECTOR_STORE,
        "qdrant": ResourceName.VectorStore.QDRANT_VECTOR_STORE,
        "milvus": ResourceName.VectorStore.MILVUS_VECTOR_STORE,
        "pgvector": ResourceName.VectorStore.PGVECTOR_VECTOR_STORE,
        "elasticsearch": ResourceName.VectorStore.ELASTICSEARCH_VECTOR_STORE,
        "opensearch": ResourceName.VectorStore.OPENSEARCH_VECTOR_STORE,
        "redis": ResourceName.VectorStore.REDIS_VECTOR_STORE,
    },
    ResourceType.MCP_SERVER: {
        "mcp": ResourceName.MCP_SERVER,
    },
}

#: Aliases of Apache Flink Agents for implementations this package does not have, with
#: what to use instead.
UNAVAILABLE_ALIASES: dict[ResourceType, dict[str, str]] = {
    ResourceType.CHAT_MODEL_CONNECTION: {"watsonx": ""},
    ResourceType.VECTOR_STORE: {"s3_vectors": ""},
}
UNAVAILABLE_ALIASES[ResourceType.CHAT_MODEL] = UNAVAILABLE_ALIASES[
    ResourceType.CHAT_MODEL_CONNECTION
]

#: The Python wrapper of each resource type that may be implemented in Java (``type: java``).
JAVA_WRAPPER_CLAZZ: dict[ResourceType, str] = {
    ResourceType.CHAT_MODEL_CONNECTION: ResourceName.ChatModel.JAVA_WRAPPER_CONNECTION,
    ResourceType.CHAT_MODEL: ResourceName.ChatModel.JAVA_WRAPPER_SETUP,
    ResourceType.EMBEDDING_MODEL_CONNECTION: ResourceName.EmbeddingModel.JAVA_WRAPPER_CONNECTION,
    ResourceType.EMBEDDING_MODEL: ResourceName.EmbeddingModel.JAVA_WRAPPER_SETUP,
    ResourceType.VECTOR_STORE: ResourceName.VectorStore.JAVA_WRAPPER_VECTOR_STORE,
}


def resolve_event_type(name: str) -> str:
    """The event type an alias stands for; any other name unchanged."""
    return EVENT_ALIASES.get(name, name)


def resolve_clazz(name: str, resource_type: ResourceType) -> str:
    """The class path of the alias ``name`` for ``resource_type``; any other name unchanged
    (a dotted class path)."""
    return CLAZZ_ALIASES.get(resource_type, {}).get(name, name)
