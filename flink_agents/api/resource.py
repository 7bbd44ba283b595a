"""Resources: chat models, tools, prompts, embeddings, vector stores, MCP servers.

A resource is declared either as a :class:`ResourceDescriptor` (a recipe: class + arguments,
instantiated lazily once per task slot) or, for :class:`SerializableResource` (prompts,
tools), as the instance itself, which travels inside the plan.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from flink_agents.api.resource_context import ResourceContext


class ResourceType(str, Enum):
    """The kinds of resources an agent can declare."""

    CHAT_MODEL = "chat_model"
    CHAT_MODEL_CONNECTION = "chat_model_connection"
    TOOL = "tool"
    PROMPT = "prompt"
    EMBEDDING_MODEL = "embedding_model"
    EMBEDDING_MODEL_CONNECTION = "embedding_model_connection"
    VECTOR_STORE = "vector_store"
    MCP_SERVER = "mcp_server"
    SKILLS = "skills"


#: Arguments of a resource that name other resources, by the resource's type: what the plan
#: compiler and the YAML loader check (a name must be declared) and what a setup resolves
#: through ``get_resource``.
RESOURCE_REFERENCES: dict[ResourceType, list[tuple[str, ResourceType]]] = {
    ResourceType.CHAT_MODEL: [
        ("connection", ResourceType.CHAT_MODEL_CONNECTION),
        ("prompt", ResourceType.PROMPT),
        ("tools", ResourceType.TOOL),
    ],
    ResourceType.EMBEDDING_MODEL: [("connection", ResourceType.EMBEDDING_MODEL_CONNECTION)],
    ResourceType.VECTOR_STORE: [("embedding_model", ResourceType.EMBEDDING_MODEL)],
}


class Resource(BaseModel, ABC):
    """Base class of every resource.

    Attributes:
        get_resource: set by the runtime; lets a resource look up the resources it depends on
            (a chat model setup its connection and tools, a vector store its embedding model).
    """

    # Unknown arguments are an error, not silently dropped (a typo in a descriptor would
    # otherwise go unnoticed).
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    get_resource: Callable[[str, ResourceType], Any] | None = Field(
        default=None, exclude=True, repr=False
    )

    @model_validator(mode="before")
    @classmethod
    def _from_resource_context(cls, data: Any) -> Any:
        # Upstream's way to make a resource by hand: resource_context=<a ResourceContext>.
        if isinstance(data, dict) and "resource_context" in data:
            data = dict(data)
            context = data.pop("resource_context")
            if context is not None and data.get("get_resource") is None:
                data["get_resource"] = context.get_resource
        return data

    @property
    def resource_context(self) -> ResourceContext:
        """The resources this one may look up (as in Apache Flink Agents):
        ``self.resource_context.get_resource(name, ResourceType.X)``."""
        return _LookupContext(self)

    @classmethod
    @abstractmethod
    def resource_type(cls) -> ResourceType:
        """The kind of this resource."""

    def close(self) -> None:
        """Release what the resource holds (connections, processes). Called once."""

    def __repr_args__(self) -> Any:
        # Secrets never reach a repr: fields named like one, SecretStr values, URL
        # credentials and known secret values (flink_agents/secrets.py).
        from flink_agents.secrets import masked_field

        for name, value in super().__repr_args__():
            yield name, masked_field(name, value) if name is not None else value

    def _lookup(self, name: str, rtype: ResourceType) -> Any:
        if self.get_resource is None:
            from flink_agents.errors import ResourceError

            raise ResourceError(
                f"{type(self).__name__} needs resource {name!r} ({rtype.value}) but was not "
                "created by an agent runtime; pass get_resource= when creating it by hand"
            )
        return self.get_resource(name, rtype)


class _LookupContext(ResourceContext):
    """``Resource.resource_context``: the resource's own lookup."""

    __slots__ = ("_resource",)

    def __init__(self, resource: Resource) -> None:
        self._resource = resource

    def get_resource(self, name: str, resource_type: ResourceType) -> Any:
        return self._resource._lookup(name, resource_type)


class SerializableResource(Resource, ABC):
    """A resource whose instance can travel inside the plan as JSON (prompts, tools)."""


