"""Test doubles shipped to users: scripted chat models with optional latency."""

from flink_agents.testing.scripted_chat_model import (
    ScriptedChatModelConnection,
    ScriptedChatModelSetup,
    reply_text,
    tool_call,
)

__all__ = [
    "ScriptedChatModelConnection",
    "ScriptedChatModelSetup",
    "reply_text",
    "tool_call",
]
