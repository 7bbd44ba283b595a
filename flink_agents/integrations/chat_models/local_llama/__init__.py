"""A real local LLM (llama.cpp running a small GGUF model) as a chat model.

Importable without ``llama_cpp``: it is imported when the model is first used. Install it
with ``pip install 'flink-agents-py[local-llm]'`` and fetch the model with ``make model``.
"""

from flink_agents.integrations.chat_models.local_llama.local_llama_chat_model import (
    LocalLlamaChatModelConnection,
    LocalLlamaChatModelSetup,
)
from flink_agents.integrations.chat_models.local_llama.model_store import (
    ModelStoreError,
    default_model_path,
    ensure_local_model,
)

__all__ = [
    "LocalLlamaChatModelConnection",
    "LocalLlamaChatModelSetup",
    "ModelStoreError",
    "default_model_path",
    "ensure_local_model",
]
