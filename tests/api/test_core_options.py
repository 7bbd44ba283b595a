"""Options as in Apache Flink Agents: names, typed values, aliases, unknown keys, the
option registry, YAML configuration files (with file and line in every error)."""

from __future__ import annotations

import logging
from enum import Enum
from pathlib import Path

import pytest

from flink_agents.api import core_options
from flink_agents.api.core_options import (
    AgentConfigOptions,
    AgentConfiguration,
    AgentExecutionOptions,
    ConfigOption,
    ErrorHandlingStrategy,
    ShortTermMemoryTtlUpdate,
    ShortTermMemoryTtlVisibility,
    register_options,
)
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.errors import ConfigurationError


def test_upstream_option_names_and_keys():
    expected = {
        AgentExecutionOptions.ERROR_HANDLING_STRATEGY: ("error-handling-strategy", "fail"),
        AgentExecutionOptions.MAX_RETRIES: ("max-retries", 3),
        AgentExecutionOptions.RETRY_WAIT_INTERVAL: ("retry-wait-interval", 0.5),
        AgentExecutionOptions.NUM_ASYNC_THREADS: ("num-async-threads", 32),
        AgentExecutionOptions.CHAT_ASYNC: ("chat.async", True),
        AgentExecutionOptions.TOOL_CALL_ASYNC: ("tool-call.async", True),
        AgentExecutionOptions.RAG_ASYNC: ("rag.async", True),
        AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_MS: ("short-term-memory.state-ttl.ms", 0),
        AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE: (
            "short-term-memory.state-ttl.update-type",
            "ON_READ_AND_WRITE",
        ),
        AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_VISIBILITY: (
            "short-term-memory.state-ttl.visibility",
            "NEVER_RETURN_EXPIRED",
        ),
        AgentConfigOptions.JOB_IDENTIFIER: ("job-identifier", None),
        AgentConfigOptions.KAFKA_ACTION_STATE_TOPIC_NUM_PARTITIONS: (
            "kafkaActionStateTopicNumPartitions",
            64,
        ),
    }
    for option, (key, default) in expected.items():
        assert option.get_key() == key
        value = option.get_default_value()
        assert (value.value if isinstance(value, Enum) else value) == default
    # Our earlier home of these options is the same option.
    assert (
        AgentConfigOptions.ERROR_HANDLING_STRATEGY is AgentExecutionOptions.ERROR_HANDLING_STRATEGY
    )
    assert AgentConfigOptions.MAX_RETRIES is AgentExecutionOptions.MAX_RETRIES


def test_values_are_typed_and_checked():
    config = AgentConfiguration()
    config.set(AgentExecutionOptions.ERROR_HANDLING_STRATEGY, ErrorHandlingStrategy.RETRY)
    config.set_str("max-retries", "5").set_int("num-async-threads", 4)
    config.set_str("short-term-memory.state-ttl.update-type", "on_create_and_write")
    config.set_str("short-term-memory.state-ttl.visibility", "RETURN_EXPIRED_IF_NOT_CLEANED_UP")
    config.set(AgentConfigOptions.JOB_IDENTIFIER, "reviews-v1")
    assert config.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY) is ErrorHandlingStrategy.RETRY
    assert config.get(AgentExecutionOptions.MAX_RETRIES) == 5
    assert config.get_int("num-async-threads") == 4
    assert config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE) is (
        ShortTermMemoryTtlUpdate.ON_CREATE_AND_WRITE
    )
    assert config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_VISIBILITY) is (
        ShortTermMemoryTtlVisibility.RETURN_EXPIRED_IF_NOT_CLEANED_UP
    )
    assert config.get_str("job-identifier") == "reviews-v1"
    assert config.get("max-iterations") == 10  # unset: the option's default
    with pytest.raises(ConfigurationError, match="'max-retries': expected an integer"):
        config.set_str("max-retries", "many")
    with pytest.raises(ConfigurationError, match="must be >= 0"):
        config.set(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_MS, -1)
    with pytest.raises(ConfigurationError, match="expected one of"):
        config.set_str("short-term-memory.state-ttl.update-type", "sometimes")
    with pytest.raises(ConfigurationError, match="thread or process"):
        config.set_str("python.execution-mode", "fibers")
    # Setting None unsets: the default comes back.
    config.set(AgentExecutionOptions.MAX_RETRIES, None)
    assert config.get(AgentExecutionOptions.MAX_RETRIES) == 3


