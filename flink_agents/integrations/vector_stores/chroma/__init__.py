"""Chroma vector store (extra ``chroma``)."""
