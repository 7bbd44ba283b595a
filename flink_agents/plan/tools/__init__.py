"""Built-in tools the plan adds to agents (the ``bash`` tool of skills)."""
