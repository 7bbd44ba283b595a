"""Redis vector store."""
