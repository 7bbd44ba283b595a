"""Agents written the way Apache Flink Agents' documentation writes them (quickstarts for
the workflow and the ReAct agent, the workflow agent guide's unified events, custom event
class and durable execution with a reconciler): the same imports, names and calls.

Importable, so that Flink's Python workers can load the actions. The model is an Ollama
setup (``ResourceName.ChatModel.OLLAMA_SETUP``) whose connection the tests point at a real
local HTTP server speaking Ollama's protocol (:func:`ollama_review_model`).
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar

from pydantic import BaseModel

from flink_agents.api.agents.agent import Agent
from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action, chat_model_setup, prompt, tool
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.events.event_type import EventType
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceName
from flink_agents.api.runner_context import RunnerContext

# -- custom types and resources (as the quickstart's custom_types_and_resources) -----------


class ProductReview(BaseModel):
    """A product review."""

    id: str
    review: str


class ProductReviewAnalysisRes(BaseModel):
    """Satisfaction score and reasons for dissatisfaction of one review."""

    id: str
    score: int
    reasons: list[str]


_SYSTEM = """
    Analyze the user review and determine a satisfaction score (1-5) and potential
    reasons for dissatisfaction. Answer with JSON such as
    {"id": "12345", "score": 1, "reasons": ["poor quality"]}
    If the review is unhappy with the shipping, notify the shipping manager first.
    """

review_analysis_prompt = Prompt.from_messages(
    messages=[
        ChatMessage(role=MessageRole.SYSTEM, content=_SYSTEM),
        ChatMessage(role=MessageRole.USER, content='"input": {input}'),
    ],
)

review_analysis_react_prompt = Prompt.from_messages(
    messages=[
        ChatMessage(role=MessageRole.SYSTEM, content=_SYSTEM),
        ChatMessage(role=MessageRole.USER, content='"id": {id}, "review": {review}'),
    ],
)


def notify_shipping_manager(id: str, review: str) -> None:
    """Notify the shipping manager when a product review complains about the shipping.

    Args:
        id: The id of the product whose review complains about the shipping.
        review: The review.
    """
    print(f"Transportation issue for product [{id}], the customer feedback: {review}")


def ollama_connection(base_url: str) -> ResourceDescriptor:
    """The quickstart's ``ollama_server`` connection, at ``base_url``."""
    return ResourceDescriptor(
        clazz=ResourceName.ChatModel.OLLAMA_CONNECTION, base_url=base_url, request_timeout=120
    )


# -- the workflow agent (quickstart) -------------------------------------------------------


class ReviewAnalysisAgent(Agent):
    """Scores a review with a model, which may call a tool first."""

    @prompt
    @staticmethod
    def review_analysis_prompt() -> Prompt:
        """Prompt for review analysis."""
        return review_analysis_prompt

    @tool
    @staticmethod
    def notify_shipping_manager(id: str, review: str) -> None:
        """Notify the shipping manager when a product review complains about the shipping.

        Args:
            id: The id of the product whose review complains about the shipping.
            review: The review.
        """
        notify_shipping_manager(id=id, review=review)

    @chat_model_setup
    @staticmethod
    def review_analysis_model() -> ResourceDescriptor:
        """Chat model for review analysis."""
        return ResourceDescriptor(
            clazz=ResourceName.ChatModel.OLLAMA_SETUP,
            connection="ollama_server",
            model="qwen3:8b",
            prompt="review_analysis_prompt",
            tools=["notify_shipping_manager"],
            extract_reasoning=True,
        )

    @action(EventType.InputEvent)
    @staticmethod
    def process_input(event: Event, ctx: RunnerContext) -> None:
        """Ask the model about the review."""
        input_event = InputEvent.from_event(event)
        input = ProductReview.model_validate(input_event.input)
        ctx.short_term_memory.set("id", input.id)
        content = f"""
            "id": {input.id},
            "review": {input.review}
        """
        msg = ChatMessage(role=MessageRole.USER)
        ctx.send_event(
            ChatRequestEvent(
                model="review_analysis_model",
                messages=[msg],
                prompt_args={"input": content},
            )
        )

    @action(EventType.ChatResponseEvent)
    @staticmethod
    def process_chat_response(event: Event, ctx: RunnerContext) -> None:
        """Turn the model's JSON answer into the result."""
        chat_response = ChatResponseEvent.from_event(event)
        json_content = json.loads(chat_response.response.content)
        ctx.send_event(
            OutputEvent(
                output=ProductReviewAnalysisRes(
                    id=ctx.short_term_memory.get("id"),
                    score=json_content["score"],
                    reasons=json_content["reasons"],
                )
            )
        )


