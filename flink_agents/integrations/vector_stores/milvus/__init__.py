"""Milvus vector store (Milvus Lite or a server)."""
