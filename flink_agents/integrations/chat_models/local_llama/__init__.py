"""A real local LLM (llama.cpp running a small GGUF model) as a chat model.

Importable without ``llama_cpp``: it is imported when the model is first used. Install it
with ``pip install 'flink-agents-py[local-llm]'`` and fetch the model with ``make model``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flink_agents.integrations.chat_models.local_llama.local_llama_chat_model import (
        LocalLlamaChatModelConnection,
        LocalLlamaChatModelSetup,
    )
    from flink_agents.integrations.chat_models.local_llama.model_store import (
        ModelStoreError,
        default_model_path,
        ensure_local_model,
    )

_EXPORTS = {
    "LocalLlamaChatModelConnection": "local_llama_chat_model",
    "LocalLlamaChatModelSetup": "local_llama_chat_model",
    "ModelStoreError": "model_store",
    "default_model_path": "model_store",
    "ensure_local_model": "model_store",
}

__all__ = [
    "LocalLlamaChatModelConnection",
    "LocalLlamaChatModelSetup",
    "ModelStoreError",
    "default_model_path",
    "ensure_local_model",
]


def __getattr__(name: str) -> Any:
    # Lazy, so that `python -m ...local_llama.model_store` runs the module once, cleanly.
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module = importlib.import_module(f"{__name__}.{_EXPORTS[name]}")
    return getattr(module, name)
