"""Options of model-call governance: token budgets and the response cache.

Rate limits are connection arguments (``requests_per_minute``, ``tokens_per_minute``,
``max_concurrent_requests``: see docs/rate-limits.md); these are agent options::

    agents_env.get_config().set_str("budget.tokens-per-key-per-day", "200000")
    agents_env.get_config().set_str("budget.on-key-exhausted", "error")   # or "pause"
    agents_env.get_config().set_str("model-cache.enabled", "true")

**Budgets** count the tokens (prompt + completion, from each reply's usage) of the model
calls of the built-in chat action. A key's count lives in its short-term memory (a reserved
path, checkpointed and committed with the key's run: exactly once after a restore); the
job's count is kept per subtask in memory, each with its share of the budget (the budget
divided by the parallelism of the agent's operator), and starts again after a restart. A
call is let through while its window's count is under the budget (the call that crosses
it completes). Windows are UTC days and UTC clock hours.

**The cache** answers a chat request identical to an earlier one of the same task slot
(same connection, model, messages, tools and options) with the earlier reply, when the
request's ``temperature`` is 0 (or ``model-cache.any-temperature`` allows any). A cached
reply is recorded in the durable call log like a real one, so a restored run replays it
from the log.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from flink_agents.api.core_options import ConfigOption, register_options


class BudgetExhausted(str, Enum):
    """What happens to a model call when its budget is spent.

    ERROR: the call raises :class:`~flink_agents.errors.BudgetExhaustedError`, which the
        action's error strategy handles (``ignore``: an error event and the run goes on;
        ``fail``: the job fails). Other keys go on.
    PAUSE: the call waits (without a thread) until the window resets, then goes. The run
        holds its in-flight place meanwhile; a paused job backpressures its source.
    """

    ERROR = "error"
    PAUSE = "pause"


def _positive_or_unset(value: Any) -> str | None:
    return None if value is None or value > 0 else "must be > 0 (unset: no budget)"


def _positive(value: Any) -> str | None:
    return None if value > 0 else "must be > 0"


def _tokens(value: Any) -> int | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
        return None
    if isinstance(value, bool):
        raise ValueError("expected a number of tokens")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError("expected a whole number of tokens")
    return int(value)


class BudgetOptions:
    """Token budgets of the built-in chat action's model calls (unset: none)."""

    TOKENS_PER_KEY_PER_DAY: ConfigOption[int | None] = ConfigOption(
        key="budget.tokens-per-key-per-day",
        config_type=int,
        default=None,
        parse=_tokens,
        check=_positive_or_unset,
        description="Tokens (prompt + completion) the model calls of one key may use per "
        "UTC day; counted in the key's keyed state, exactly once across restores.",
    )
    TOKENS_PER_JOB_PER_HOUR: ConfigOption[int | None] = ConfigOption(
        key="budget.tokens-per-job-per-hour",
        config_type=int,
        default=None,
        parse=_tokens,
        check=_positive_or_unset,
        description="Tokens the whole job's model calls may use per UTC clock hour; each "
        "subtask gets its share (budget / parallelism), counted in memory (a restart "
        "starts the hour's count again).",
    )
    ON_KEY_EXHAUSTED: ConfigOption[BudgetExhausted] = ConfigOption(
        key="budget.on-key-exhausted",
        config_type=BudgetExhausted,
        default=BudgetExhausted.ERROR,
        description="error (BudgetExhaustedError through the action's error strategy; other "
        "keys go on) or pause (the key's call waits until the next UTC day).",
    )
    ON_JOB_EXHAUSTED: ConfigOption[BudgetExhausted] = ConfigOption(
        key="budget.on-job-exhausted",
        config_type=BudgetExhausted,
        default=BudgetExhausted.PAUSE,
        description="pause (calls wait until the next UTC hour; the job backpressures) or "
        "error (BudgetExhaustedError through the action's error strategy).",
    )


class ModelCacheOptions:
    """The response cache of the built-in chat action (off by default)."""

    ENABLED: ConfigOption[bool] = ConfigOption(
        key="model-cache.enabled",
        config_type=bool,
        default=False,
        description="Answer a chat request identical to an earlier one of the task slot "
        "(connection, model, messages, tools, options) with the earlier reply, when its "
        "temperature is 0 (see model-cache.any-temperature).",
    )
    MAX_ENTRIES: ConfigOption[int] = ConfigOption(
        key="model-cache.max-entries",
        config_type=int,
        default=1000,
        check=_positive,
        description="Replies the cache keeps per task slot (least recently used go first).",
    )
    ANY_TEMPERATURE: ConfigOption[bool] = ConfigOption(
        key="model-cache.any-temperature",
        config_type=bool,
        default=False,
        description="Cache replies whatever the temperature (also unset), not only at 0.",
    )


register_options(BudgetOptions)
register_options(ModelCacheOptions)