class ResourceDescriptor:
    """A recipe for a resource: the class to create and the arguments to create it with.

    Args:
        clazz: the resource class, or its dotted import path as a string.
        **arguments: keyword arguments for the class. Secrets (``api_key`` and the like) are
            kept out of the plan JSON; prefer leaving them unset so the integration reads its
            environment variable.
    """

    def __init__(self, clazz: type[Resource] | str | None = None, **arguments: Any) -> None:
        if clazz is None:
            raise TypeError("ResourceDescriptor needs clazz= (a Resource class or its path)")
        if isinstance(clazz, str):
            module, _, name = clazz.rpartition(".")
            if not module:
                raise ValueError(
                    f"ResourceDescriptor clazz {clazz!r} must be a dotted path 'pkg.module.Class'"
                )
            self.target_module, self.target_clazz = module, name
            self._clazz: type[Resource] | None = None
        else:
            self.target_module, self.target_clazz = clazz.__module__, clazz.__qualname__
            self._clazz = clazz
        self.arguments: dict[str, Any] = dict(arguments)

    @property
    def clazz(self) -> type[Resource]:
        """The resource class, imported on first use."""
        if self._clazz is None:
            obj: Any = importlib.import_module(self.target_module)
            for part in self.target_clazz.split("."):
                obj = getattr(obj, part)
            self._clazz = obj
        return self._clazz

    @property
    def class_path(self) -> str:
        """``module.Class`` of the resource class."""
        return f"{self.target_module}.{self.target_clazz}"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ResourceDescriptor)
            and self.class_path == other.class_path
            and self.arguments == other.arguments
        )

    def __hash__(self) -> int:
        return hash(self.class_path)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}=..." for k in self.arguments)
        return f"ResourceDescriptor({self.class_path}{', ' if args else ''}{args})"


