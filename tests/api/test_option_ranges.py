"""Every option has a checked range, and option keys match one way everywhere."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from flink_agents.api import core_options
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.errors import ConfigurationError

_OURS = """
import json
from flink_agents.api import core_options
core_options._import_option_modules()
print(json.dumps(sorted(
    k for k, o in core_options._OPTIONS.items()
    if o.config_type in (int, float) and o.alias_of is None
)))
"""


def _numeric_keys() -> list[str]:
    """The numeric options of this package (a fresh process: tests register options of
    their own in this one)."""
    out = subprocess.run(
        [sys.executable, "-c", _OURS], capture_output=True, text=True, check=True, timeout=120
    )
    keys: list[str] = json.loads(out.stdout)
    return keys


def _numeric_options() -> list[core_options.ConfigOption[Any]]:
    core_options._import_option_modules()
    return [core_options._OPTIONS[k] for k in _numeric_keys()]


def test_every_numeric_option_has_a_range_check() -> None:
    unchecked = sorted(o.key for o in _numeric_options() if o.check is None)
    assert not unchecked, f"options without a range check: {unchecked}"


BAD = [
    ("event-log.rotation.max-file-bytes", 0),
    ("event-log.rotation.max-file-bytes", 100),
    ("event-log.rotation.max-files", -1),
    ("event-log.queue-size", 0),
    ("event-log.flush-ms", 0),
    ("event-log.standard.max-string-length", -5),
    ("event-log.standard.max-array-elements", 0),
    ("event-log.standard.max-depth", 0),
    ("max-events-per-run", 0),
    ("max-action-time-per-run", -1),
    ("dead-letter.max-chars", 0),
    ("retry-wait-interval", "nan"),
    ("retry-wait-interval", float("inf")),
    ("approval.timeout", "-inf"),
    ("metrics.publish-interval-ms", 0),
    ("max-in-flight", 0),
    ("num-async-threads", -2),
]


@pytest.mark.parametrize(("key", "value"), BAD)
def test_out_of_range_values_are_errors_naming_the_key(key: str, value: Any) -> None:
    with pytest.raises(ConfigurationError, match=key.replace(".", r"\.")):
        AgentConfiguration({key: value})


def test_every_numeric_option_rejects_a_negative_value() -> None:
    """No option's range includes -1 except where -1 means something; none does."""
    for option in _numeric_options():
        with pytest.raises(ConfigurationError, match=option.key.replace(".", r"\.")):
            AgentConfiguration().set(option, -1)


@pytest.mark.parametrize("key", ["MAX-RETRIES", "Max-Retries", "max_retries", "MAX_RETRIES"])
def test_an_option_key_in_another_case_or_spelling_is_an_error(key: str) -> None:
    with pytest.raises(ConfigurationError, match="'max-retries'"):
        AgentConfiguration({key: 5})


def test_keys_of_the_users_own_are_kept_as_given() -> None:
    config = AgentConfiguration({"My.Webhook.URL": "http://h", "tag": "x"})
    assert config.get_str("My.Webhook.URL") == "http://h" and config.get_str("tag") == "x"
    assert config.get_str("my.webhook.url") is None  # exact match, as Flink's keys
