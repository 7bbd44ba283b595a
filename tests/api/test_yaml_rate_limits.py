"""Rate limits as fields of a YAML connection: loaded, checked at their line, and paced."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from flink_agents.api.resource import ResourceType
from flink_agents.api.yaml.loader import build_agents
from flink_agents.errors import YamlError

CONNECTION = """
chat_model_connections:
  - name: llm
    clazz: openai
    api_base_url: http://127.0.0.1:9/v1
    requests_per_minute: {rpm}
    tokens_per_minute: 90000
    max_concurrent_requests: {concurrent}
embedding_model_connections:
  - name: emb
    clazz: ollama
    requests_per_minute: 120
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agents.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def test_limits_are_connection_fields(tmp_path: Path) -> None:
    built = build_agents(_write(tmp_path, CONNECTION.format(rpm=600, concurrent=4)))
    shared = built.shared_resources
    llm = shared[ResourceType.CHAT_MODEL_CONNECTION]["llm"]
    assert llm.arguments["requests_per_minute"] == 600
    assert llm.arguments["tokens_per_minute"] == 90000
    assert llm.arguments["max_concurrent_requests"] == 4
    emb = shared[ResourceType.EMBEDDING_MODEL_CONNECTION]["emb"]
    assert emb.arguments["requests_per_minute"] == 120
    conn = llm.clazz(**llm.arguments)
    assert conn.governor.declared_rate == pytest.approx(10.0) and conn.governor.cap == 4


def test_bad_limits_name_their_line(tmp_path: Path) -> None:
    path = _write(tmp_path, CONNECTION.format(rpm=0, concurrent="many"))
    with pytest.raises(YamlError) as info:
        build_agents(path)
    text = str(info.value)
    assert f"{path}:5:5: chat_model_connections[0].requests_per_minute: Input should be " in text
    assert "greater than 0" in text
    assert f"{path}:7:5: chat_model_connections[0].max_concurrent_requests" in text
