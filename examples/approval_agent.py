"""Human approval in a stream: a ReActAgent whose refund tool needs a reviewer's decision.

What it shows:

- ``FunctionTool.from_callable(issue_refund, requires_approval=True)`` (``@tool(
  requires_approval=True)`` on a workflow agent): the run does not call the tool, it pauses
  and the agent emits an :class:`~flink_agents.api.approval.ApprovalRequest` (request id,
  key, tool name, arguments, deadline) as an output;
- a reviewer answering with ``request.approve()``, ``request.approve(edited_arguments)`` or
  ``request.reject(reason)``; the :class:`~flink_agents.api.approval.ApprovalResponse` goes
  into the agent's input under the request's key and the run resumes where it paused (the
  model call before the pause is not made again);
- a second input of a paused key waits behind the paused run; other keys go on;
- the local host as a session (:class:`~flink_agents.runtime.local.runner.LocalRunner`):
  batch after batch, like a stream. On Flink, route outputs by type (``isinstance(output,
  ApprovalRequest)``) to the reviewers, and union their responses into the agent's input.

Model: the scripted model of :mod:`flink_agents.testing` (offline): it asks for a refund of
the amount in the ticket, then reports the tool's result (or the rejection) as its answer.

Run: ``python -m examples.approval_agent``.
"""

from __future__ import annotations

import re
from typing import Any

from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.approval import ApprovalRequest, ApprovalResponse
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.local.runner import LocalRunner
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup, tool_call

#: Refunds actually issued (the "payment system").
ISSUED: list[tuple[str, float]] = []


def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order.

    Args:
        order_id: the order to refund.
        amount: the amount in EUR.
    """
    ISSUED.append((order_id, amount))
    return f"refunded {amount:g} EUR on {order_id}"


def scripted_refund_model(messages: list[ChatMessage], tools: list[Any]) -> Any:
    """A stand-in for an LLM: ask for the refund the ticket names, then report the result."""
    last = messages[-1]
    if last.role is MessageRole.TOOL:
        return f"Done: {last.content}"
    order = re.search(r"[A-Z]-\d+", last.content or "")
    amount = re.search(r"(\d+) EUR", last.content or "")
    if order is None or amount is None:
        return "Please tell me the order and the amount."
    return tool_call("issue_refund", order_id=order.group(0), amount=float(amount.group(1)))


def build_agent() -> ReActAgent:
    """The support agent; its ``issue_refund`` tool needs approval."""
    agent = ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="refund_model", tools=["issue_refund"]
        ),
        prompt=Prompt.from_text("Handle this refund request: {text}"),
    )
    agent.add_resource(
        "issue_refund", FunctionTool.from_callable(issue_refund, requires_approval=True)
    )
    agent.add_resource(
        "refund_model",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection,
            respond=scripted_refund_model,
            name="refund-model",
        ),
    )
    return agent


def review(request: ApprovalRequest) -> ApprovalResponse:
    """The human reviewer's policy: small refunds pass, large ones are capped at 100 EUR,
    refunds of unknown orders are rejected."""
    amount = request.arguments["amount"]
    if not request.arguments["order_id"].startswith("A-"):
        return request.reject("unknown order")
    if amount > 100:
        return request.approve({**request.arguments, "amount": 100.0})
    return request.approve()


def main() -> list[tuple[Any, Any]]:
    """Two batches: the tickets (which pause), then the reviewer's responses. Returns
    ``(key, output)`` pairs in the order they came out."""
    tickets = [
        ("ann", {"text": "Refund 30 EUR on order A-1001, it arrived broken."}),
        ("bob", {"text": "I want 250 EUR back for order A-1002."}),
        ("cid", {"text": "Refund 20 EUR on order Z-9."}),
        ("ann", {"text": "Also refund 5 EUR on order A-1004."}),  # waits behind ann's first
    ]
    seen: list[tuple[Any, Any]] = []
    plan = AgentPlan.from_agent(build_agent(), {"approval.timeout": 3600})
    with LocalRunner(plan) as runner:
        pending = tickets
        while pending:
            results = runner.run(pending)
            outputs = [(r.key, out) for r in results for out in r.outputs]
            seen.extend(outputs)
            for key, out in outputs:
                print(f"{key}: {out!r}")
            # The reviewers answer every request that came out; their responses are the
            # next inputs (on Flink: a stream unioned into the agent's input).
            pending = [
                (out.key, review(out)) for _, out in outputs if isinstance(out, ApprovalRequest)
            ]
    return seen


if __name__ == "__main__":
    main()
