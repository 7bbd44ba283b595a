"""Pins the user-facing names (API.md) and keeps the layers honest."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

PUBLIC = {
    "flink_agents.api.agents.agent": {
        "Agent",
        "ActionDefinition",
        "HookDefinition",
        "InterceptorDefinition",
        "interceptor_name",
        "resource_type_of",
    },
    "flink_agents.api.agents.react_agent": {
        "ReActAgent",
        "parse_output",
        "react_observe_action",
        "react_start_action",
        "react_stop_action",
    },
    "flink_agents.api.agents.text_react": {
        "ReActStep",
        "match_tool",
        "observation",
        "parse_react",
        "tools_prompt",
    },
    "flink_agents.api.chat_history": {
        "ChatHistory",
        "estimate_tokens",
        "history_turn",
        "summary_message",
        "summary_request",
        "with_history",
    },
    "flink_agents.api.hooks": {"HookContext", "HookPoint"},
    "flink_agents.api.interceptors": {
        "ModelCallRequest",
        "ModelInterceptor",
        "ToolCallRequest",
        "ToolInterceptor",
    },
    "flink_agents.api.core_options": {
        "AgentConfigOptions",
        "AgentConfiguration",
        "AgentExecutionOptions",
        "ConditionEvaluationFailureStrategy",
        "ConfigOption",
        "ErrorHandlingStrategy",
        "MemoryEventOptions",
        "option_modules",
        "ShortTermMemoryTtlUpdate",
        "ShortTermMemoryTtlVisibility",
        "register_key_family",
        "register_options",
    },
    "flink_agents.api.decorators": {
        "ActionMarker",
        "ResourceMarker",
        "action",
        "chat_model_connection",
        "chat_model_setup",
        "embedding_model_connection",
        "embedding_model_setup",
        "hook",
        "mcp_server",
        "model_interceptor",
        "prompt",
        "skills",
        "tool",
        "tool_interceptor",
        "vector_store",
    },
    "flink_agents.api.resource": {
        "Resource",
        "ResourceDescriptor",
        "ResourceName",
        "ResourceType",
        "SerializableResource",
    },
    "flink_agents.api.events.event": {
        "ErrorEvent",
        "Event",
        "InputEvent",
        "OutputEvent",
        "event_class_for",
        "registered_event_types",
    },
    "flink_agents.api.events.event_type": {"EventType", "event_type_constants"},
    "flink_agents.api.trigger_conditions": {
        "CompiledCondition",
        "ConditionEvaluationError",
        "classify",
        "compile_condition",
    },
    "flink_agents.api.events.listener": {"EventContext", "EventListener"},
    "flink_agents.api.resource_context": {"ResourceContext"},
    "flink_agents.api.skills": {"SkillSourceSpec", "Skills"},
    "flink_agents.api.events.chat_event": {"ChatRequestEvent", "ChatResponseEvent"},
    "flink_agents.api.events.tool_event": {"ToolRequestEvent", "ToolResponseEvent"},
    "flink_agents.api.events.context_retrieval_event": {
        "ContextRetrievalRequestEvent",
        "ContextRetrievalResponseEvent",
    },
    "flink_agents.api.runner_context": {"RunnerContext"},
    "flink_agents.api.memory_object": {"MemoryObject"},
    "flink_agents.api.memory_reference": {"MemoryRef"},
    "flink_agents.api.chat_message": {"ChatMessage", "MessageRole"},
    "flink_agents.api.chat_models.chat_model": {
        "BaseChatModelConnection",
        "BaseChatModelSetup",
    },
    "flink_agents.api.embedding_models.embedding_model": {
        "BaseEmbeddingModelConnection",
        "BaseEmbeddingModelSetup",
        "EmbeddingResult",
        "EmbeddingTokenUsage",
    },
    "flink_agents.api.vector_stores.vector_store": {
        "BaseVectorStore",
        "CollectionManageableVectorStore",
        "Document",
        "VectorStoreQuery",
        "VectorStoreQueryMode",
        "VectorStoreQueryResult",
    },
    "flink_agents.api.memory.long_term_memory": {
        "BaseLongTermMemory",
        "LongTermMemoryOptions",
        "MemorySet",
        "MemorySetItem",
    },
    "flink_agents.api.prompts.prompt": {"LocalPrompt", "Prompt"},
    "flink_agents.api.tools.tool": {"Tool", "ToolMetadata", "ToolType"},
    "flink_agents.api.tools.function_tool": {"FunctionTool"},
    "flink_agents.api.execution_environment": {
        "AgentBuilder",
        "AgentsExecutionEnvironment",
        "environment_class",
    },
    "flink_agents.api.metric_group": {"MetricGroup"},
    "flink_agents.api.tools.java_tool": {"JavaTool"},
    "flink_agents.api.chat_models.java_chat_model": {
        "JavaChatModelConnection",
        "JavaChatModelSetup",
    },
    "flink_agents.api.yaml.specs": {
        "ActionSpec",
        "AgentSpec",
        "DescriptorSpec",
        "MessageRole",
        "PromptMessage",
        "PromptSpec",
        "ToolSpec",
        "YamlAgentsDocument",
        "export",
    },
    "flink_agents.api.yaml.aliases": {"resolve_clazz", "resolve_event_type"},
    "flink_agents.api.yaml.loader": {
        "YamlRegistry",
        "agent_to_apply",
        "build_agents",
        "load_yaml",
    },
    "flink_agents.testing.ports": {"free_port", "held_port"},
    "flink_agents.testing.run": {"AgentRun", "run_agent"},
    "flink_agents.testing.assertions": {
        "assert_exactly_once",
        "assert_memory",
        "assert_no_repeated_calls",
        "assert_per_key_order",
        "assert_secret_absent",
    },
    "flink_agents.testing.event_log": {"EventLog", "read_event_log"},
    "flink_agents.testing.cassette": {"Cassette"},
    "flink_agents.testing.minicluster": {
        "collect",
        "committed_lines",
        "committed_records",
        "default_mode",
        "exactly_once_sink",
        "local_outputs",
        "make_env",
        "source",
    },
    "flink_agents.testing.servers.openai_server": {
        "OpenAIServer",
        "openai_embeddings_reply",
        "openai_reply",
    },
    "flink_agents.testing.servers.ollama_server": {
        "OllamaServer",
        "ollama_embeddings_reply",
        "ollama_reply",
    },
    "flink_agents.testing.servers.anthropic_server": {"AnthropicServer", "anthropic_reply"},
    "flink_agents.testing.servers.search_server": {"SearchServer"},
    "flink_agents.testing.servers.cloud_formats": {
        "bedrock_error",
        "bedrock_error_reply",
        "bedrock_throttle",
        "converse_reply",
        "converse_results",
        "dashscope_error",
        "dashscope_reply",
        "dashscope_results",
        "dashscope_throttle",
        "gemini_error",
        "gemini_reply",
        "gemini_results",
        "gemini_throttle",
        "openai_error",
        "openai_throttle",
        "responses_reply",
        "responses_results",
        "verify_sigv4",
    },
    "flink_agents.api.embedding_models.java_embedding_model": {
        "JavaEmbeddingModelConnection",
        "JavaEmbeddingModelSetup",
    },
    # providers (docs/providers.md); upstream's module and class names where it has them
    "flink_agents.integrations.chat_models.azure.azure_openai_chat_model": {
        "AzureOpenAIChatModelConnection",
        "AzureOpenAIChatModelSetup",
    },
    "flink_agents.integrations.chat_models.vllm.vllm_chat_model": {
        "VLLMChatModelConnection",
        "VLLMChatModelSetup",
    },
    "flink_agents.integrations.chat_models.tongyi_chat_model": {
        "TongyiChatModelConnection",
        "TongyiChatModelSetup",
        "to_dashscope_messages",
    },
    "flink_agents.integrations.chat_models.bedrock.bedrock_chat_model": {
        "BedrockChatModelConnection",
        "BedrockChatModelSetup",
        "to_converse_messages",
        "to_tool_spec",
    },
    "flink_agents.integrations.chat_models.gemini.gemini_chat_model": {
        "GeminiChatModelConnection",
        "GeminiChatModelSetup",
        "to_gemini_contents",
    },
    "flink_agents.integrations.embedding_models.azure_openai_embedding_model": {
        "AzureOpenAIEmbeddingModelConnection",
        "AzureOpenAIEmbeddingModelSetup",
    },
    "flink_agents.integrations.embedding_models.bedrock_embedding_model": {
        "BedrockEmbeddingModelConnection",
        "BedrockEmbeddingModelSetup",
    },
    "flink_agents.integrations.embedding_models.gemini_embedding_model": {
        "GeminiEmbeddingModelConnection",
        "GeminiEmbeddingModelSetup",
    },
    "flink_agents.integrations.embedding_models.tongyi_embedding_model": {
        "TongyiEmbeddingModelConnection",
        "TongyiEmbeddingModelSetup",
    },
    "flink_agents.api.vector_stores.java_vector_store": {
        "JavaCollectionManageableVectorStore",
        "JavaVectorStore",
    },
    "flink_agents.integrations.vector_stores.qdrant.qdrant_vector_store": {
        "QdrantVectorStore",
        "to_qdrant_filter",
    },
    "flink_agents.integrations.vector_stores.milvus.milvus_vector_store": {
        "MilvusVectorStore",
        "to_milvus_expr",
    },
    "flink_agents.integrations.vector_stores.pgvector.pgvector_vector_store": {
        "PGVectorStore",
        "to_sql",
    },
    "flink_agents.integrations.vector_stores.elasticsearch.elasticsearch_vector_store": {
        "ElasticsearchVectorStore"
    },
    "flink_agents.integrations.vector_stores.elasticsearch.opensearch_vector_store": {
        "OpenSearchVectorStore"
    },
    "flink_agents.integrations.vector_stores.redis.redis_vector_store": {"RedisVectorStore"},
    "flink_agents.integrations.vector_stores.mem0.mem0_vector_store": {"Mem0VectorStore"},
}


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_public_names_are_pinned(module_name):
    module = importlib.import_module(module_name)
    defined = {
        name
        for name, obj in vars(module).items()
        if not name.startswith("_") and getattr(obj, "__module__", None) == module_name
    }
    assert defined == PUBLIC[module_name]


def test_error_handling_strategy_importable_from_react_agent():
    from flink_agents.api.agents.react_agent import ErrorHandlingStrategy
    from flink_agents.api.core_options import ErrorHandlingStrategy as Same

    assert ErrorHandlingStrategy is Same


def test_api_and_local_environment_work_without_pyflink():
    """With pyflink unimportable, the whole api imports and the local environment runs."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["pyflink"] = None  # any `import pyflink...` now raises ImportError
        sys.modules["pemja"] = None
        import pkgutil, importlib
        import flink_agents.api as api
        for info in pkgutil.walk_packages(api.__path__, "flink_agents.api."):
            importlib.import_module(info.name)
        import flink_agents.plan, flink_agents.runtime, flink_agents.testing
        from flink_agents.api.execution_environment import AgentsExecutionEnvironment
        from tests.runtime.agents import CounterAgent
        env = AgentsExecutionEnvironment.get_execution_environment()
        out = env.from_list([{"key": "k", "value": 1}, {"key": "k", "value": 2}])
        out = out.apply(CounterAgent()).to_list()
        env.execute()
        assert [o["k"]["count"] for o in out] == [1, 2], out
        assert not any(m.startswith("pyflink.") for m in sys.modules), "pyflink leaked in"
        print("OK")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "OK"


