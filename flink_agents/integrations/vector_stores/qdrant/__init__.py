"""Qdrant vector store."""
