"""Multi-agent pipeline on Flink: review analysis -> windowed aggregation -> suggestions.

What it shows, as one PyFlink job:

1. a bounded source of product reviews (with event timestamps),
2. **agent 1**, :class:`ReviewAnalysisAgent` (a custom agent: actions plus resources declared
   with ``@prompt`` / ``@chat_model_connection`` / ``@chat_model_setup``), keyed by product,
   turns each review into a :class:`ReviewAnalysis` (score 1-5 and complaint reasons),
3. a **Flink tumbling event-time window** (1 minute) per product over the analyses, computing
   the review count, the average score and the reasons with their counts
   (:class:`SummarizeWindow`),
4. **agent 2**, a ``ReActAgent`` with a pydantic ``output_schema``
   (:class:`ProductSuggestion`), turns each product window into improvement suggestions,
5. the suggestions are collected and written as JSON lines.

``AgentsExecutionEnvironment.get_execution_environment(env)`` wraps the PyFlink environment;
``from_datastream(...).apply(...).to_datastream()`` is used twice, with the window between.
Each agent output keeps its input's event time, and the window re-assigns timestamps and
watermarks from the analysis' ``ts`` field, so the window fires when its minute is over
(at the latest at the end of the bounded input).

Model: the **scripted model** (:mod:`flink_agents.testing`) for both agents, so the job runs
offline and its output is deterministic: :func:`scripted_analysis` scores by keywords,
:func:`scripted_suggestions` turns the most frequent reasons into suggestions.

Agents used by Flink jobs must live in importable modules: the workers import
``examples.multi_agent`` (the package root is put on the workers' path by the environment).

Run: ``python -m examples.multi_agent out.jsonl`` (MiniCluster in this process), or on a
cluster: ``flink-agents submit examples/multi_agent.py out.jsonl``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from flink_agents.api.agents.agent import Agent
from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.decorators import action, chat_model_connection, chat_model_setup, prompt
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

#: Window size of the per-product aggregation.
WINDOW_MS = 60_000


class Review(BaseModel):
    """An input record."""

    review_id: str
    product_id: str
    ts: int  # event time, epoch milliseconds
    text: str


class ReviewAnalysis(BaseModel):
    """Output of agent 1."""

    review_id: str
    product_id: str
    ts: int
    score: int
    reasons: list[str]


class ProductSuggestion(BaseModel):
    """Output of agent 2 (the ReActAgent's ``output_schema``)."""

    product_id: str
    window_start: int
    review_count: int
    average_score: float
    suggestions: list[str]


# -- agent 1: review analysis ----------------------------------------------------------------

_COMPLAINTS = {
    "broken": "arrived broken",
    "damaged": "arrived broken",
    "loud": "too noisy",
    "noisy": "too noisy",
    "leak": "leaks",
    "expensive": "too expensive",
    "slow": "slow delivery",
}


def scripted_analysis(messages: list[ChatMessage], tools: list[Any]) -> str:
    """Scripted stand-in for the analysis LLM: keyword score and reasons, as JSON."""
    review = json.loads(messages[-1].content)
    text = review["text"].lower()
    reasons = sorted({reason for word, reason in _COMPLAINTS.items() if word in text})
    praise = any(word in text for word in ("great", "love", "excellent", "perfect"))
    score = max(1, (5 if praise else 4) - 2 * len(reasons))
    return json.dumps({"score": score, "reasons": reasons})


class ReviewAnalysisAgent(Agent):
    """Scores a review 1-5 and lists complaint reasons (resources declared by decorators)."""

    @prompt
    @staticmethod
    def analysis_prompt() -> Prompt:
        """Instructions for a real model (the scripted one ignores them)."""
        return Prompt.from_messages(
            [
                ChatMessage(
                    role=MessageRole.SYSTEM,
                    content="Rate the review 1-5 and list complaint reasons. Answer JSON: "
                    '{"score": <1-5>, "reasons": ["..."]}',
                ),
                ChatMessage(role=MessageRole.USER, content="{input}"),
            ]
        )

    @chat_model_connection
    @staticmethod
    def analysis_connection() -> ResourceDescriptor:
        """The scripted model (swap in e.g. an OpenAI or Ollama connection)."""
        return ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond=scripted_analysis, name="analysis"
        )

    @chat_model_setup
    @staticmethod
    def analysis_model() -> ResourceDescriptor:
        """Connection + prompt."""
        return ResourceDescriptor(
            clazz=ScriptedChatModelSetup,
            connection="analysis_connection",
            prompt="analysis_prompt",
        )

    @action(InputEvent)
    @staticmethod
    def analyze(event: InputEvent, ctx: RunnerContext) -> None:
        """Keep the review in sensory memory (this run only) and ask the model."""
        review = event.input
        if isinstance(review, dict):
            review = Review.model_validate(review)
        ctx.sensory_memory.set("review", review.model_dump(mode="json"))
        content = json.dumps({"review_id": review.review_id, "text": review.text})
        ctx.send_event(
            ChatRequestEvent(
                model="analysis_model",
                messages=[ChatMessage(role=MessageRole.USER)],
                prompt_args={"input": content},
            )
        )

    @action(ChatResponseEvent)
    @staticmethod
    def emit(event: ChatResponseEvent, ctx: RunnerContext) -> None:
        """The model's JSON answer plus the review's ids and time."""
        answer = json.loads(event.response.content)
        review = ctx.sensory_memory.get("review")
        ctx.send_event(
            OutputEvent(
                output=ReviewAnalysis(
                    review_id=review["review_id"],
                    product_id=review["product_id"],
                    ts=review["ts"],
                    score=int(answer["score"]),
                    reasons=[str(r) for r in answer["reasons"]],
                )
            )
        )