class ResourceName:
    """Class paths of the built-in resource implementations, for
    ``ResourceDescriptor(clazz=ResourceName.ChatModel.OLLAMA_SETUP, ...)`` (as in Apache
    Flink Agents; only the implementations this package has are listed)."""

    class ChatModel:
        """Chat model connections and setups."""

        ANTHROPIC_CONNECTION = (
            "flink_agents.integrations.chat_models.anthropic.anthropic_chat_model."
            "AnthropicChatModelConnection"
        )
        ANTHROPIC_SETUP = (
            "flink_agents.integrations.chat_models.anthropic.anthropic_chat_model."
            "AnthropicChatModelSetup"
        )
        OLLAMA_CONNECTION = (
            "flink_agents.integrations.chat_models.ollama_chat_model.OllamaChatModelConnection"
        )
        OLLAMA_SETUP = (
            "flink_agents.integrations.chat_models.ollama_chat_model.OllamaChatModelSetup"
        )
        OPENAI_COMPLETIONS_CONNECTION = (
            "flink_agents.integrations.chat_models.openai.openai_chat_model."
            "OpenAIChatModelConnection"
        )
        OPENAI_COMPLETIONS_SETUP = (
            "flink_agents.integrations.chat_models.openai.openai_chat_model.OpenAIChatModelSetup"
        )
        AZURE_OPENAI_CONNECTION = (
            "flink_agents.integrations.chat_models.azure.azure_openai_chat_model."
            "AzureOpenAIChatModelConnection"
        )
        AZURE_OPENAI_SETUP = (
            "flink_agents.integrations.chat_models.azure.azure_openai_chat_model."
            "AzureOpenAIChatModelSetup"
        )
        VLLM_CONNECTION = (
            "flink_agents.integrations.chat_models.vllm.vllm_chat_model.VLLMChatModelConnection"
        )
        VLLM_SETUP = "flink_agents.integrations.chat_models.vllm.vllm_chat_model.VLLMChatModelSetup"
        TONGYI_CONNECTION = (
            "flink_agents.integrations.chat_models.tongyi_chat_model.TongyiChatModelConnection"
        )
        TONGYI_SETUP = (
            "flink_agents.integrations.chat_models.tongyi_chat_model.TongyiChatModelSetup"
        )
        BEDROCK_CONNECTION = (
            "flink_agents.integrations.chat_models.bedrock.bedrock_chat_model."
            "BedrockChatModelConnection"
        )
        BEDROCK_SETUP = (
            "flink_agents.integrations.chat_models.bedrock.bedrock_chat_model.BedrockChatModelSetup"
        )
        GEMINI_CONNECTION = (
            "flink_agents.integrations.chat_models.gemini.gemini_chat_model."
            "GeminiChatModelConnection"
        )
        GEMINI_SETUP = (
            "flink_agents.integrations.chat_models.gemini.gemini_chat_model.GeminiChatModelSetup"
        )
        JAVA_WRAPPER_CONNECTION = (
            "flink_agents.api.chat_models.java_chat_model.JavaChatModelConnection"
        )
        JAVA_WRAPPER_SETUP = "flink_agents.api.chat_models.java_chat_model.JavaChatModelSetup"

    class EmbeddingModel:
        """Embedding model connections and setups."""

        OLLAMA_CONNECTION = (
            "flink_agents.integrations.embedding_models.ollama_embedding_model."
            "OllamaEmbeddingModelConnection"
        )
        OLLAMA_SETUP = (
            "flink_agents.integrations.embedding_models.ollama_embedding_model."
            "OllamaEmbeddingModelSetup"
        )
        OPENAI_CONNECTION = (
            "flink_agents.integrations.embedding_models.openai_embedding_model."
            "OpenAIEmbeddingModelConnection"
        )
        OPENAI_SETUP = (
            "flink_agents.integrations.embedding_models.openai_embedding_model."
            "OpenAIEmbeddingModelSetup"
        )
        AZURE_OPENAI_CONNECTION = (
            "flink_agents.integrations.embedding_models.azure_openai_embedding_model."
            "AzureOpenAIEmbeddingModelConnection"
        )
        AZURE_OPENAI_SETUP = (
            "flink_agents.integrations.embedding_models.azure_openai_embedding_model."
            "AzureOpenAIEmbeddingModelSetup"
        )
        BEDROCK_CONNECTION = (
            "flink_agents.integrations.embedding_models."
            "bedrock_embedding_model.BedrockEmbeddingModelConnection"
        )
        BEDROCK_SETUP = (
            "flink_agents.integrations.embedding_models."
            "bedrock_embedding_model.BedrockEmbeddingModelSetup"
        )
        GEMINI_CONNECTION = (
            "flink_agents.integrations.embedding_models."
            "gemini_embedding_model.GeminiEmbeddingModelConnection"
        )
        GEMINI_SETUP = (
            "flink_agents.integrations.embedding_models."
            "gemini_embedding_model.GeminiEmbeddingModelSetup"
        )
        TONGYI_CONNECTION = (
            "flink_agents.integrations.embedding_models."
            "tongyi_embedding_model.TongyiEmbeddingModelConnection"
        )
        TONGYI_SETUP = (
            "flink_agents.integrations.embedding_models."
            "tongyi_embedding_model.TongyiEmbeddingModelSetup"
        )
        JAVA_WRAPPER_CONNECTION = (
            "flink_agents.api.embedding_models.java_embedding_model.JavaEmbeddingModelConnection"
        )
        JAVA_WRAPPER_SETUP = (
            "flink_agents.api.embedding_models.java_embedding_model.JavaEmbeddingModelSetup"
        )

    class VectorStore:
        """Vector stores."""

        CHROMA_VECTOR_STORE = (
            "flink_agents.integrations.vector_stores.chroma.chroma_vector_store.ChromaVectorStore"
        )
        IN_MEMORY_VECTOR_STORE = (
            "flink_agents.integrations.vector_stores.in_memory_vector_store.InMemoryVectorStore"
        )
        MEM0_VECTOR_STORE = (
            "flink_agents.integrations.vector_stores.mem0.mem0_vector_store.Mem0VectorStore"
        )
        QDRANT_VECTOR_STORE = (
            "flink_agents.integrations.vector_stores.qdrant.qdrant_vector_store.QdrantVectorStore"
        )
        MILVUS_VECTOR_STORE = (
            "flink_agents.integrations.vector_stores.milvus.milvus_vector_store.MilvusVectorStore"
        )
        PGVECTOR_VECTOR_STORE = (
            "flink_agents.integrations.vector_stores.pgvector.pgvector_vector_store.PGVectorStore"
        )
        ELASTICSEARCH_VECTOR_STORE = (
            "flink_agents.integrations.vector_stores.elasticsearch."
            "elasticsearch_vector_store.ElasticsearchVectorStore"
        )
        OPENSEARCH_VECTOR_STORE = (
            "flink_agents.integrations.vector_stores.elasticsearch."
            "opensearch_vector_store.OpenSearchVectorStore"
        )
        REDIS_VECTOR_STORE = (
            "flink_agents.integrations.vector_stores.redis.redis_vector_store.RedisVectorStore"
        )
        JAVA_WRAPPER_VECTOR_STORE = (
            "flink_agents.api.vector_stores.java_vector_store.JavaVectorStore"
        )
        JAVA_WRAPPER_COLLECTION_MANAGEABLE_VECTOR_STORE = (
            "flink_agents.api.vector_stores.java_vector_store.JavaCollectionManageableVectorStore"
        )

    MCP_SERVER = "flink_agents.integrations.mcp.mcp.MCPServer"