def test_errors_pickle_with_their_location():
    import pickle

    from flink_agents.errors import ActionError, ModelCallError, PlanValidationError

    err = ActionError("boom", key="k", action="a", event_id="e")
    again = pickle.loads(pickle.dumps(err))
    assert (again.key, again.action, again.event_id) == ("k", "a", "e")
    assert str(again) == str(err) == "boom [key='k', action='a', event=e]"
    m = pickle.loads(pickle.dumps(ModelCallError("slow", provider="openai", model="x", status=429)))
    assert m.status == 429 and "provider=openai, model=x, status=429: slow" in str(m)
    p = pickle.loads(pickle.dumps(PlanValidationError(["one", "two"])))
    assert p.problems == ["one", "two"] and "2 problem(s)" in str(p)


def test_beams_gcs_notice_does_not_reach_users():
    """Importing the package first keeps beam's "Failed to import GCSFileSystem" notice (our
    optional dependencies create ``google.cloud``) out of every job's stderr."""
    import subprocess
    import sys

    code = (
        "import logging, flink_agents; logging.basicConfig(); "
        "import apache_beam.io.filesystems; "
        "logging.getLogger('apache_beam.io.filesystems').warning('other beam warning')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "GCSFileSystem" not in proc.stderr
    assert "other beam warning" in proc.stderr  # only that notice is dropped
