"""Embedding model integrations."""
