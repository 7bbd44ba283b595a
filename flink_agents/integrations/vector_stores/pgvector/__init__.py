"""PostgreSQL + pgvector vector store."""
