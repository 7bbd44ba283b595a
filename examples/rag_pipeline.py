"""Built-in RAG on Flink: ingest a bounded document source into Chroma, exactly once per
document id, then answer questions with ``RAGAgent``, citing the documents used.

What it shows:

- the ingestion helper (:func:`~flink_agents.api.agents.rag_ingestion.ingest_documents`): a
  job over a bounded ``FileSource`` of JSON lines (``examples/data/flink_docs.jsonl``) that
  embeds each document and upserts it by id into a persistent Chroma directory, with
  checkpoints; with ``--reingest`` it runs twice over the same source and the store still
  holds each document once (the second run is what a restore's replay does, for every
  document);
- :class:`~flink_agents.api.agents.rag_agent.RAGAgent`: per question, the ``top_k``
  closest documents are retrieved and numbered in the prompt; the model answers citing
  them as ``[n]``; the output names the cited documents (``citations``) and all retrieved
  ones (``retrieved``);
- the hashing embedding (offline, deterministic: shared words make documents close; use
  ``OpenAIEmbeddingModelSetup`` or ``OllamaEmbeddingModelSetup`` for a real model).

Model: the **scripted model** (:func:`scripted_answer`, offline and deterministic): it
answers with the first sentence of the numbered document sharing the most words with the
question, and cites it; a real model gets the same prompt.

Run: ``python -m examples.rag_pipeline answers.jsonl [STORE_DIR] [--reingest]`` (a
MiniCluster; the store directory defaults to a temporary one).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from flink_agents.api.agents.rag_agent import RAGAgent
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.integrations.embedding_models.hashing_embedding_model import (
    STOP_WORDS,
    HashingEmbeddingModelConnection,
    HashingEmbeddingModelSetup,
)
from flink_agents.integrations.vector_stores.chroma.chroma_vector_store import ChromaVectorStore
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup

DOCUMENTS_FILE = Path(__file__).resolve().parent / "data" / "flink_docs.jsonl"
COLLECTION = "flink_docs"

#: The questions, and the document each answer must cite.
QUESTIONS = [
    ("How does Flink recover a failed job without losing data?", "checkpoints"),
    ("What lets event time windows close when events arrive out of order?", "watermarks"),
    ("Where does the RocksDB backend keep state?", "rocksdb"),
    ("What happens to sources when a downstream operator cannot keep up?", "backpressure"),
    ("How do I stop a job and resume it after upgrading its code?", "savepoints"),
]

_NUMBERED = re.compile(r"^\[(\d+)\] (.+)$", re.M)
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS}


def scripted_answer(messages: list[ChatMessage], tools: list[Any]) -> str:
    """Plays the LLM: the first sentence of the best numbered document, cited as ``[n]``."""
    prompt = messages[-1].content
    question = _words(prompt.rsplit("Question:", 1)[-1])
    documents = _NUMBERED.findall(prompt)
    if not documents:
        return "I do not know."
    number, text = max(documents, key=lambda d: (len(question & _words(d[1])), -int(d[0])))
    return f"{text.split('. ')[0].rstrip('.')} [{number}]."


def embedding() -> ResourceDescriptor:
    """The embedding model setup (its connection, ``hashing``, comes from the env)."""
    return ResourceDescriptor(clazz=HashingEmbeddingModelSetup, connection="hashing")


def vector_store(store_dir: str | Path) -> ResourceDescriptor:
    """The Chroma store in ``store_dir``."""
    return ResourceDescriptor(
        clazz=ChromaVectorStore, persist_directory=str(store_dir), collection=COLLECTION
    )


def rag_agent(store_dir: str | Path) -> RAGAgent:
    """The answering agent over the store in ``store_dir``."""
    agent = RAGAgent(
        embedding=embedding(),
        vector_store=vector_store(store_dir),
        chat_model=ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="scripted"),
        top_k=3,
        name="flink_docs_rag",
    )
    agent.add_resource(
        "scripted", ResourceDescriptor(clazz=ScriptedChatModelConnection, respond=scripted_answer)
    )
    return agent


def _agents_env(env: Any) -> Any:
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    agents_env = AgentsExecutionEnvironment.get_execution_environment(env)
    agents_env.add_resource("hashing", ResourceDescriptor(clazz=HashingEmbeddingModelConnection))
    return agents_env


def ingest(store_dir: str | Path, documents_file: str | Path = DOCUMENTS_FILE) -> list[str]:
    """The ingestion job over the JSON lines of ``documents_file``; the ids it wrote."""
    from pyflink.common import Types, WatermarkStrategy
    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import FileSource, StreamFormat

    from flink_agents.api.agents.rag_ingestion import ingest_documents

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.enable_checkpointing(500)  # a restore replays what came after the last one
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(documents_file)
    ).build()
    records = env.from_source(source, WatermarkStrategy.no_watermarks(), "documents").map(
        json.loads
    )
    ingested = ingest_documents(
        _agents_env(env), records, vector_store=vector_store(store_dir), embedding=embedding()
    )
    with ingested.map(json.dumps, output_type=Types.STRING()).execute_and_collect(
        "flink-agents rag ingestion"
    ) as results:
        return sorted(json.loads(r)["id"] for r in results)


def answer(store_dir: str | Path, questions: list[str]) -> list[dict[str, Any]]:
    """The answering job: one output per question (in question order)."""
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    stream = env.from_collection(questions, type_info=Types.STRING())
    answers = (
        _agents_env(env)
        .from_datastream(stream, key_selector=lambda q: q)
        .apply(rag_agent(store_dir))
        .to_datastream()
    )
    with answers.map(json.dumps, output_type=Types.STRING()).execute_and_collect(
        "flink-agents rag answers"
    ) as results:
        out = [json.loads(r) for r in results]
    order = {q: i for i, q in enumerate(questions)}
    return sorted(out, key=lambda o: order[o["question"]])


def stored_ids(store_dir: str | Path) -> list[str]:
    """The ids of the documents in the store (read with a client of this process)."""
    from flink_agents.integrations.vector_stores.chroma.chroma_vector_store import (
        ChromaVectorStore,
    )

    store = ChromaVectorStore(persist_directory=str(store_dir), collection=COLLECTION)
    try:
        return sorted(str(d.id) for d in store.get(limit=None))
    finally:
        store.close()


def main(
    output_path: str | Path, store_dir: str | Path | None = None, *, reingest: bool = False
) -> list[dict[str, Any]]:
    """Ingest (with ``reingest``, twice: the second run replays every document), answer,
    write the answers."""
    store_dir = store_dir or tempfile.mkdtemp(prefix="flink-agents-rag-")
    first = ingest(store_dir)
    again = f", again {len(ingest(store_dir))}" if reingest else ""
    in_store = stored_ids(store_dir)
    print(f"ingested {len(first)} documents{again}: {len(in_store)} in the store")
    answers = answer(store_dir, [q for q, _ in QUESTIONS])
    path = Path(output_path)
    path.write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
    for a in answers:
        cited = ", ".join(c["id"] for c in a["citations"])
        print(f"{a['question']}\n  {a['answer']}  (cites: {cited})")
    return answers


if __name__ == "__main__":
    # Run the importable copy: plans reference functions and classes by module name, and the
    # Flink workers can import ``examples.rag_pipeline`` but not this ``__main__`` script.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from examples.rag_pipeline import main as _main

    args = [a for a in sys.argv[1:] if a != "--reingest"]
    _main(
        args[0] if args else "rag_answers.jsonl",
        args[1] if len(args) > 1 else None,
        reingest="--reingest" in sys.argv[1:],
    )
