"""Configuration options and the error handling strategy.

Options are typed: :meth:`AgentConfiguration.set` checks the value and raises
:class:`~flink_agents.errors.ConfigurationError` naming the key, the bad value and what is
expected. Keys that are not options of ours are kept as they are, for actions to read
through ``ctx.config``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, TypeVar

from flink_agents.errors import ConfigurationError

_T = TypeVar("_T")


class ErrorHandlingStrategy(str, Enum):
    """What happens when an action fails or a model reply is unusable.

    FAIL: raise; on Flink the job fails (and restarts under its restart strategy).
    RETRY: run the action again, up to ``max-retries`` times with exponential backoff, then fail.
    IGNORE: log the error, send an :class:`~flink_agents.api.events.event.ErrorEvent`, and go on.
    """

    FAIL = "fail"
    RETRY = "retry"
    IGNORE = "ignore"


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
        return float(value)
    except (TypeError, ValueError):
        raise ValueError("expected a number (seconds)") from None


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError("expected an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError("expected an integer") from None


def _to_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v for v in (p.strip() for p in value.replace(";", ",").split(",")) if v]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    raise ValueError("expected a list of strings or a comma separated string")


@dataclass(frozen=True)
class ConfigOption(Generic[_T]):
    """A typed configuration key.

    Attributes:
        key: the string key (``"max-retries"``).
        default: value when unset.
        parse: turns a user value (also a string from a config file) into the typed value.
        check: optional range check returning a problem text, or None.
        description: what it does.
    """

    key: str
    default: _T
    parse: Callable[[Any], _T]
    description: str = ""
    check: Callable[[Any], str | None] | None = None

    def coerce(self, value: Any) -> _T:
        """The typed value, or a :class:`ConfigurationError` that says what is expected."""
        if value is None and self.default is None:
            return value  # type: ignore[no-any-return,return-value]
        try:
            typed = self.parse(value)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"invalid value {value!r} for option {self.key!r}: {exc}. {self.description}"
            ) from None
        problem = self.check(typed) if self.check else None
        if problem:
            raise ConfigurationError(
                f"invalid value {value!r} for option {self.key!r}: {problem}. {self.description}"
            )
        return typed


def _positive(v: Any) -> str | None:
    return None if v > 0 else "must be > 0"


def _non_negative(v: Any) -> str | None:
    return None if v >= 0 else "must be >= 0"


def _strategy(value: Any) -> ErrorHandlingStrategy:
    if isinstance(value, ErrorHandlingStrategy):
        return value
    try:
        return ErrorHandlingStrategy(str(value).lower())
    except ValueError:
        raise ValueError(f"expected one of {[s.value for s in ErrorHandlingStrategy]}") from None


def _optional_seconds(value: Any) -> float | None:
    return None if value is None else _to_float(value)


class AgentConfigOptions:
    """Options about how agents behave."""

    ERROR_HANDLING_STRATEGY: ConfigOption[ErrorHandlingStrategy] = ConfigOption(
        "error-handling-strategy",
        ErrorHandlingStrategy.FAIL,
        _strategy,
        "One of fail, retry, ignore.",
    )
    MAX_RETRIES: ConfigOption[int] = ConfigOption(
        "max-retries", 3, _to_int, "Retries of a failing action under RETRY.", _non_negative
    )
    RETRY_WAIT_INTERVAL: ConfigOption[float] = ConfigOption(
        "retry-wait-interval",
        0.5,
        _to_float,
        "Seconds before the first retry; doubles on each further retry.",
        _non_negative,
    )
    MAX_ITERATIONS: ConfigOption[int] = ConfigOption(
        "max-iterations",
        10,
        _to_int,
        "Model calls one chat request may make in its tool-call loop.",
        _positive,
    )
    ALLOW_PICKLED_FUNCTIONS: ConfigOption[bool] = ConfigOption(
        "allow-pickled-functions",
        False,
        _to_bool,
        "Store lambdas and closures used as actions with cloudpickle instead of rejecting them.",
    )


class AgentExecutionOptions:
    """Options about how the runtime executes agents."""

    NUM_ASYNC_THREADS: ConfigOption[int] = ConfigOption(
        "num-async-threads",
        32,
        _to_int,
        "Worker threads per slot for blocking calls (sync model clients, sync tools).",
        _positive,
    )
    MAX_IN_FLIGHT: ConfigOption[int] = ConfigOption(
        "max-in-flight",
        256,
        _to_int,
        "Runs in progress at once per slot; when full the operator applies backpressure.",
        _positive,
    )
    BATCH_SIZE: ConfigOption[int] = ConfigOption(
        "batch.size",
        32,
        _to_int,
        "Flink, thread mode: inputs handed to Python in one call (1: one call per input). "
        "Outputs of a batch leave when it is processed: when full, after batch.linger-ms, "
        "before a checkpoint barrier, a watermark or the end of input.",
        _positive,
    )
    BATCH_LINGER_MS: ConfigOption[int] = ConfigOption(
        "batch.linger-ms",
        5,
        _to_int,
        "Flink, thread mode: the longest an input waits for its batch to fill (ms).",
        _positive,
    )
    SHORT_TERM_MEMORY_TTL: ConfigOption[float | None] = ConfigOption(
        "short-term-memory.ttl",
        None,
        _optional_seconds,
        "Seconds after its last update that a key's short-term memory expires (unset: never).",
    )
    JAVA_JARS: ConfigOption[list[str]] = ConfigOption(
        "java.jars",
        [],
        _to_list,
        "Extra jar files (paths) added to the Flink job for Java resources.",
    )


_ALL_OPTIONS: dict[str, ConfigOption[Any]] = {}


def register_options(holder: type) -> None:
    """Make the :class:`ConfigOption` attributes of ``holder`` (and of classes nested in it,
    e.g. ``LongTermMemoryOptions.Mem0``) known options: set by string key they are checked,
    read unset they give their default."""
    for value in vars(holder).values():
        if isinstance(value, ConfigOption):
            _ALL_OPTIONS[value.key] = value
        elif isinstance(value, type) and value.__qualname__.startswith(holder.__qualname__ + "."):
            register_options(value)  # a nested holder, not any class it refers to


register_options(AgentConfigOptions)
register_options(AgentExecutionOptions)


class AgentConfiguration:
    """Configuration of an agents environment: typed options plus free keys for actions."""

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {}
        for key, value in (values or {}).items():
            self.set_str(key, value)

    def set(self, option: ConfigOption[_T], value: _T) -> AgentConfiguration:
        """Set a typed option (checked)."""
        self._values[option.key] = option.coerce(value)
        return self

    def set_str(self, key: str, value: Any) -> AgentConfiguration:
        """Set by string key; our options are checked, other keys kept as given."""
        option = _ALL_OPTIONS.get(key)
        self._values[key] = option.coerce(value) if option else value
        return self

    def get(self, option: ConfigOption[_T] | str, default: Any = None) -> Any:
        """The value of an option (its default when unset) or of a free key."""
        if isinstance(option, ConfigOption):
            return self._values.get(option.key, option.default)
        if option in self._values:
            return self._values[option]
        known = _ALL_OPTIONS.get(option)
        return known.default if known and default is None else default

    def get_str(self, key: str, default: Any = None) -> Any:
        """Same as :meth:`get` with a string key."""
        return self.get(key, default)

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


# Options declared elsewhere in the API register themselves when imported; import them here
# so that their keys are known whichever module a program imports first.
import flink_agents.api.memory.long_term_memory  # noqa: E402, F401
