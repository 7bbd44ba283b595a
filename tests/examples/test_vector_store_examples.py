"""The RAG and long-term-memory example on Qdrant embedded (local mode) and Milvus Lite:
documents and memories are written to the store's files, answered from them, and memories
told in one run are recalled by a later run with fresh resources; the script runs with
``python -m`` too."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from examples import vector_store_agents as example
from examples.rag_agent import DOCUMENTS

REPO = Path(__file__).resolve().parents[2]
_MODULES = {"qdrant": ("qdrant_client",), "milvus": ("pymilvus", "milvus_lite")}


def _store(name: str) -> object:
    missing = [m for m in (*_MODULES[name], "mem0") if importlib.util.find_spec(m) is None]
    marks = [pytest.mark.skip(reason=f"needs {missing} (extras {name}, mem0)")] if missing else []
    return pytest.param(name, marks=marks)


STORES = pytest.mark.parametrize("store", [_store("qdrant"), _store("milvus")])


@STORES
def test_rag_answers_from_the_embedded_store(store: str, tmp_path: Path):
    ids = example.load_documents(store, tmp_path)
    assert ids == [d["id"] for d in DOCUMENTS]
    assert any(tmp_path.iterdir())  # the store's files
    out = {k: v for o in example.run_rag(store, tmp_path) for k, v in o.items()}
    assert out[0]["sources"][0] == "flink-docs/checkpointing"
    assert out[1]["sources"][0] == "flink-docs/event-time"
    assert out[2]["answer"].startswith("The RocksDB state backend keeps state on local disk")
    assert out[2]["answer"].endswith("[flink-docs/state-backends]")


@STORES
def test_long_term_memory_persists_in_the_store(store: str, tmp_path: Path):
    told = example.run_memory(store, tmp_path, example.TELL)
    assert told == [{"user": t["user"], "stored": True} for t in example.TELL]
    # a new environment: memories come back from the files, per user
    recalled = example.run_memory(store, tmp_path, example.ASK)
    assert {r["user"]: r["recalled"] for r in recalled} == {
        "alice": ["Alice lives in Lisbon"],
        "bob": ["Bob prefers tea over coffee"],
    }
    asked = example.run_memory(store, tmp_path, [{"user": "alice", "ask": "Alice works on what?"}])
    assert asked == [{"user": "alice", "recalled": ["Alice works on stream processing"]}]


@pytest.mark.parametrize("store", [_store("qdrant")])
def test_the_script_runs(store: str, tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "examples.vector_store_agents", "--store", store]
        + ["--data-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout[done.stdout.index("{") :])
    assert len(results["rag"]) == 3 and len(results["recalled"]) == 2
