"""The RAG pipeline example as a script (its own MiniCluster): the ingestion job over a
bounded source leaves each document once in Chroma, and every answer cites the document it
should. (Two jobs: a replay of every document, ``--reingest``, is what
tests/api/test_rag_flink.py's restore covers.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from examples.rag_pipeline import DOCUMENTS_FILE, QUESTIONS, stored_ids

pytestmark = pytest.mark.flink

REPO = Path(__file__).resolve().parents[2]


def test_rag_pipeline_ingests_once_and_answers_with_citations(tmp_path: Path) -> None:
    output, store = tmp_path / "answers.jsonl", tmp_path / "chroma"
    proc = subprocess.run(
        [sys.executable, "-m", "examples.rag_pipeline", str(output), str(store)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    documents = [json.loads(line) for line in DOCUMENTS_FILE.read_text().splitlines()]
    assert "ingested 8 documents: 8 in the store" in proc.stdout
    assert stored_ids(store) == sorted(d["id"] for d in documents)
    answers = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [a["question"] for a in answers] == [q for q, _ in QUESTIONS]
    contents = {d["id"]: d["content"] for d in documents}
    for (_, expected), answer in zip(QUESTIONS, answers, strict=True):
        assert [c["id"] for c in answer["citations"]] == [expected], answer
        assert answer["answer"].startswith(contents[expected].split(". ")[0].rstrip("."))
        assert expected in answer["retrieved"] and len(answer["retrieved"]) == 3
