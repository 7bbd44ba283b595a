"""Chat model integrations."""
