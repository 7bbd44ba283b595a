"""The functions Apache Flink Agents' YAML end-to-end tests point their ``function:`` keys at
(its ``e2e_tests_integration/yaml_test_actions.py``, 0.3.1), written the same way: the same
imports, names and calls. Its pyflink ``KeySelector`` class is left out (the tests key by
``id`` with a function), so that this module imports without pyflink.
"""

from __future__ import annotations

from pydantic import BaseModel

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext


class YamlChatInput(BaseModel):
    """Input record: a question routed to a chat model."""

    id: int
    text: str


class YamlChatOutput(BaseModel):
    """Output record: the chat model's textual answer."""

    id: int
    answer: str


def add(a: int, b: int) -> int:
    """Calculate the sum of a and b.

    Parameters
    ----------
    a : int
        The first operand
    b : int
        The second operand

    Returns:
    -------
    int:
        The sum of a and b
    """
    return a + b


def process_input(event: Event, ctx: RunnerContext) -> None:
    """Route the text to the math model (which has the ``add`` tool) or the creative one."""
    data = YamlChatInput.model_validate(InputEvent.from_event(event).input)
    ctx.short_term_memory.set("input_id", data.id)
    lower = data.text.lower()
    model_name = (
        "math_chat_model" if ("calculate" in lower or "sum" in lower) else "creative_chat_model"
    )
    ctx.send_event(
        ChatRequestEvent(
            model=model_name,
            messages=[ChatMessage(role=MessageRole.USER, content=data.text)],
        )
    )


def chat_request(event: Event, ctx: RunnerContext) -> None:
    """Send the input text to the agent's own ``chat_model``."""
    data = YamlChatInput.model_validate(InputEvent.from_event(event).input)
    ctx.short_term_memory.set("input_id", data.id)
    ctx.send_event(
        ChatRequestEvent(
            model="chat_model",
            messages=[ChatMessage(role=MessageRole.USER, content=data.text)],
        )
    )


def process_chat_response(event: Event, ctx: RunnerContext) -> None:
    """Emit the model's text response, tagged with the original input id."""
    chat_response = ChatResponseEvent.from_event(event)
    response = chat_response.response
    if not response or not response.content:
        return
    input_id = ctx.short_term_memory.get("input_id")
    ctx.send_event(OutputEvent(output=YamlChatOutput(id=input_id, answer=response.content)))


def commentary_request(event: Event, ctx: RunnerContext) -> None:
    """Stage 2: ask a second model to restate the upstream answer."""
    data = YamlChatOutput.model_validate(InputEvent.from_event(event).input)
    ctx.short_term_memory.set("input_id", data.id)
    ctx.send_event(
        ChatRequestEvent(
            model="chat_model",
            messages=[
                ChatMessage(
                    role=MessageRole.USER,
                    content=(
                        "Here is a math answer from another assistant: "
                        f"{data.answer!r}. Reply with the numeric result only."
                    ),
                )
            ],
        )
    )
