"""Anthropic Messages API chat models."""
