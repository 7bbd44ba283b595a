"""Vector stores through mem0's vector store factory."""