# -- the window between the agents -----------------------------------------------------------


def summarize(product_id: str, start: int, analyses: Iterable[ReviewAnalysis]) -> dict[str, Any]:
    """Aggregate one product's analyses of one window (count, average score, reasons)."""
    items = list(analyses)
    reasons = Counter(r for a in items for r in a.reasons)
    return {
        "product_id": product_id,
        "window_start": start,
        "review_count": len(items),
        "average_score": round(sum(a.score for a in items) / len(items), 2),
        "reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        "review_ids": sorted(a.review_id for a in items),
    }


# -- agent 2: product suggestions ------------------------------------------------------------

_FIXES = {
    "arrived broken": "improve the packaging",
    "too noisy": "add sound insulation",
    "leaks": "redesign the lid seal",
    "too expensive": "offer a cheaper model",
    "slow delivery": "use a faster carrier",
}


def scripted_suggestions(messages: list[ChatMessage], tools: list[Any]) -> str:
    """Scripted stand-in for the suggestion LLM: one fix per reason, most frequent first."""
    user = next(m.content for m in reversed(messages) if m.role is MessageRole.USER)
    summary = json.loads(user[user.index("{") :])
    suggestions = [_FIXES.get(reason, f"look into: {reason}") for reason in summary["reasons"]]
    return json.dumps(
        {
            "product_id": summary["product_id"],
            "window_start": summary["window_start"],
            "review_count": summary["review_count"],
            "average_score": summary["average_score"],
            "suggestions": suggestions or ["keep it up"],
        }
    )


def suggestion_agent() -> ReActAgent:
    """Agent 2: a ReActAgent answering in :class:`ProductSuggestion`."""
    agent = ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="suggestion_connection"
        ),
        prompt=Prompt.from_text(
            "Suggest product improvements for {product_id} from this window summary: {input}"
        ),
        output_schema=ProductSuggestion,
    )
    agent.add_resource(
        "suggestion_connection",
        ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond=scripted_suggestions, name="suggestion"
        ),
    )
    return agent


# -- the job ---------------------------------------------------------------------------------


def sample_reviews() -> list[Review]:
    """Reviews of three products over two minutes (window 0 and window 1)."""
    texts = [
        ("blender", 5_000, "Great blender, I love it"),
        ("blender", 12_000, "It arrived broken, box damaged"),
        ("blender", 30_000, "Loud but works"),
        ("kettle", 8_000, "Perfect kettle"),
        ("kettle", 20_000, "The lid leaks and it is expensive"),
        ("toaster", 40_000, "Slow delivery, toaster is loud"),
        ("blender", 65_000, "Too loud, noisy motor"),
        ("kettle", 70_000, "Excellent, great design"),
        ("kettle", 95_000, "Arrived damaged"),
    ]
    return [
        Review(review_id=f"r{i}", product_id=product, ts=ts, text=text)
        for i, (product, ts, text) in enumerate(texts, start=1)
    ]


def build_pipeline(env: Any, reviews: list[Review]) -> Any:
    """The job graph over the PyFlink ``env``; returns the suggestions stream (JSON strings)."""
    from pyflink.common import Duration, Time, Types, WatermarkStrategy
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream.functions import ProcessWindowFunction
    from pyflink.datastream.window import TumblingEventTimeWindows

    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    class TsField(TimestampAssigner):
        def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
            return int(value["ts"] if isinstance(value, dict) else value.ts)

    class SummarizeWindow(ProcessWindowFunction):
        def process(self, key: str, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
            yield summarize(key, context.window().start, elements)

    def event_time() -> WatermarkStrategy:
        return WatermarkStrategy.for_bounded_out_of_orderness(
            Duration.of_seconds(5)
        ).with_timestamp_assigner(TsField())

    agents_env = AgentsExecutionEnvironment.get_execution_environment(env)
    source = (
        env.from_collection([r.model_dump_json() for r in reviews], type_info=Types.STRING())
        .map(json.loads, output_type=Types.PICKLED_BYTE_ARRAY())
        .assign_timestamps_and_watermarks(event_time())
    )
    analyses = (
        agents_env.from_datastream(source, key_selector=lambda r: r["product_id"])
        .apply(ReviewAnalysisAgent())
        .to_datastream()
    )
    windows = (
        analyses.assign_timestamps_and_watermarks(event_time())
        .key_by(lambda a: a.product_id, key_type=Types.STRING())
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .process(SummarizeWindow(), output_type=Types.PICKLED_BYTE_ARRAY())
        .name("per-product-window")
    )
    suggestions = (
        agents_env.from_datastream(windows, key_selector=lambda w: w["product_id"])
        .apply(suggestion_agent())
        .to_datastream()
    )
    return suggestions.map(lambda s: s.model_dump_json(), output_type=Types.STRING())


def main(output_path: str | Path, *, parallelism: int = 1) -> list[dict[str, Any]]:
    """Run the job over :func:`sample_reviews`; write the suggestions as JSON lines.

    Args:
        output_path: the JSONL file to write (sorted by product and window).
        parallelism: the job's parallelism.

    Returns:
        The suggestions written.
    """
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    stream = build_pipeline(env, sample_reviews())
    with stream.execute_and_collect("flink-agents multi-agent example") as results:
        rows = [json.loads(r) for r in results]
    rows.sort(key=lambda s: (s["product_id"], s["window_start"]))
    path = Path(output_path)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for row in rows:
        print(row)
    return rows


if __name__ == "__main__":
    # Run the importable copy: plans reference actions and classes by module name, and the
    # Flink workers can import ``examples.multi_agent`` but not this ``__main__`` script.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from examples.multi_agent import main as _main

    _main(sys.argv[1] if len(sys.argv) > 1 else "multi_agent_output.jsonl")
