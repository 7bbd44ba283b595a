"""OpenAI and OpenAI-compatible chat models."""