def test_ttl_seconds_key_is_an_alias_of_the_milliseconds_option():
    config = AgentConfiguration({"short-term-memory.ttl": 2.5})
    assert config.to_dict() == {"short-term-memory.state-ttl.ms": 2500}
    assert config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_TTL) == 2.5
    config.set(AgentExecutionOptions.SHORT_TERM_MEMORY_STATE_TTL_MS, 0)
    assert config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_TTL) is None


def test_a_near_miss_of_an_option_key_is_an_error_naming_it():
    config = AgentConfiguration()
    with pytest.raises(ConfigurationError, match="'max-retrys': did you mean 'max-retries'"):
        config.set_str("max-retrys", 3)
    with pytest.raises(ConfigurationError, match="did you mean 'error-handling-strategy'"):
        AgentConfiguration({"error_handling_strategy": "retry"})
    with pytest.raises(ConfigurationError, match="did you mean 'short-term-memory.state-ttl.ms'"):
        config.set_int("short-term-memory.state-ttl-ms", 10)


def test_keys_of_your_own_are_kept_for_actions(caplog):
    config = AgentConfiguration({"review.threshold": 0.7})
    with caplog.at_level(logging.INFO, logger="flink_agents.api.core_options"):
        config.set_str("my_service_url", "http://x")
    assert config.get("review.threshold") == 0.7
    assert config.get_float("review.threshold") == 0.7
    assert config.get("my_service_url") == "http://x"
    assert config.get("missing", "fallback") == "fallback"
    assert config.get_config_data_by_prefix("review") == {"threshold": 0.7}
    assert "kept for actions" in caplog.text


def test_upstream_options_without_effect_here_warn_once(caplog):
    core_options._noted.discard("kafkaActionStateTopicNumPartitions")
    config = AgentConfiguration()
    with caplog.at_level(logging.WARNING, logger="flink_agents.api.core_options"):
        config.set_int("kafkaActionStateTopicNumPartitions", 128)
        config.set_int("kafkaActionStateTopicNumPartitions", 256)
    warnings = [r.getMessage() for r in caplog.records if "kafkaActionState" in r.getMessage()]
    assert len(warnings) == 1 and "Flink keyed state" in warnings[0]
    assert config.get(AgentConfigOptions.KAFKA_ACTION_STATE_TOPIC_NUM_PARTITIONS) == 256


class _Color(Enum):
    RED = "red"
    BLUE = "blue"


class MyOptions:
    """An option holder of a user (or of another module), with a nested holder."""

    THRESHOLD = ConfigOption(key="test-only.threshold", config_type=float, default=0.5)

    class Nested:
        COLOR = ConfigOption(key="test-only.nested.color", config_type=_Color, default=_Color.RED)


def test_option_holders_register_and_their_keys_are_checked():
    register_options(MyOptions)  # also registered on creation; registering again is harmless
    config = AgentConfiguration({"test-only.threshold": "0.9", "test-only.nested.color": "BLUE"})
    assert config.get(MyOptions.THRESHOLD) == 0.9
    assert config.get(MyOptions.Nested.COLOR) is _Color.BLUE
    with pytest.raises(ConfigurationError, match="expected a number"):
        config.set_str("test-only.threshold", "high")
    with pytest.raises(ConfigurationError, match="did you mean 'test-only.threshold'"):
        config.set_str("test-only.treshold", 1)


def test_config_option_constructor_forms():
    upstream = ConfigOption("test-only.a", int, 3)
    assert (upstream.get_key(), upstream.get_type(), upstream.get_default_value()) == (
        "test-only.a",
        int,
        3,
    )
    earlier = ConfigOption("test-only.b", 7, int, "an earlier-style option")
    assert earlier.default == 7 and earlier.coerce("8") == 8 and earlier.config_type is None
    unset = ConfigOption("test-only.c", None, float)
    assert unset.default is None and unset.coerce("1.5") == 1.5
    with pytest.raises(TypeError, match="config_type must be"):
        ConfigOption("test-only.d", config_type=bytes)


# -- YAML files ----------------------------------------------------------------------------------


def _write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_get_config_path_loads_the_agent_section(tmp_path):
    path = _write(
        tmp_path,
        "taskmanager.numberOfTaskSlots: 2\n"
        "agent:\n"
        "  error-handling-strategy: retry\n"
        "  max-retries: 5\n"
        "  chat:\n"
        "    async: true\n"
        "  short-term-memory:\n"
        "    state-ttl.ms: 60000\n"
        "  review:\n"
        "    threshold: 0.7\n",
    )
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.get_config().set(AgentExecutionOptions.MAX_RETRIES, 1)
    config = env.get_config(str(path))
    assert config is env.get_config()
    assert config.get(AgentExecutionOptions.ERROR_HANDLING_STRATEGY) is ErrorHandlingStrategy.RETRY
    assert config.get(AgentExecutionOptions.MAX_RETRIES) == 5  # the file's value replaces it
    assert config.get(AgentExecutionOptions.CHAT_ASYNC) is True
    assert config.get(AgentExecutionOptions.SHORT_TERM_MEMORY_TTL) == 60.0
    assert config.get("review.threshold") == 0.7
    assert config.get("taskmanager.numberOfTaskSlots") is None  # not under agent:


