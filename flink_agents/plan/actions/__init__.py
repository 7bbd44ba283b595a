"""Built-in actions, part of every plan like user actions (one module each).

- :mod:`.chat_model_action` answers :class:`ChatRequestEvent`: it resolves the chat model
  setup (and through it the connection, prompt and tools), calls the model, and while the
  model asks for tools it sends a :class:`ToolRequestEvent` and continues on the matching
  :class:`ToolResponseEvent`, until the model answers (at most ``max-iterations`` calls).
  The final answer goes out as a :class:`ChatResponseEvent`.
- :mod:`.tool_call_action` runs the tool calls of a :class:`ToolRequestEvent`, only of the
  tools the model was offered for that request (:mod:`.tool_authorization`). An unknown
  tool, bad arguments or an exception in the tool become error responses the model sees.
- :mod:`.context_retrieval_action` queries a vector store.

Model calls go through :func:`~.calls.call_model` and tool calls through
:func:`~.calls.call_tool`, the one place each is made (:mod:`.calls`); what is sent to a
model carries no plan secret (:mod:`.secret_text`).

Plans name these functions by module (``flink_agents.plan.actions.chat_model_action``, as
upstream Apache Flink Agents does); plans compiled before this layout name
``flink_agents.plan.builtin_actions``, which ``ActionPlan`` maps here when it loads them.
"""

from __future__ import annotations

from typing import Any

from flink_agents.api.events.chat_event import ChatRequestEvent
from flink_agents.api.events.context_retrieval_event import ContextRetrievalRequestEvent
from flink_agents.api.events.tool_event import ToolRequestEvent, ToolResponseEvent
from flink_agents.plan.actions.chat_model_action import chat_model_action
from flink_agents.plan.actions.context_retrieval_action import context_retrieval_action
from flink_agents.plan.actions.tool_call_action import tool_call_action

#: name -> (listened event types, function)
BUILTIN_ACTIONS: dict[str, tuple[tuple[str, ...], Any]] = {
    "chat_model_action": (
        (ChatRequestEvent.EVENT_TYPE, ToolResponseEvent.EVENT_TYPE),
        chat_model_action,
    ),
    "tool_call_action": ((ToolRequestEvent.EVENT_TYPE,), tool_call_action),
    "context_retrieval_action": (
        (ContextRetrievalRequestEvent.EVENT_TYPE,),
        context_retrieval_action,
    ),
}
