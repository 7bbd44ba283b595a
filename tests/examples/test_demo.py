"""The demo's agent on a MiniCluster against the real local LLM (and the scripted model)."""

from __future__ import annotations

import importlib.util

import pytest

from examples import review_analysis_demo


def _local_model_missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (run `make model`)"
    from flink_agents.integrations.chat_models.local_llama import default_model_path

    if not default_model_path().is_file():
        return f"the local model file {default_model_path()} is not installed (run `make model`)"
    return None


@pytest.mark.flink
@pytest.mark.llm
def test_demo_agent_with_the_real_local_model_on_three_reviews():
    missing = _local_model_missing()
    if missing:
        pytest.skip(missing)
    results = review_analysis_demo.run("local", limit=3)
    assert sorted(r["id"] for r in results) == ["r01", "r02", "r03"]
    for result in results:
        assert 1 <= result["score"] <= 5, result
        assert isinstance(result["reasons"], list), result
        assert all(isinstance(reason, str) for reason in result["reasons"]), result


@pytest.mark.flink
def test_demo_job_with_the_scripted_model():
    results = {r["id"]: r for r in review_analysis_demo.run("scripted")}
    assert len(results) == 8
    assert results["r02"]["score"] == 1 and results["r02"]["reasons"] == ["damaged in shipping"]
    assert results["r01"] == {"id": "r01", "score": 5, "reasons": []}
