"""Configuration options, the configuration object and configuration files.

Option holders and names follow Apache Flink Agents (``AgentConfigOptions``,
``AgentExecutionOptions``, ``ConfigOption(key=..., config_type=..., default=...)``). Every
option registers itself when it is created (and :func:`register_options` registers a holder
class explicitly), so holders defined elsewhere (``LongTermMemoryOptions``...) are known too.

Values are typed: :meth:`AgentConfiguration.set` checks them and raises
:class:`~flink_agents.errors.ConfigurationError` naming the key, the bad value and what is
expected. A key that is no option is kept for actions to read through ``ctx.config``, unless
it is a near miss of an option key (``max-retrys``): that is an error naming the option, as a
typo would otherwise be silently ignored. Options of Apache Flink Agents that mean nothing here
(its Kafka/Fluss action store, ``chat.async``...) are accepted with a warning saying why.

Configuration files: :meth:`AgentConfiguration.load_from_file` reads the ``agent:`` section of
a YAML file (Flink's ``config.yaml`` layout; nested keys are joined with dots);
``agents_env.get_config(path)`` loads one, and the Flink environment loads
``$FLINK_CONF_DIR/config.yaml`` when it is made, as upstream does.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import Any, Generic, TypeVar

from flink_agents.errors import ConfigurationError

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class ErrorHandlingStrategy(str, Enum):
    """What happens when an action fails or a model reply is unusable.

    FAIL: raise; on Flink the job fails (and restarts under its restart strategy).
    RETRY: run the action again, up to ``max-retries`` times with exponential backoff, then fail.
    IGNORE: log the error, send an :class:`~flink_agents.api.events.event.ErrorEvent`, and go on.
    DEAD_LETTER: end the run at once, commit nothing of it, and emit a
        :class:`~flink_agents.api.dead_letter.DeadLetter` (the Flink operator's side output,
        the local environment's list): the job neither fails nor drops the record silently.
    """

    FAIL = "fail"
    RETRY = "retry"
    IGNORE = "ignore"
    DEAD_LETTER = "dead-letter"


class ShortTermMemoryTtlUpdate(str, Enum):
    """When a key's short-term memory TTL starts again (as upstream).

    ON_CREATE_AND_WRITE: when the memory is written.
    ON_READ_AND_WRITE: also whenever the key runs (its memory is read for the run).
    """

    ON_CREATE_AND_WRITE = "ON_CREATE_AND_WRITE"
    ON_READ_AND_WRITE = "ON_READ_AND_WRITE"


class ShortTermMemoryTtlVisibility(str, Enum):
    """Whether expired short-term memory may still be returned (as upstream).

    Here expired memory is cleared when the key next runs, before the run sees it, so both
    values behave as NEVER_RETURN_EXPIRED (which RETURN_EXPIRED_IF_NOT_CLEANED_UP allows).
    """

    NEVER_RETURN_EXPIRED = "NEVER_RETURN_EXPIRED"
    RETURN_EXPIRED_IF_NOT_CLEANED_UP = "RETURN_EXPIRED_IF_NOT_CLEANED_UP"


# -- value parsers ----------------------------------------------------------------------------


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError("expected true or false")


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("expected a number (seconds)") from None
    if not math.isfinite(number):
        raise ValueError("expected a finite number (no NaN or infinity)")
    return number


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError("expected an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError("expected an integer") from None


def _to_str(value: Any) -> str:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise ValueError("expected a string")


def _to_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v for v in (p.strip() for p in value.replace(";", ",").split(",")) if v]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    raise ValueError("expected a list of strings or a comma separated string")


def _to_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    raise ValueError("expected a mapping")


def _enum_parser(enum: type[Enum]) -> Callable[[Any], Any]:
    def parse(value: Any) -> Any:
        if isinstance(value, enum):
            return value
        text = str(value.value if isinstance(value, Enum) else value)
        for member in enum:
            if text.lower() in (str(member.value).lower(), member.name.lower()):
                return member
        raise ValueError(f"expected one of {[str(m.value) for m in enum]}")

    return parse


_PARSERS: dict[Any, Callable[[Any], Any]] = {
    bool: _to_bool,
    int: _to_int,
    float: _to_float,
    str: _to_str,
    list: _to_list,
    dict: _to_dict,
}


def _parser_for(config_type: Any) -> Callable[[Any], Any]:
    if isinstance(config_type, type) and issubclass(config_type, Enum):
        return _enum_parser(config_type)
    parser = _PARSERS.get(config_type)
    if parser is None:
        raise TypeError(
            f"ConfigOption config_type must be bool, int, float, str, list, dict or an Enum, "
            f"got {config_type!r}; pass parse= for other types"
        )
    return parser


def _identity(value: Any) -> Any:
    return value


# -- options and their registry --------------------------------------------------------------

#: Every known option by key (aliases included).
_OPTIONS: dict[str, ConfigOption[Any]] = {}
#: Entry point group naming the modules that declare options (pyproject.toml); each is
#: imported before a key is declared unknown, so its options are known (and checked) even
#: when nothing imported it yet. The API does not import the runtime's modules itself.
OPTIONS_GROUP = "flink_agents.options"
_imported_option_modules = False
#: Key families an option holder reads by pattern (``event-log.type.<event type>.level``):
#: ``(prefix, suffix) -> parse`` (raises ValueError for a bad value).
_FAMILIES: dict[tuple[str, str], Callable[[Any], Any]] = {}
#: Keys already warned about (no-effect options, free keys), once per process.
_noted: set[str] = set()


class ConfigOption(Generic[_T]):
    """A typed configuration key (as in Apache Flink Agents).

    Args:
        key: the string key (``"max-retries"``).
        config_type: the value type: ``bool``, ``int``, ``float``, ``str``, ``list``,
            ``dict`` or an ``Enum`` class (values are parsed from strings too, e.g. from
            YAML or ``set_str``).
        default: value when unset.
        description: what it does (shown in errors).
        parse: a parser of your own instead of one from ``config_type``.
        check: optional range check returning a problem text, or None.
        no_effect: for options of Apache Flink Agents that mean nothing here: why. Setting
            one logs a warning with this text instead of failing.
        alias_of: ``(option, to_target, from_target)``: this key is another name of
            ``option`` (e.g. in other units); values are stored under the option's key.

    The earlier positional order ``ConfigOption(key, default, parse, description, check)``
    is still accepted.
    """

    def __init__(
        self,
        key: str,
        config_type: Any = None,
        default: Any = None,
        parse: Callable[[Any], Any] | None = None,
        description: str = "",
        check: Callable[[Any], str | None] | None = None,
        *,
        no_effect: str | None = None,
        alias_of: tuple[ConfigOption[Any], Callable[[Any], Any], Callable[[Any], Any]]
        | None = None,
    ) -> None:
        if (
            isinstance(parse, str)
            or (config_type is not None and not isinstance(config_type, type))
            or (config_type is None and parse is None and callable(default))
        ):
            # The earlier positional order (key, default, parse, description, check): the
            # second argument is a value, not a type, or the third one is the parser.
            config_type, default, parse, description, check = (
                None,
                config_type,
                default,
                parse or "",  # type: ignore[assignment]
                description or None,  # type: ignore[assignment]
            )
        self.key = key
        self.config_type = config_type
        self.default: _T = default
        self.parse: Callable[[Any], Any] = parse or (
            _parser_for(config_type) if config_type is not None else _identity
        )
        self.description = description
        self.check = check
        self.no_effect = no_effect
        self.alias_of = alias_of
        _register(self)

    # upstream's accessors
    def get_key(self) -> str:
        """The configuration key."""
        return self.key

    def get_type(self) -> Any:
        """The value type."""
        return self.config_type

    def get_default_value(self) -> Any:
        """The default value."""
        return self.default

    def coerce(self, value: Any) -> _T:
        """The typed value, or a :class:`ConfigurationError` that says what is expected."""
        if value is None:
            return value  # type: ignore[return-value]  # None means "unset" / the default
        try:
            typed = self.parse(value)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"invalid value {_shown(value)} for option {self.key!r}: {exc}. {self.description}"
            ) from None
        problem = self.check(typed) if self.check else None
        if problem:
            raise ConfigurationError(
                f"invalid value {_shown(value)} for option {self.key!r}: {problem}. "
                f"{self.description}"
            )
        return typed

    def __repr__(self) -> str:
        return f"ConfigOption({self.key!r}, default={self.default!r})"


_URL_PASSWORD = re.compile(r"(?<=://)([^/\s:@]*):([^/\s@]+)@")


def _shown(value: Any) -> str:
    """A rejected value as an error shows it: a URL's password masked."""
    return _URL_PASSWORD.sub(r"\1:***@", repr(value))


def _register(option: ConfigOption[Any]) -> None:
    known = _OPTIONS.get(option.key)
    if (
        known is not None
        and known is not option
        and (known.config_type != option.config_type or known.default != option.default)
    ):
        log.warning(
            "config option %r is defined twice with different types or defaults; the first "
            "definition is kept",
            option.key,
        )
        return
    _OPTIONS.setdefault(option.key, option)


def _walk(holder: Any) -> Iterator[ConfigOption[Any]]:
    for value in vars(holder).values():
        if isinstance(value, ConfigOption):
            yield value
        elif isinstance(value, type) and value.__module__ == holder.__module__:
            yield from _walk(value)  # nested holders, e.g. LongTermMemoryOptions.Mem0


def register_options(holder: Any) -> None:
    """Make the options of ``holder`` (a class with ``ConfigOption`` attributes, nested
    classes included) known, so their keys are checked when set by string or from a file.

    Options also register themselves when created; this is for holders that want to be
    explicit about it.
    """
    for option in _walk(holder):
        _register(option)


def register_key_family(prefix: str, suffix: str, parse: Callable[[Any], Any]) -> None:
    """Make the keys ``<prefix><name><suffix>`` known (any non-empty name), their values
    checked by ``parse`` (which raises ValueError for a bad one) when set."""
    _FAMILIES[(prefix, suffix)] = parse


def _family_of(key: str) -> Callable[[Any], Any] | None:
    """The value check of the key family ``key`` belongs to, if any."""
    _import_option_modules()
    for (prefix, suffix), parse in _FAMILIES.items():
        if len(key) > len(prefix) + len(suffix) and key.startswith(prefix) and key.endswith(suffix):
            return parse
    return None


def _known_option(key: str) -> ConfigOption[Any] | None:
    """The option with ``key``, if any is defined."""
    option = _OPTIONS.get(key)
    if option is None and not _imported_option_modules:
        _import_option_modules()
        option = _OPTIONS.get(key)
    return option


def _import_option_modules() -> None:
    """Import the modules that define options (they register them, and key families)."""
    global _imported_option_modules
    if _imported_option_modules:
        return
    _imported_option_modules = True
    for module in option_modules():
        try:
            importlib.import_module(module)
        except ImportError:
            continue


def option_modules() -> list[str]:
    """The modules that declare options, from the ``flink_agents.options`` entry points."""
    from importlib.metadata import entry_points

    return sorted(point.value for point in entry_points(group=OPTIONS_GROUP))


def _positive(v: Any) -> str | None:
    return None if v > 0 else "must be > 0"


def _non_negative(v: Any) -> str | None:
    return None if v >= 0 else "must be >= 0"


def _execution_mode(v: Any) -> str | None:
    return None if v in ("thread", "process") else "must be thread or process"


_ACTION_STORE = (
    "flink-agents keeps durable call results in Flink keyed state (checkpointed with the "
    "job); no external action store is needed"
)
_ALWAYS_ASYNC = "built-in actions always run their calls without blocking other keys"


class AgentExecutionOptions:
    """Options about how the runtime executes agents (names as in Apache Flink Agents)."""

    ERROR_HANDLING_STRATEGY: ConfigOption[ErrorHandlingStrategy] = ConfigOption(
        key="error-handling-strategy",
        config_type=ErrorHandlingStrategy,
        default=ErrorHandlingStrategy.FAIL,
        description="One of fail, retry, ignore, dead-letter.",
    )
    MAX_RETRIES: ConfigOption[int] = ConfigOption(
        key="max-retries",
        config_type=int,
        default=3,
        description="Retries of a failing action under RETRY.",
        check=_non_negative,
    )
    RETRY_WAIT_INTERVAL: ConfigOption[float] = ConfigOption(
        key="retry-wait-interval",
        config_type=float,
        default=0.5,
        description="Seconds before the first retry; doubles on each further retry.",
        check=_non_negative,
    )
    NUM_ASYNC_THREADS: ConfigOption[int] = ConfigOption(
        key="num-async-threads",
        config_type=int,
        default=32,
        description="Worker threads per slot for blocking calls (sync model clients, tools).",
        check=_positive,
    )
    MAX_EVENTS_PER_RUN: ConfigOption[int] = ConfigOption(
        key="max-events-per-run",
        config_type=int,
        default=1000,
        description="Events one run may process (the input included); a run that sends more "
        "(actions that keep sending each other events) ends under the error strategy with "
        "an error naming the event types of the cycle.",
        check=_positive,
    )
    MAX_ACTION_TIME_PER_RUN: ConfigOption[float] = ConfigOption(
        key="max-action-time-per-run",
        config_type=float,
        default=3600.0,
        description="Seconds one run's actions may take together (0: no limit), checked "
        "between events (one action is bounded by its timeout); past it the run ends under "
        "the error strategy.",
        check=_non_negative,
    )
    DEAD_LETTER_MAX_CHARS: ConfigOption[int] = ConfigOption(
        key="dead-letter.max-chars",
        config_type=int,
        default=4096,
        description="Characters kept of a dead letter's record repr and reason (longer texts "
        "are cut and marked).",
        check=_positive,
    )
    MAX_IN_FLIGHT: ConfigOption[int] = ConfigOption(
        key="max-in-flight",
        config_type=int,
        default=256,
        description="Runs in progress at once per slot; when full the operator applies "
        "backpressure.",
        check=_positive,
    )
    BATCH_SIZE: ConfigOption[int] = ConfigOption(
        key="batch.size",
        config_type=int,
        default=32,
        description="Flink, thread mode: inputs handed to Python in one call (1: one call per "
        "input). Outputs of a batch leave when it is processed: when full, after "
        "batch.linger-ms, before a checkpoint barrier, a watermark or the end of input.",
        check=_positive,
    )
    BATCH_LINGER_MS: ConfigOption[int] = ConfigOption(
        key="batch.linger-ms",
        config_type=int,
        default=5,
        description="Flink, thread mode: the longest an input waits for its batch to fill (ms). "
        "An input that arrives after the operator was idle (no input, no batch in Python) for "
        "at least this long, or while inputs arrive more than a quarter of it apart on "
        "average, is handed over at once "
        "(at a low rate no input waits for a batch that will not fill).",
        check=_positive,
    )
    SHORT_TERM_MEMORY_STATE_TTL_MS: ConfigOption[int] = ConfigOption(
        key="short-term-memory.state-ttl.ms",
        config_type=int,
        default=0,
        description="Milliseconds after which a key's short-term memory expires (0: never); "
        "see short-term-memory.state-ttl.update-type.",
        check=_non_negative,
    )
    SHORT_TERM_MEMORY_STATE_TTL_UPDATE_TYPE: ConfigOption[ShortTermMemoryTtlUpdate] = ConfigOption(
        key="short-term-memory.state-ttl.update-type",
        config_type=ShortTermMemoryTtlUpdate,
        default=ShortTermMemoryTtlUpdate.ON_READ_AND_WRITE,
        description="When the TTL starts again: ON_CREATE_AND_WRITE (memory written) or "
        "ON_READ_AND_WRITE (also each run of the key).",
    )
    SHORT_TERM_MEMORY_STATE_TTL_VISIBILITY: ConfigOption[ShortTermMemoryTtlVisibility] = (
        ConfigOption(
            key="short-term-memory.state-ttl.visibility",
            config_type=ShortTermMemoryTtlVisibility,
            default=ShortTermMemoryTtlVisibility.NEVER_RETURN_EXPIRED,
            description="NEVER_RETURN_EXPIRED or RETURN_EXPIRED_IF_NOT_CLEANED_UP (expired "
            "memory is cleared before the key's next run either way).",
        )
    )
    #: Earlier name of the TTL, in seconds (unset: never); stored as
    #: ``short-term-memory.state-ttl.ms``.
    SHORT_TERM_MEMORY_TTL: ConfigOption[float | None] = ConfigOption(
        key="short-term-memory.ttl",
        config_type=float,
        default=None,
        description="Seconds after which a key's short-term memory expires (unset: never); "
        "the same as short-term-memory.state-ttl.ms in seconds.",
        check=_non_negative,
        alias_of=(
            SHORT_TERM_MEMORY_STATE_TTL_MS,
            lambda seconds: round(seconds * 1000),
            lambda ms: ms / 1000 if ms else None,
        ),
    )
    PYTHON_EXECUTION_MODE: ConfigOption[str | None] = ConfigOption(
        key="python.execution-mode",
        config_type=str,
        default=None,
        description="Flink only: thread (embedded CPython, the default) or process.",
        check=_execution_mode,
    )
    PYTHON_GC_FREEZE: ConfigOption[bool] = ConfigOption(
        key="python.gc-freeze",
        config_type=bool,
        default=True,
        description="Flink only: at the first agent operator's open in a Python process, "
        "collect once and move the objects alive then (modules, plan, resources) out of the "
        "garbage collector's full collections (gc.freeze): with many calls in flight those "
        "pause every run for tens of ms every few seconds. Such an object that later becomes "
        "an unreachable reference cycle is never freed.",
    )
    PYTHON_PATH: ConfigOption[Any] = ConfigOption(
        key="python.pythonpath",
        default=None,
        description="Flink only: extra directories for the Python workers' path.",
    )
    JAVA_JARS: ConfigOption[list[str]] = ConfigOption(
        key="java.jars",
        config_type=list,
        default=[],
        description="Extra jar files (paths) added to the Flink job for Java resources.",
    )
    CHAT_ASYNC: ConfigOption[bool] = ConfigOption(
        key="chat.async", config_type=bool, default=True, no_effect=_ALWAYS_ASYNC
    )
    TOOL_CALL_ASYNC: ConfigOption[bool] = ConfigOption(
        key="tool-call.async", config_type=bool, default=True, no_effect=_ALWAYS_ASYNC
    )
    RAG_ASYNC: ConfigOption[bool] = ConfigOption(
        key="rag.async", config_type=bool, default=True, no_effect=_ALWAYS_ASYNC
    )
    AGENT_RUN_BEGIN_EVENT: ConfigOption[bool] = ConfigOption(
        key="agent-run.begin-event",
        config_type=bool,
        default=False,
        description="Send an _agent_run_begin_event (the key's short-term memory values) "
        "before the first action of each run.",
    )


class ConditionEvaluationFailureStrategy(str, Enum):
    """What happens when an action's trigger-condition expression fails on an event (a
    missing attribute read without ``has()``, a type mismatch), as in Apache Flink Agents."""

    #: Log a warning and treat that condition as false (later conditions still count).
    WARN_AND_SKIP = "WARN_AND_SKIP"
    #: Fail the run (and so the Flink task) with the evaluation error.
    FAIL = "FAIL"


class MemoryEventOptions:
    """Which memory operations become memory events (as in Apache Flink Agents).

    Each operation's switch is its own key if set, else the master switch
    ``memory.generate-event`` if set, else its default: writes and long-term operations on,
    short-term and sensory reads off.
    """

    MEMORY_GENERATE_EVENT: ConfigOption[bool | None] = ConfigOption(
        key="memory.generate-event",
        config_type=bool,
        default=None,
        description="Master switch of memory events (unset: each operation's default).",
    )
    SHORT_TERM_WRITE: ConfigOption[bool | None] = ConfigOption(
        key="memory.generate-event.short-term-write",
        config_type=bool,
        default=None,
        description="Short-term memory writes as _short_term_write_event (default on).",
    )
    SHORT_TERM_READ: ConfigOption[bool | None] = ConfigOption(
        key="memory.generate-event.short-term-read",
        config_type=bool,
        default=None,
        description="Short-term memory reads as _short_term_read_event (default off).",
    )
    SENSORY_WRITE: ConfigOption[bool | None] = ConfigOption(
        key="memory.generate-event.sensory-write",
        config_type=bool,
        default=None,
        description="Sensory memory writes as _sensory_write_event (default on).",
    )
    SENSORY_READ: ConfigOption[bool | None] = ConfigOption(
        key="memory.generate-event.sensory-read",
        config_type=bool,
        default=None,
        description="Sensory memory reads as _sensory_read_event (default off).",
    )
    LONG_TERM_UPDATE: ConfigOption[bool | None] = ConfigOption(
        key="memory.generate-event.long-term-update",
        config_type=bool,
        default=None,
        description="Long-term memory adds and deletes as _long_term_update_event (default on).",
    )
    LONG_TERM_GET: ConfigOption[bool | None] = ConfigOption(
        key="memory.generate-event.long-term-get",
        config_type=bool,
        default=None,
        description="Long-term memory gets as _long_term_get_event (default on).",
    )
    LONG_TERM_SEARCH: ConfigOption[bool | None] = ConfigOption(
        key="memory.generate-event.long-term-search",
        config_type=bool,
        default=None,
        description="Long-term memory searches as _long_term_search_event (default on).",
    )


class AgentConfigOptions:
    """Options about how agents behave (names as in Apache Flink Agents).

    ``ERROR_HANDLING_STRATEGY``, ``MAX_RETRIES`` and ``RETRY_WAIT_INTERVAL`` are the same
    options as on :class:`AgentExecutionOptions` (upstream's home for them).
    """

    ERROR_HANDLING_STRATEGY = AgentExecutionOptions.ERROR_HANDLING_STRATEGY
    MAX_RETRIES = AgentExecutionOptions.MAX_RETRIES
    RETRY_WAIT_INTERVAL = AgentExecutionOptions.RETRY_WAIT_INTERVAL
    MAX_ITERATIONS: ConfigOption[int] = ConfigOption(
        key="max-iterations",
        config_type=int,
        default=10,
        description="Model calls one chat request may make in its tool-call loop.",
        check=_positive,
    )
    MAX_SUBAGENT_DEPTH: ConfigOption[int] = ConfigOption(
        key="max-subagent-depth",
        config_type=int,
        default=3,
        description="How deep sub-agents may nest: an agent's sub-agent is at depth 1, its "
        "sub-agent at 2. Deeper plans are refused when compiled, deeper calls fail with "
        "SubagentDepthError.",
        check=_positive,
    )
    ALLOW_PICKLED_FUNCTIONS: ConfigOption[bool] = ConfigOption(
        key="allow-pickled-functions",
        config_type=bool,
        default=False,
        description="Store lambdas and closures used as actions with cloudpickle instead of "
        "rejecting them.",
    )
    JOB_IDENTIFIER: ConfigOption[str | None] = ConfigOption(
        key="job-identifier",
        config_type=str,
        default=None,
        description="Identifier of the job that stays the same across restores from a "
        "savepoint (scopes long-term memory); unset: the Flink job id.",
    )
    ACTION_STATE_STORE_BACKEND: ConfigOption[str | None] = ConfigOption(
        key="actionStateStoreBackend", config_type=str, no_effect=_ACTION_STORE
    )
    CONDITION_EVALUATION_FAILURE_STRATEGY: ConfigOption[ConditionEvaluationFailureStrategy] = (
        ConfigOption(
            key="action.trigger-condition.evaluate-failure-strategy",
            config_type=ConditionEvaluationFailureStrategy,
            default=ConditionEvaluationFailureStrategy.WARN_AND_SKIP,
            description="What a trigger-condition expression that fails on an event does: "
            "WARN_AND_SKIP (the condition is false) or FAIL (the run fails).",
        )
    )
    EVENT_LISTENERS: ConfigOption[list[str] | None] = ConfigOption(
        key="event-listeners",
        config_type=list,
        default=None,
        description="Event listener classes (module.ClassName, no-argument constructor), "
        "told of every event a run processes.",
    )
    KAFKA_BOOTSTRAP_SERVERS: ConfigOption[str] = ConfigOption(
        key="kafkaBootstrapServers",
        config_type=str,
        default="localhost:9092",
        no_effect=_ACTION_STORE,
    )
    KAFKA_ACTION_STATE_TOPIC: ConfigOption[str | None] = ConfigOption(
        key="kafkaActionStateTopic", config_type=str, no_effect=_ACTION_STORE
    )
    KAFKA_ACTION_STATE_TOPIC_NUM_PARTITIONS: ConfigOption[int] = ConfigOption(
        key="kafkaActionStateTopicNumPartitions",
        config_type=int,
        default=64,
        no_effect=_ACTION_STORE,
        check=_positive,
    )
    KAFKA_ACTION_STATE_TOPIC_REPLICATION_FACTOR: ConfigOption[int] = ConfigOption(
        key="kafkaActionStateTopicReplicationFactor",
        config_type=int,
        default=1,
        no_effect=_ACTION_STORE,
        check=_positive,
    )
    FLUSS_BOOTSTRAP_SERVERS: ConfigOption[str] = ConfigOption(
        key="flussBootstrapServers",
        config_type=str,
        default="localhost:9123",
        no_effect=_ACTION_STORE,
    )
    FLUSS_ACTION_STATE_DATABASE: ConfigOption[str] = ConfigOption(
        key="flussActionStateDatabase",
        config_type=str,
        default="flink_agents",
        no_effect=_ACTION_STORE,
    )
    FLUSS_ACTION_STATE_TABLE: ConfigOption[str | None] = ConfigOption(
        key="flussActionStateTable", config_type=str, no_effect=_ACTION_STORE
    )
    FLUSS_ACTION_STATE_TABLE_BUCKETS: ConfigOption[int] = ConfigOption(
        key="flussActionStateTableBuckets",
        config_type=int,
        default=64,
        no_effect=_ACTION_STORE,
        check=_positive,
    )


# -- the configuration -------------------------------------------------------------------------


class AgentConfiguration:
    """Configuration of an agents environment: typed options plus free keys for actions.

    Readable and writable as upstream's ``Configuration``: ``set(option, value)``,
    ``get(option)``, ``set_str/set_int/set_float/set_bool(key, value)``,
    ``get_str/get_int/get_float/get_bool(key, default)``, ``load_from_file(path)``.
    """

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {}
        self._read_only = False
        for key, value in (values or {}).items():
            self.set_str(key, value)

    def read_only(self) -> AgentConfiguration:
        """This configuration, made read-only: a compiled plan's (``AgentPlan.get_config``)
        is parsed once and shared by everything that reads it, so a change must go to the
        environment's configuration before ``apply()``."""
        self._read_only = True
        return self

    def _check_writable(self) -> None:
        if self._read_only:
            raise ConfigurationError(
                "this configuration belongs to a compiled agent plan and is read-only; set "
                "options on the environment's configuration (get_config()) before apply()"
            )

    # -- writing -------------------------------------------------------------------------------
    def set(self, option: ConfigOption[_T], value: _T) -> AgentConfiguration:
        """Set a typed option (checked)."""
        self._check_writable()
        self._store(option, value)
        return self

    def set_str(self, key: str, value: Any) -> AgentConfiguration:
        """Set by key; options are checked, other keys kept as given for actions.

        Raises:
            ConfigurationError: a bad value, or a key that is no option but close to one
                (a likely typo), naming the option.
        """
        self._check_writable()
        option = _known_option(key)
        if option is not None:
            self._store(option, value)
            return self
        parse = _family_of(key)
        if parse is not None:
            try:
                parse(value)
            except ValueError as exc:
                raise ConfigurationError(f"config option {key!r}: {exc}") from None
        else:
            self._check_free_key(key)
        self._values[key] = value
        return self

    set_int = set_str
    set_float = set_str
    set_bool = set_str

    def _store(self, option: ConfigOption[Any], value: Any) -> None:
        if value is None:  # unset: back to the default
            self._values.pop((option.alias_of[0] if option.alias_of else option).key, None)
            return
        typed = option.coerce(value)
        if option.no_effect and option.key not in _noted:
            _noted.add(option.key)
            log.warning(
                "config option %r (Apache Flink Agents) has no effect here: %s",
                option.key,
                option.no_effect,
            )
        if option.alias_of is not None:
            target, to_target, _ = option.alias_of
            self._values[target.key] = target.coerce(to_target(typed))
            return
        self._values[option.key] = typed

    @staticmethod
    def _check_free_key(key: str) -> None:
        # Keys match exactly, as Flink's: an option key in other case (MAX-RETRIES) or
        # spelling (max_retries) is a mistake, not a key of the user's.
        folded = key.lower().replace("_", "-")
        same = [k for k in _OPTIONS if k.lower().replace("_", "-") == folded]
        if same:
            raise ConfigurationError(
                f"unknown config option {key!r}: did you mean {same[0]!r}? (option keys "
                "match exactly, case and separators included)"
            )
        close = difflib.get_close_matches(key, list(_OPTIONS), n=1, cutoff=0.8)
        if close:
            raise ConfigurationError(
                f"unknown config option {key!r}: did you mean {close[0]!r}? (a key of your "
                "own for actions must not look like an option key; rename it)"
            )
        if key not in _noted:
            _noted.add(key)
            log.info("config key %r is no option of flink-agents; kept for actions", key)

    # -- reading -------------------------------------------------------------------------------
    def get(self, option: ConfigOption[_T] | str, default: Any = None) -> Any:
        """The value of an option (its default when unset) or of a free key."""
        if isinstance(option, ConfigOption):
            if option.alias_of is not None:
                target, _, from_target = option.alias_of
                stored = self._values.get(target.key)
                return option.default if stored is None else from_target(stored)
            return self._values.get(option.key, option.default)
        if option in self._values:
            return self._values[option]
        known = _known_option(option)
        if known is not None and default is None:
            return self.get(known)
        return default

    def get_str(self, key: str, default: Any = None) -> Any:
        """Same as :meth:`get` with a string key."""
        return self.get(key, default)

    def get_int(self, key: str, default: int | None = None) -> int | None:
        """The value of ``key`` as an integer (``default`` when unset)."""
        value = self.get(key, default)
        return None if value is None else _to_int(value)

    def get_float(self, key: str, default: float | None = None) -> float | None:
        """The value of ``key`` as a number (``default`` when unset)."""
        value = self.get(key, default)
        return None if value is None else _to_float(value)

    def get_bool(self, key: str, default: bool | None = None) -> bool | None:
        """The value of ``key`` as a bool (``default`` when unset)."""
        value = self.get(key, default)
        return None if value is None else _to_bool(value)

    def get_conf_data(self) -> dict[str, Any]:
        """Every value that was set, by key (as upstream's ``get_conf_data``)."""
        return dict(self._values)

    def get_config_data_by_prefix(self, prefix: str) -> dict[str, Any]:
        """Values of the keys under ``prefix.``, by the rest of their key."""
        start = f"{prefix}."
        return {k[len(start) :]: v for k, v in self._values.items() if k.startswith(start)}

    def to_dict(self) -> dict[str, Any]:
        """The values that were set, JSON-friendly (enums as their values)."""
        return {k: (v.value if isinstance(v, Enum) else v) for k, v in self._values.items()}

    def copy(self) -> AgentConfiguration:
        """An independent copy."""
        new = AgentConfiguration()
        new._values = dict(self._values)
        return new

    def __repr__(self) -> str:
        return f"AgentConfiguration({self.to_dict()!r})"

    # -- files -----------------------------------------------------------------------------------
    def load_from_file(self, path: str | os.PathLike[str]) -> AgentConfiguration:
        """Set the values of the ``agent:`` section of a YAML file (Flink's ``config.yaml``
        layout; nested keys are joined with dots: ``chat: {async: true}`` is
        ``chat.async``). Values already set with the same keys are replaced.

        Raises:
            ConfigurationError: the file is missing or not YAML, or a value or key under
                ``agent:`` is bad; the message names the file and the line.
        """
        from flink_agents.api._config_file import read_agent_section

        for key, value, where in read_agent_section(Path(path)):
            try:
                self.set_str(key, value)
            except ConfigurationError as exc:
                raise ConfigurationError(f"{where}: {exc}") from None
        return self

    def load_flink_conf_dir(self, conf_dir: str | os.PathLike[str] | None = None) -> bool:
        """Load the ``agent:`` section of Flink's configuration file in ``conf_dir``
        (default: ``$FLINK_CONF_DIR``): ``config.yaml``, else the legacy ``flink-conf.yaml``.
        Returns whether a file was read; no directory or no file reads nothing."""
        directory = conf_dir if conf_dir is not None else os.environ.get("FLINK_CONF_DIR")
        if not directory:
            return False
        for name in ("config.yaml", "flink-conf.yaml"):
            candidate = Path(directory) / name
            if candidate.is_file():
                if name != "config.yaml":
                    log.warning("reading agent options from the legacy %s", candidate)
                self.load_from_file(candidate)
                return True
        log.warning("FLINK_CONF_DIR=%s has no config.yaml; no agent options read", directory)
        return False
