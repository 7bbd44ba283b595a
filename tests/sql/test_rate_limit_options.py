"""Rate limits as SQL options of CREATE MODEL and CREATE CONNECTION (checked without a JVM)."""

from __future__ import annotations

import pytest

from flink_agents.errors import ConfigurationError
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
)
from flink_agents.sql.models import model_resources
from flink_agents.sql.options import check_connection_options

LIMITS = {
    "requests-per-minute": "600",
    "tokens-per-minute": "90000",
    "max-concurrent-requests": "8",
    "adaptive": "false",
}
ARGUMENTS = {
    "requests_per_minute": 600.0,
    "tokens_per_minute": 90000.0,
    "max_concurrent_requests": 8,
    "adaptive": False,
}


@pytest.mark.parametrize("provider", ["openai", "ollama", "anthropic"])
def test_model_options_become_connection_arguments(provider: str) -> None:
    options = {"provider": provider, "model": "m", "api-key": "sk-t", **LIMITS}
    if provider == "ollama":
        del options["api-key"]
    resources = model_resources("m", options)
    arguments = resources.connection.arguments
    assert {k: arguments[k] for k in ARGUMENTS} == ARGUMENTS
    # The connection class takes them (the plan builds it from these arguments).
    if provider == "openai":
        conn = OpenAIChatModelConnection(**arguments)
        assert conn.governor.declared_rate == pytest.approx(10.0)


def test_limits_on_a_catalog_connection_reach_its_models() -> None:
    check_connection_options({"type": "openai", "endpoint": "http://h/v1", **LIMITS})
    resources = model_resources(
        "gpt",
        {"provider": "openai", "connection": "llm", "model": "m", "requests-per-minute": "300"},
        {"type": "openai", "endpoint": "http://h/v1", **LIMITS},
    )
    # The model's own option wins over its connection's.
    assert resources.connection.arguments["requests_per_minute"] == 300.0
    assert resources.connection.arguments["tokens_per_minute"] == 90000.0


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("requests-per-minute", "0", "option 'requests-per-minute' = '0' must be >= 1"),
        ("tokens-per-minute", "lots", "option 'tokens-per-minute' = 'lots' must be a number"),
        (
            "max-concurrent-requests",
            "2.5",
            "option 'max-concurrent-requests' = '2.5' must be an integer",
        ),
        ("adaptive", "maybe", "option 'adaptive' = 'maybe' must be true or false"),
    ],
)
def test_bad_limit_values_are_clear_errors(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        model_resources("m", {"provider": "openai", key: value})
    assert message in str(info.value)
    with pytest.raises(ConfigurationError, match="must be"):
        check_connection_options({"type": "openai", key: value})


def test_local_and_scripted_models_take_no_limits() -> None:
    with pytest.raises(ConfigurationError, match="unknown option 'requests-per-minute'"):
        model_resources("l", {"provider": "local", "requests-per-minute": "60"})
