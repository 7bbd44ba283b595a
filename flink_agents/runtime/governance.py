"""Token budgets and the response cache of the built-in chat action, per task slot.

One :class:`ModelGovernance` per runner (only when a budget or the cache is configured:
``flink_agents.api.governance``). The one place a model is called
(``plan/actions/calls.py: call_model``) asks its run's :class:`RunGuard` (through
``RunContext.model_guard``) before the call (:meth:`RunGuard.before_call`: a spent budget
raises or waits), to wrap the durable call with the cache (:meth:`RunGuard.cached`), and
after it (:meth:`RunGuard.after_call`: the reply's tokens counted).

Where the counts live:

- a key's tokens of the current UTC day: in its short-term memory under the reserved path
  :data:`KEY_BUDGET_PATH` (hidden from ``get_field_names``, refused to ``set``). A run adds
  its calls' tokens there when it ends (``AgentRunner`` commits it with the run's other
  memory changes), so the count is committed exactly once with the run's outputs; a
  replayed run answers its calls from the durable log and counts their tokens again,
  which is right, as the first attempt's changes were never committed;
- the job's tokens of the current UTC hour: in this object, per subtask, against the
  subtask's share of the budget (budget / parallelism). In thread mode the bridge jar's
  operator keeps each subtask's count in its operator state with every checkpoint
  (:meth:`ModelGovernance.job_snapshot`) and hands them back after a restore
  (:meth:`ModelGovernance.restore_job`), so the hour's count goes on; calls of runs in
  flight at the checkpoint count again when their runs replay them (the count errs high,
  never low). Process mode and the local environment start the hour's count again.

Paced waits (``pause``) hold no thread: ``asyncio.sleep`` on the run's loop.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import hashlib
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.governance import BudgetExhausted, BudgetOptions, ModelCacheOptions
from flink_agents.errors import BudgetExhaustedError
from flink_agents.runtime.memory import RESERVED_PREFIX
from flink_agents.runtime.metric_groups import SimpleMetricGroup
from flink_agents.runtime.observability import Noted

if TYPE_CHECKING:
    from flink_agents.runtime.core.context import _Run

log = logging.getLogger("flink_agents.runtime")

#: Where a key's token count of the day lives in its short-term memory (a flat path: no
#: parent object, so it never shows among the memory's fields).
KEY_BUDGET_PATH = f"{RESERVED_PREFIX}.budget"

#: The wall clock of budget windows (tests move it).
_now: Callable[[], float] = time.time


def _day(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d")


def _day_end(t: float) -> float:
    return (int(t // 86400) + 1) * 86400.0


def _hour_end(t: float) -> float:
    return (int(t // 3600) + 1) * 3600.0


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def reply_tokens(reply: Any) -> int:
    """Tokens a reply's ``usage`` reports (0: none reported, or a cached reply)."""
    extra = getattr(reply, "extra_args", None)
    usage = extra.get("usage") if isinstance(extra, dict) else None
    if not isinstance(usage, Mapping):
        return 0
    total = usage.get("total_tokens")
    if total is None:
        total = int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
    return int(total or 0)