# -- the ReAct agent (quickstart) ----------------------------------------------------------


def review_analysis_react_agent() -> ReActAgent:
    """The quickstart's ReAct agent; ``ollama_server`` and the tool come from the
    environment (``add_resource``)."""
    return ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=ResourceName.ChatModel.OLLAMA_SETUP,
            connection="ollama_server",
            model="qwen3:8b",
            tools=["notify_shipping_manager"],
        ),
        prompt=review_analysis_react_prompt,
        output_schema=ProductReviewAnalysisRes,
    )


# -- unified events, a custom event class, durable execution (workflow agent guide) ---------


class MyEvent(Event):
    """A custom event class as the guide defines one."""

    EVENT_TYPE: ClassVar[str] = "my_custom_event"

    def __init__(self, value: str) -> None:
        super().__init__(type=MyEvent.EVENT_TYPE, attributes={"value": value})

    @classmethod
    def from_event(cls, event: Event) -> MyEvent:
        assert "value" in event.attributes
        result = cls(value=event.attributes["value"])
        return result.reconstruct_from(event)

    @property
    def value(self) -> str:
        return self.get_attr("value")


def submit_payment(order_id: str) -> str:
    """Stands in for a payment service call."""
    return f"paid-{order_id}"


class UnifiedEventsAgent(Agent):
    """Passes data between actions with unified events and a custom event class."""

    @action(EventType.InputEvent)
    @staticmethod
    def create_my_event(event: Event, ctx: RunnerContext) -> None:
        review = ProductReview.model_validate(InputEvent.from_event(event).input)
        ctx.send_event(Event(type="my_event", attributes={"field1": review.id, "field2": 42}))

    @action("my_event")
    @staticmethod
    def handle_my_event(event: Event, ctx: RunnerContext) -> None:
        field1: str = event.get_attr("field1")
        field2: int = event.get_attr("field2")
        ctx.send_event(MyEvent(value=f"{field1}:{field2}"))

    @action(MyEvent.EVENT_TYPE)
    @staticmethod
    def handle_custom(event: Event, ctx: RunnerContext) -> None:
        my_event = MyEvent.from_event(event)

        def payment_reconciler() -> str:
            return f"reconciled-{my_event.value}"

        result = ctx.durable_execute(submit_payment, my_event.value, reconciler=payment_reconciler)
        ctx.send_event(
            OutputEvent(
                output={
                    "value": my_event.value,
                    "payment": result,
                    "greeting": ctx.config.get("compat.greeting"),
                }
            )
        )


# -- the model: replies of a real local HTTP server in Ollama's protocol ------------------

_ID = re.compile(r'"id":\s*"?([\w-]+)')


def ollama_review_model(body: dict[str, Any]) -> dict[str, Any]:
    """What a reasonable model answers to one ``/api/chat`` request: a tool call for a
    review that complains about the shipping (when the tool is offered and not called yet),
    else the JSON analysis. Returns the Ollama reply body."""
    from flink_agents.testing.servers import ollama_reply

    messages = body.get("messages") or []
    text = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
    review_id = (_ID.findall(text) or ["?"])[-1]
    unhappy = "broken" in text or "damaged" in text
    called = any(m.get("role") == "tool" for m in messages)
    if unhappy and body.get("tools") and not called:
        return ollama_reply(
            "", [("notify_shipping_manager", {"id": review_id, "review": "damaged in shipping"})]
        )
    answer = {
        "id": review_id,
        "score": 1 if unhappy else 5,
        "reasons": ["shipping damage"] if unhappy else [],
    }
    return ollama_reply(f"<think>scoring</think>{json.dumps(answer)}")


REVIEWS = [
    ProductReview(id="p1", review="Great headphones, lovely sound."),
    ProductReview(id="p2", review="The box arrived damaged and the cable was broken."),
]
