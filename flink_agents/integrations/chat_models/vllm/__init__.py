"""vLLM chat models (OpenAI-compatible)."""