class ModelGovernance:
    """Budgets and cache of one task slot (see the module).

    Args:
        config: the agent configuration.
        metrics: the agent metric group.
        parallelism: returns the parallelism of the agent's operator (read when a window
            starts: the host tells the runner after it is made).
    """

    def __init__(
        self,
        config: AgentConfiguration,
        metrics: SimpleMetricGroup,
        parallelism: Callable[[], int] = lambda: 1,
    ) -> None:
        self.key_budget: int | None = config.get(BudgetOptions.TOKENS_PER_KEY_PER_DAY)
        self.job_budget: int | None = config.get(BudgetOptions.TOKENS_PER_JOB_PER_HOUR)
        self.on_key: BudgetExhausted = config.get(BudgetOptions.ON_KEY_EXHAUSTED)
        self.on_job: BudgetExhausted = config.get(BudgetOptions.ON_JOB_EXHAUSTED)
        self.cache_enabled: bool = config.get(ModelCacheOptions.ENABLED)
        self.cache_size: int = config.get(ModelCacheOptions.MAX_ENTRIES)
        self.any_temperature: bool = config.get(ModelCacheOptions.ANY_TEMPERATURE)
        self._parallelism = parallelism
        self._lock = threading.Lock()
        self._job_window_end = 0.0
        self._job_tokens = 0
        self._cache: collections.OrderedDict[str, ChatMessage] = collections.OrderedDict()
        #: Cacheable requests in flight, by cache key (their futures give the answer).
        self.pending: dict[str, asyncio.Future[ChatMessage | None]] = {}
        self.paused = 0
        self.exhausted = metrics.get_counter("numOfBudgetExhausted")
        metrics.get_gauge("callsPausedForBudget").set_source(lambda: self.paused)
        if self.job_budget is not None:
            metrics.get_gauge("budgetJobTokensLeft").set_source(self.job_tokens_left)
        self.hits = metrics.get_counter("modelCacheHits")
        self.misses = metrics.get_counter("modelCacheMisses")
        if self.cache_enabled:
            metrics.get_gauge("modelCacheSize").set_source(lambda: len(self._cache))

    @staticmethod
    def configured(config: AgentConfiguration) -> bool:
        """Whether ``config`` asks for a budget or the cache (else no governance object)."""
        return (
            config.get(BudgetOptions.TOKENS_PER_KEY_PER_DAY) is not None
            or config.get(BudgetOptions.TOKENS_PER_JOB_PER_HOUR) is not None
            or bool(config.get(ModelCacheOptions.ENABLED))
        )

    def guard(self, run: _Run, action: str) -> RunGuard:
        """The guard of one action execution of ``run``."""
        return RunGuard(self, run, action)

    # -- the job's budget ---------------------------------------------------------------------
    def job_share(self) -> int | None:
        """This subtask's share of the job's hourly budget."""
        if self.job_budget is None:
            return None
        return max(1, self.job_budget // max(1, self._parallelism()))

    def _job_used(self, now: float) -> int:
        if now >= self._job_window_end:
            self._job_window_end = _hour_end(now)
            self._job_tokens = 0
        return self._job_tokens

    def job_tokens_left(self) -> int:
        """Tokens of this subtask's share left in the current hour (the metric)."""
        share = self.job_share()
        if share is None:
            return 0
        with self._lock:
            return max(0, share - self._job_used(_now()))

    def count_job(self, tokens: int) -> None:
        """Add a call's tokens to the hour's count."""
        if self.job_budget is None or tokens <= 0:
            return
        with self._lock:
            self._job_used(_now())
            self._job_tokens += tokens

    def job_snapshot(self, subtask: int, parallelism: int) -> str | None:
        """This subtask's count of the job's hourly budget, for the operator's state (JSON;
        None: no job budget)."""
        if self.job_budget is None:
            return None
        with self._lock:
            self._job_used(_now())
            entry = {
                "subtask": subtask,
                "parallelism": parallelism,
                "window_end": self._job_window_end,
                "tokens": self._job_tokens,
            }
        return json.dumps(entry)

    def restore_job(self, entries: Sequence[str], subtask: int, parallelism: int) -> None:
        """Go on with the hour's count that a checkpoint holds: ``entries`` are every old
        subtask's :meth:`job_snapshot` (Flink's union list state hands each subtask all of
        them). At the same parallelism a subtask takes its own count; after a rescale each
        takes an equal share of the job's (their sum over the new parallelism, rounded up).
        Counts of an hour that has passed are dropped."""
        if self.job_budget is None:
            return
        now = _now()
        window_end = _hour_end(now)
        current: list[dict[str, Any]] = []
        for raw in entries:
            try:
                entry = json.loads(raw)
            except (TypeError, ValueError):
                log.warning("an unreadable job budget count in operator state is ignored")
                continue
            if isinstance(entry, dict) and entry.get("window_end") == window_end:
                current.append(entry)
        if not current:
            return
        if all(e.get("parallelism") == parallelism for e in current):
            tokens = sum(int(e.get("tokens") or 0) for e in current if e.get("subtask") == subtask)
        else:
            total = sum(int(e.get("tokens") or 0) for e in current)
            tokens = -(-total // max(1, parallelism))
        with self._lock:
            self._job_window_end = window_end
            self._job_tokens = tokens
        log.info(
            "job budget: subtask %d goes on with %d tokens of this hour (restored)", subtask, tokens
        )

    # -- the cache ------------------------------------------------------------------------------
    def cache_get(self, key: str) -> ChatMessage | None:
        with self._lock:
            reply = self._cache.get(key)
            if reply is not None:
                self._cache.move_to_end(key)
        return reply

    def cache_put(self, key: str, reply: ChatMessage) -> None:
        with self._lock:
            self._cache[key] = reply
            self._cache.move_to_end(key)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def cache_key(
        self, setup: Any, messages: Sequence[ChatMessage], options: Mapping[str, Any]
    ) -> str | None:
        """The cache key of a request, or None when it may not be cached (its temperature
        is not 0 and ``model-cache.any-temperature`` is off)."""
        merged = {**setup.model_kwargs, **options}
        prompt_args = merged.pop("prompt_args", None)
        temperature = merged.get("temperature")
        if not self.any_temperature and not (
            isinstance(temperature, (int, float)) and temperature == 0
        ):
            return None
        prepared = setup.prepare_messages(messages, prompt_args)
        material = {
            "connection": getattr(setup, "connection", None),
            "setup": type(setup).__qualname__,
            "messages": [m.model_dump(mode="json") for m in prepared],
            "tools": sorted(setup.tools or []),
            "options": merged,
        }
        text = json.dumps(material, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()


class RunGuard:
    """What ``call_model`` asks before and after a model call of one run (see the module)."""

    __slots__ = ("action", "governance", "run")

    def __init__(self, governance: ModelGovernance, run: _Run, action: str) -> None:
        self.governance = governance
        self.run = run
        self.action = action

    # -- budgets --------------------------------------------------------------------------------
    def key_used(self, now: float) -> int:
        """The key's tokens of today: committed in its memory, plus this run's so far."""
        stored = self.run.short_term._raw(KEY_BUDGET_PATH)
        committed = 0
        if isinstance(stored, Mapping) and stored.get("day") == _day(now):
            committed = int(stored.get("tokens") or 0)
        return committed + self.run.model_tokens

    def _refusal(self, now: float) -> tuple[str, int, int, float] | None:
        gov = self.governance
        if gov.key_budget is not None:
            used = self.key_used(now)
            if used >= gov.key_budget:
                return "key", used, gov.key_budget, _day_end(now)
        share = gov.job_share()
        if share is not None:
            with gov._lock:
                used = gov._job_used(now)
            if used >= share:
                return "job", used, share, gov._job_window_end
        return None

    async def before_call(self, model: str) -> None:
        """Let the call go, or (a budget is spent) raise or wait until its window resets.

        Raises:
            BudgetExhaustedError: a spent budget whose behaviour is ``error``.
        """
        gov = self.governance
        if self.run.next_call_recorded():
            return  # a replay answers from the durable log, whatever the budget says now
        while True:
            now = _now()
            refusal = self._refusal(now)
            if refusal is None:
                return
            budget, used, limit, resets_at = refusal
            behaviour = gov.on_key if budget == "key" else gov.on_job
            gov.exhausted.inc()
            option = (
                BudgetOptions.TOKENS_PER_KEY_PER_DAY
                if budget == "key"
                else BudgetOptions.TOKENS_PER_JOB_PER_HOUR
            )
            self._note(model, budget, option.key, used, limit, resets_at, behaviour)
            whose = f"key {self.run.key!r}" if budget == "key" else "the job (this subtask)"
            if behaviour is BudgetExhausted.ERROR:
                raise BudgetExhaustedError(
                    f"{whose} used {used} of its {limit} tokens ({option.key}); model "
                    f"{model!r} not called. The budget resets at {_when(resets_at)}; set "
                    f"{'budget.on-key-exhausted' if budget == 'key' else 'budget.on-job-exhausted'}"
                    " = pause to wait for it instead",
                    budget=budget,
                    used=used,
                    limit=limit,
                    resets_at=resets_at,
                    key=self.run.key,
                    action=self.action,
                )
            log.info(
                "%s used %d of its %d tokens (%s): model %r waits until %s",
                whose,
                used,
                limit,
                option.key,
                model,
                _when(resets_at),
            )
            gov.paused += 1
            try:
                await asyncio.sleep(max(0.01, resets_at - now))
            finally:
                gov.paused -= 1

    def after_call(self, reply: Any) -> None:
        """Count the reply's tokens (live or replayed from the durable log)."""
        tokens = reply_tokens(reply)
        if tokens:
            self.run.model_tokens += tokens
            self.governance.count_job(tokens)

    def _note(
        self,
        model: str,
        budget: str,
        option: str,
        used: int,
        limit: int,
        resets_at: float,
        behaviour: BudgetExhausted,
    ) -> None:
        observer = self.run.runner.observer
        info = self.run.info
        if observer is None or info is None:
            return
        observer.noted(
            Noted(
                info,
                self.action,
                "budget",
                {
                    "budget": budget,
                    "option": option,
                    "model": model,
                    "used": used,
                    "limit": limit,
                    "resetsAt": resets_at,
                    "then": behaviour.value,
                },
            )
        )

    # -- the cache --------------------------------------------------------------------------------
    def cached(
        self,
        achat: Callable[..., Awaitable[ChatMessage]],
        setup: Any,
        messages: Sequence[ChatMessage],
        options: Mapping[str, Any],
    ) -> Callable[..., Awaitable[ChatMessage]]:
        """``achat`` answered from the cache when the request may be cached (else itself).
        The wrapper keeps ``achat``'s name, so the durable log records it as the same call,
        and its owner, so observers see a model call."""
        gov = self.governance
        if not gov.cache_enabled:
            return achat
        key = gov.cache_key(setup, messages, options)
        if key is None:
            return achat

        @functools.wraps(achat)
        async def call(*args: Any, **kwargs: Any) -> ChatMessage:
            hit = gov.cache_get(key)
            if hit is None:
                # The same request in flight on this loop: its answer (one call for both).
                pending = gov.pending.get(key)
                if pending is not None and pending.get_loop() is asyncio.get_running_loop():
                    hit = await asyncio.shield(pending)
            if hit is not None:
                gov.hits.inc()
                return _as_cached(hit)
            gov.misses.inc()
            first = asyncio.get_running_loop().create_future()
            gov.pending[key] = first
            reply: ChatMessage | None = None
            try:
                reply = await achat(*args, **kwargs)
                if isinstance(reply, ChatMessage):
                    gov.cache_put(key, reply.model_copy(deep=True))
                return reply
            finally:
                if gov.pending.get(key) is first:
                    del gov.pending[key]
                # Waiters get the answer, or None (they call themselves) after a failure.
                first.set_result(reply if isinstance(reply, ChatMessage) else None)

        call.__self__ = setup  # type: ignore[attr-defined]
        return call


def commit_key_tokens(run: _Run) -> None:
    """Add the run's tokens to its key's count of the day (into the run's memory updates,
    committed with the run)."""
    if not run.model_tokens:
        return
    now = _now()
    stored = run.short_term._raw(KEY_BUDGET_PATH)
    today = _day(now)
    before = 0
    if isinstance(stored, Mapping) and stored.get("day") == today:
        before = int(stored.get("tokens") or 0)
    run.short_term._put(KEY_BUDGET_PATH, {"day": today, "tokens": before + run.model_tokens})


def _as_cached(reply: ChatMessage) -> ChatMessage:
    """A copy of a cached reply marked ``cached``; its usage moves to ``cached_usage`` (a
    cache hit costs no tokens)."""
    copy = reply.model_copy(deep=True)
    extra = dict(copy.extra_args)
    usage = extra.pop("usage", None)
    for name in ("throttled", "wait_ms", "attempts", "latency_ms"):
        extra.pop(name, None)
    extra["cached"] = True
    if usage is not None:
        extra["cached_usage"] = usage
    copy.extra_args = extra
    return copy
