"""Integrations: chat models, embeddings, vector stores and MCP."""
