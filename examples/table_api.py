"""Table API in and out: an agent between two SQL tables.

What it shows:

- ``from_table(table, key_selector=...)``: the input is a Flink ``Table`` (here made with
  SQL ``VALUES``); each record reaches the agent as a ``Row`` whose fields fill the prompt's
  ``{placeholders}``,
- a ``ReActAgent`` whose ``output_schema`` is a ``RowTypeInfo`` (no pydantic class): the
  model's JSON answer is checked field by field and becomes a ``Row``,
- ``to_table(schema, output_type)``: the outputs as a ``Table`` with a declared schema,
  registered as a view and queried with SQL (only the unhappy reviews are kept).

Model: the **scripted model** (:func:`scripted_triage`, offline and deterministic: a keyword
score), so the output of the job is known in advance.

Run: ``python -m examples.table_api out.jsonl``, or on a cluster:
``flink-agents submit examples/table_api.py out.jsonl``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

#: The input table, as SQL rows (review_id, product, text).
REVIEWS = [
    ("r1", "blender", "Great blender, love it"),
    ("r2", "blender", "Broken on arrival, very disappointed"),
    ("r3", "kettle", "Does the job"),
    ("r4", "kettle", "Terrible, it leaks everywhere"),
    ("r5", "toaster", "Excellent toaster"),
]

#: Reviews scoring at most this are "unhappy" and kept by the SQL query.
UNHAPPY = 2
#: The columns of the result table (the query selects them; PyFlink 1.20 and 2.0 have no
#: ``Table.get_resolved_schema`` to ask).
COLUMNS = ("review_id", "score", "label")


def scripted_triage(messages: list[ChatMessage], tools: list[Any]) -> str:
    """Scripted stand-in for an LLM: a keyword score and label, as JSON."""
    user = next(m.content for m in reversed(messages) if m.role is MessageRole.USER)
    review = json.loads(user[user.index("{") :])
    text = review["text"].lower()
    if any(w in text for w in ("broken", "terrible", "disappointed")):
        score, label = 1, "complaint"
    elif any(w in text for w in ("great", "excellent", "love")):
        score, label = 5, "praise"
    else:
        score, label = 3, "neutral"
    return json.dumps({"review_id": review["review_id"], "score": score, "label": label})


def output_row_type() -> Any:
    """The agent's output type: a named row (used as ``output_schema`` and ``output_type``)."""
    from pyflink.common import Types

    return Types.ROW_NAMED(
        ["review_id", "score", "label"], [Types.STRING(), Types.INT(), Types.STRING()]
    )


def triage_agent() -> ReActAgent:
    """A ReActAgent answering in the row type of :func:`output_row_type`."""
    agent = ReActAgent(
        chat_model=ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="triage_conn"),
        prompt=Prompt.from_text("Score this review of a {product} from 1 to 5: {input}"),
        output_schema=output_row_type(),
    )
    agent.add_resource(
        "triage_conn",
        ResourceDescriptor(clazz=ScriptedChatModelConnection, respond=scripted_triage),
    )
    return agent


def product_of(row: Any) -> str:
    """Key selector: the review's product (runs of one product keep their order)."""
    return str(row["product"])


def build_pipeline(env: Any) -> Any:
    """The job over the PyFlink ``env``; returns the result ``Table`` (unhappy reviews)."""
    from pyflink.table import DataTypes, Schema, StreamTableEnvironment

    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    t_env = StreamTableEnvironment.create(env)
    agents_env = AgentsExecutionEnvironment.get_execution_environment(env, t_env)
    reviews = t_env.from_elements(
        REVIEWS,
        DataTypes.ROW(
            [
                DataTypes.FIELD("review_id", DataTypes.STRING()),
                DataTypes.FIELD("product", DataTypes.STRING()),
                DataTypes.FIELD("text", DataTypes.STRING()),
            ]
        ),
    )
    scored = (
        agents_env.from_table(reviews, key_selector=product_of)
        .apply(triage_agent())
        .to_table(
            schema=Schema.new_builder()
            .column("review_id", DataTypes.STRING())
            .column("score", DataTypes.INT())
            .column("label", DataTypes.STRING())
            .build(),
            output_type=output_row_type(),
        )
    )
    t_env.create_temporary_view("scored_reviews", scored)
    return t_env.sql_query(
        f"SELECT {', '.join(COLUMNS)} FROM scored_reviews WHERE score <= {UNHAPPY}"
    )


def main(output_path: str | Path, *, parallelism: int = 1) -> list[dict[str, Any]]:
    """Run the job; write the unhappy reviews as JSON lines (sorted by review id).

    Args:
        output_path: the JSONL file to write.
        parallelism: the job's parallelism.

    Returns:
        The rows written, as dicts.
    """
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    table = build_pipeline(env)
    with table.execute().collect() as results:
        rows = [dict(zip(COLUMNS, list(row), strict=True)) for row in results]
    rows.sort(key=lambda r: r["review_id"])
    Path(output_path).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for row in rows:
        print(row)
    return rows


if __name__ == "__main__":
    # Run the importable copy: the Flink workers import ``examples.table_api``, not this
    # ``__main__`` script.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from examples.table_api import main as _main

    _main(sys.argv[1] if len(sys.argv) > 1 else "table_api_output.jsonl")
