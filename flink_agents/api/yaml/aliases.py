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

#: Resource type -> alias -> class path (Python implementations).
CLAZZ_ALIASES: dict[ResourceType, dict[str, str]] = {
    ResourceType.CHAT_MODEL_CONNECTION: {
        "ollama": ResourceName.ChatModel.OLLAMA_CONNECTION,
        "openai": ResourceName.ChatModel.OPENAI_COMPLETIONS_CONNECTION,
        "anthropic": ResourceName.ChatModel.ANTHROPIC_CONNECTION,
    },
    ResourceType.CHAT_MODEL: {
        "ollama": ResourceName.ChatModel.OLLAMA_SETUP,
        "openai": ResourceName.ChatModel.OPENAI_COMPLETIONS_SETUP,
        "anthropic": ResourceName.ChatModel.ANTHROPIC_SETUP,
    },
    ResourceType.EMBEDDING_MODEL_CONNECTION: {
        "ollama": ResourceName.EmbeddingModel.OLLAMA_CONNECTION,
        "openai": ResourceName.EmbeddingModel.OPENAI_CONNECTION,
    },
    ResourceType.EMBEDDING_MODEL: {
        "ollama": ResourceName.EmbeddingModel.OLLAMA_SETUP,
        "openai": ResourceName.EmbeddingModel.OPENAI_SETUP,
    },
    ResourceType.VECTOR_STORE: {
        "chroma": ResourceName.VectorStore.CHROMA_VECTOR_STORE,
    },
    ResourceType.MCP_SERVER: {
        "mcp": ResourceName.MCP_SERVER,
    },
}

#: Aliases of Apache Flink Agents for implementations this package does not have, with
#: what to use instead.
UNAVAILABLE_ALIASES: dict[ResourceType, dict[str, str]] = {
    ResourceType.CHAT_MODEL_CONNECTION: {
        "tongyi": "",
        "azure_openai": "",
        "vllm": "use clazz: openai with api_base_url: <your vLLM server>/v1",
        "watsonx": "",
    },
    ResourceType.EMBEDDING_MODEL_CONNECTION: {"tongyi": ""},
    ResourceType.VECTOR_STORE: {
        "mem0": "long-term memory runs on mem0 by itself (see LongTermMemoryOptions)",
    },
}
UNAVAILABLE_ALIASES[ResourceType.CHAT_MODEL] = UNAVAILABLE_ALIASES[
    ResourceType.CHAT_MODEL_CONNECTION
]
UNAVAILABLE_ALIASES[ResourceType.EMBEDDING_MODEL] = UNAVAILABLE_ALIASES[
    ResourceType.EMBEDDING_MODEL_CONNECTION
]

#: The Python wrapper of each resource type that may be implemented in Java (``type: java``).
JAVA_WRAPPER_CLAZZ: dict[ResourceType, str] = {
    ResourceType.CHAT_MODEL_CONNECTION: ResourceName.ChatModel.JAVA_WRAPPER_CONNECTION,
    ResourceType.CHAT_MODEL: ResourceName.ChatModel.JAVA_WRAPPER_SETUP,
    ResourceType.EMBEDDING_MODEL_CONNECTION: ResourceName.EmbeddingModel.JAVA_WRAPPER_CONNECTION,
    ResourceType.EMBEDDING_MODEL: ResourceName.EmbeddingModel.JAVA_WRAPPER_SETUP,
}


def resolve_event_type(name: str) -> str:
    """The event type an alias stands for; any other name unchanged."""
    return EVENT_ALIASES.get(name, name)


def resolve_clazz(name: str, resource_type: ResourceType) -> str:
    """The class path of the alias ``name`` for ``resource_type``; any other name unchanged
    (a dotted class path)."""
    return CLAZZ_ALIASES.get(resource_type, {}).get(name, name)
