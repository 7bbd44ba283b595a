"""Shared fixtures of the review agent's test suite (a user's suite: only the public
testing kit, whose pytest plugin pytest loads by itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from examples.workflow_single_agent import ProductReview

DATA = Path(__file__).resolve().parents[1] / "data" / "reviews.jsonl"


@pytest.fixture
def reviews() -> list[ProductReview]:
    """The eight sample reviews of the demo."""
    return [
        ProductReview.model_validate_json(line)
        for line in DATA.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