def test_files_without_an_agent_section_set_nothing(tmp_path):
    for text in ("", "parallelism.default: 1\n", "agent:\n"):
        config = AgentConfiguration().load_from_file(_write(tmp_path, text))
        assert config.to_dict() == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("agent:\n  max-retries: 3\n  bad: [1, 2\n", r"config.yaml:4:1: not valid YAML"),
        (
            "agent:\n  max-retries: 3\n\n  max-retrys: 4\n",
            r"config.yaml:4: .*did you mean 'max-retries'",
        ),
        (
            "agent:\n  error-handling-strategy: sometimes\n",
            r"config.yaml:2: invalid value 'sometimes'",
        ),
        (
            "agent:\n  chat:\n    async: perhaps\n",
            r"config.yaml:3: invalid value 'perhaps' for option 'chat.async'",
        ),
        ("agent: [1, 2]\n", r"config.yaml:1: 'agent:' must hold option names"),
        ("- a\n- b\n", r"config.yaml:1: the file must be a YAML mapping"),
        ("agent:\n  1: x\n", r"config.yaml:2: option names must be text"),
    ],
    ids=[
        "syntax",
        "unknown-key",
        "bad-enum",
        "bad-nested-bool",
        "agent-list",
        "root-list",
        "int-key",
    ],
)
def test_bad_files_name_the_file_and_the_line(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigurationError, match=message) as info:
        AgentConfiguration().load_from_file(path)
    assert str(path) in str(info.value)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigurationError, match="cannot read configuration file .*nope.yaml"):
        AgentsExecutionEnvironment.get_execution_environment().get_config(tmp_path / "nope.yaml")


def test_flink_conf_dir_config_yaml_is_read(tmp_path, monkeypatch, caplog):
    _write(tmp_path, "agent:\n  job-identifier: from-flink-conf\n")
    monkeypatch.setenv("FLINK_CONF_DIR", str(tmp_path))
    config = AgentConfiguration()
    assert config.load_flink_conf_dir() is True
    assert config.get(AgentConfigOptions.JOB_IDENTIFIER) == "from-flink-conf"
    # The legacy file name is read when there is no config.yaml (with a warning).
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    _write(legacy, "agent:\n  max-retries: 9\n", name="flink-conf.yaml")
    with caplog.at_level(logging.WARNING, logger="flink_agents.api.core_options"):
        assert AgentConfiguration().load_flink_conf_dir(legacy) is True
    assert "legacy" in caplog.text
    empty = tmp_path / "empty"
    empty.mkdir()
    assert AgentConfiguration().load_flink_conf_dir(empty) is False
    monkeypatch.delenv("FLINK_CONF_DIR")
    assert AgentConfiguration().load_flink_conf_dir() is False


def test_every_module_declaring_options_is_an_options_entry_point():
    """A module that declares options must be listed in pyproject's flink_agents.options
    group, or its keys are unknown (and unchecked) until something imports it."""
    import ast
    from pathlib import Path

    from flink_agents.api import core_options

    package = Path(core_options.__file__).resolve().parents[1]
    declaring = set()
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("ConfigOption", "register_options", "register_key_family")
            for node in ast.walk(tree)
        ):
            module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
            declaring.add(module.removesuffix(".__init__"))
    declaring.discard("flink_agents.api.core_options")  # the registry itself
    import tomllib

    pyproject = tomllib.loads((package.parent / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(pyproject["project"]["entry-points"][core_options.OPTIONS_GROUP].values())
    assert declaring <= listed, "add them to pyproject.toml's flink_agents.options"
    # The installed metadata (what the registry reads) is pyproject's.
    assert set(core_options.option_modules()) == listed


def test_an_option_of_a_module_not_imported_yet_is_checked():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from flink_agents.api.core_options import AgentConfiguration\n"
        "assert 'flink_agents.runtime.observability.agent_metrics' not in sys.modules\n"
        "try:\n"
        "    AgentConfiguration({'metrics.enabled': 'nope'})\n"
        "except ValueError as exc:\n"
        "    print('rejected:', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "rejected: invalid value 'nope' for option 'metrics.enabled'" in done.stdout
