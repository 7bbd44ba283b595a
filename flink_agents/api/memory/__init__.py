"""Long-term memory: memory sets of text items with semantic search, kept across runs."""
