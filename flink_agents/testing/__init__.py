"""The testing kit: what a user needs to test agents, and what our own tests use.

- Test doubles: :class:`ScriptedChatModelConnection` / :class:`ScriptedChatModelSetup`
  (replies and tool calls from a list or a function, latency, failures), ``tool_call``,
  ``reply_text``.
- :func:`run_agent`: an agent over a list of inputs in one call, locally or on a Flink
  MiniCluster (thread or process mode), optionally with a failure and a restart; returns
  an :class:`AgentRun` (outputs per key in input order, memory, event log, metrics, logs).
- :class:`Cassette` (``flink_agents.testing.cassette``): record model, embedding and tool
  calls once, replay them offline.
- Assertions (``flink_agents.testing.assertions``): per-key order, exactly-once, no
  repeated call, memory, secrets.
- Provider stand-ins (``flink_agents.testing.servers``): local HTTP servers speaking the
  OpenAI, Ollama and Anthropic protocols; free ports (``flink_agents.testing.ports``).
- MiniCluster building blocks (``flink_agents.testing.minicluster``) and a pytest plugin
  (``flink_agents.testing.pytest_plugin``, loaded by pytest automatically) with fixtures.

See ``docs/testing.md``. Importing this package needs no Flink; the Flink parts import
PyFlink when used.
"""

from flink_agents.testing._harness import RunCapture
from flink_agents.testing.assertions import (
    assert_exactly_once,
    assert_memory,
    assert_no_repeated_calls,
    assert_per_key_order,
    assert_secret_absent,
)
from flink_agents.testing.cassette import Cassette
from flink_agents.testing.event_log import EventLog, read_event_log
from flink_agents.testing.run import AgentRun, run_agent
from flink_agents.testing.scripted_chat_model import (
    ScriptedChatModelConnection,
    ScriptedChatModelSetup,
    reply_text,
    tool_call,
)

__all__ = [
    "AgentRun",
    "Cassette",
    "EventLog",
    "RunCapture",
    "ScriptedChatModelConnection",
    "ScriptedChatModelSetup",
    "assert_exactly_once",
    "assert_memory",
    "assert_no_repeated_calls",
    "assert_per_key_order",
    "assert_secret_absent",
    "read_event_log",
    "reply_text",
    "run_agent",
    "tool_call",
]
