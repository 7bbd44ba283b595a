"""Vector store integrations."""
