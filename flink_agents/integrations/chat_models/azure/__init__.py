"""Azure OpenAI chat models."""
