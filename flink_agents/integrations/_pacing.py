"""Rate governance of a model connection: declared limits, pacing, adaptive concurrency.

Every attempt of a model call (the first one and each retry) passes a connection's
:class:`Governor` (one per connection instance, so one per task slot) before it is sent:

- **Declared limits** (``requests_per_minute``, ``tokens_per_minute``,
  ``max_concurrent_requests`` on the connection) are for the whole job; each subtask paces
  at its share, the limit divided by the parallelism of the operator, which the runtime
  tells the connection (:class:`~flink_agents.api.resource.ResourcePlacement`; 1 in the
  local environment).
- **Pacing, not rejection.** Requests and tokens are paced by a token bucket in its virtual
  time form (GCRA with costs: :class:`_Pacer`). Attempts that hold a place wait for their
  start in FIFO order; the first one sleeps (``asyncio.sleep``, ``time.sleep`` in a sync
  ``chat``) until the buckets let it go, re-reading them at least every 0.1 s, then hands
  its turn on: no thread is held, no other call blocked, and nothing reserved in advance.
  A bucket holds :data:`BURST_SECONDS` (half a second) of a limit: providers enforce
  per-minute quotas over short windows (about a second); half of it lets the pacer catch up
  a stall of the job (a loaded machine) of up to about half a second, and the other half of
  the provider's bucket absorbs the jitter between our send and its arrival. Tokens (prompt +
  completion) are estimated when the attempt starts (:func:`estimate_prompt_tokens`, a
  learned prompt ratio and completion size) and corrected from the reply's usage.
- **Adaptive concurrency and rate.** A throttling answer (429, Anthropic's 529, Ollama's
  busy 503, Bedrock's ``ThrottlingException``...: ``CallFailure.throttled``) pauses the
  connection until the server's ``Retry-After`` / ``retry-after-ms`` / reset time
  (:func:`retry_delay`) and, once per round of calls (a throttle of an attempt sent before
  the last decrease does not count again), lowers the concurrency limit (x0.75) and the
  request rate (to 0.9 x the rate the server accepted over the last 2 s, at most 0.8 x the
  rate before). Successes raise the concurrency limit again (+1 per success until the first
  throttle, then +1/limit) and probe the rate up by 3 % per second while the rate binds.
  Retries go through the same pacer after the pause, spaced out: no retry storm.

Nothing here knows a host: the local environment and the Flink host pace the same way.
See docs/rate-limits.md.
"""

from __future__ import annotations

import asyncio
import collections
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, Field, PrivateAttr

from flink_agents.integrations._pacing_inputs import (
    CallReport,
    embedding_usage,
    estimate_prompt_tokens,
    estimate_text_tokens,
    retry_delay,
    with_report,
)

__all__ = [
    "CallReport",
    "Governor",
    "Permit",
    "RateLimitSettings",
    "embedding_usage",
    "estimate_prompt_tokens",
    "estimate_text_tokens",
    "retry_delay",
    "with_report",
]

#: Seconds of a limit the pacer lets go at once (the bucket's size): half of the second
#: providers commonly allow. A stall of the job (nothing sent for a moment) is caught up
#: by up to this much, and the other half of the provider's bucket absorbs the jitter
#: between our sends and their arrivals. Measured against QuotaServer's one-second bucket
#: on a loaded machine (load 20 on 2 cores): the arrivals used at most 0.66 s of it with
#: this size (0.40 s with a quarter second, which lost the stalls beyond 0.15 s for good).
BURST_SECONDS = 0.5
#: Seconds over which the rate the server accepted is measured, when it throttles.
MEASURE_SECONDS = 2.0
#: Fewest answers a measured accepted rate is based on.
MIN_SAMPLES = 8
#: Factor applied to the measured accepted rate after a throttle.
MEASURED_FACTOR = 0.9
#: Most a throttle leaves of the rate before it.
RATE_DECREASE = 0.8
#: Relative increase of a learned rate per second, while it binds.
RATE_PROBE = 0.03
#: Factor applied to the concurrency limit after a throttle.
CONCURRENCY_DECREASE = 0.75
#: Concurrency limit at the start when nothing is declared (slow start from there).
SLOW_START = 4
#: Lowest learned rate (requests per second): one a minute.
MIN_RATE = 1.0 / 60.0
#: Longest connection-wide pause a server's answer may ask for (seconds).
MAX_PAUSE = 600.0
#: Longest sleep of the attempt first in line before it reads the pacers again (a refund, a
#: pause or a lower rate may have changed its start), in seconds.
RESCHEDULE_SLICE = 0.1
#: Completion tokens assumed for a chat call before any reply told better.
COMPLETION_GUESS = 256


# -- the pacer ---------------------------------------------------------------------------------


class _Pacer:
    """A token bucket of ``rate`` units per second and :data:`BURST_SECONDS` of size, in its
    virtual time form: ``tat`` is when the bucket is full again. A cost that fits may start
    when the bucket holds it; a larger one when the bucket is full (it then owes the rest,
    which delays the next). Not thread safe (the governor holds its lock)."""

    __slots__ = ("rate", "tat")

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.tat = -math.inf

    def earliest(self, cost: float) -> float:
        """The earliest start for ``cost`` (``-inf``: at once; no rate: at once)."""
        if not self.rate:
            return -math.inf
        size = self.rate * BURST_SECONDS
        return self.tat - BURST_SECONDS + min(cost, size) / self.rate

    def commit(self, start: float, cost: float) -> None:
        """Take ``cost`` at ``start``."""
        if self.rate:
            self.tat = max(self.tat, start) + cost / self.rate

    def adjust(self, cost: float, now: float) -> None:
        """Take ``cost`` more (a usage above its estimate) or give it back (below)."""
        if self.rate and cost:
            tat = self.tat + cost / self.rate
            # A refund never makes the bucket fuller than full.
            self.tat = max(tat, min(self.tat, now)) if cost < 0 else tat


# -- slots: a semaphore with a changing limit, for any thread and loop ----------------------------


class _Slots:
    """A FIFO counting semaphore usable from any thread and event loop whose limit may
    change. Async waiters park on a future of their own loop (woken through
    ``call_soon_threadsafe``), sync ones on a ``threading.Event``; a place is counted as
    taken when it is handed to a waiter."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.in_use = 0
        self._lock = threading.Lock()
        self._waiters: collections.deque[Any] = collections.deque()

    def _grants(self) -> list[Any]:
        granted = []
        while self._waiters and self.in_use < self.limit:
            self.in_use += 1
            granted.append(self._waiters.popleft())
        return granted

    def _wake(self, granted: list[Any]) -> None:
        for waiter in granted:
            if isinstance(waiter, threading.Event):
                waiter.set()
                continue
            loop, fut = waiter
            try:
                loop.call_soon_threadsafe(self._grant, fut)
            except RuntimeError:  # that loop is closed: its waiter is gone
                self.release()

    def _grant(self, fut: asyncio.Future[None]) -> None:
        if fut.cancelled():
            self.release()  # the waiter gave up after the place was handed to it
        else:
            fut.set_result(None)

    def set_limit(self, limit: int) -> None:
        """Change the limit (places in use above a lower limit are not taken back)."""
        with self._lock:
            self.limit = max(1, limit)
            granted = self._grants()
        self._wake(granted)

    def release(self) -> None:
        """Give a place back."""
        with self._lock:
            self.in_use -= 1
            granted = self._grants()
        self._wake(granted)

    async def acquire(self) -> None:
        """Wait for a place without blocking the event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self.in_use < self.limit and not self._waiters:
                self.in_use += 1
                return
            fut: asyncio.Future[None] = loop.create_future()
            entry = (loop, fut)
            self._waiters.append(entry)
        try:
            await fut
        except asyncio.CancelledError:
            with self._lock:
                try:
                    self._waiters.remove(entry)
                    queued = True
                except ValueError:
                    queued = False
            if not queued and fut.done() and not fut.cancelled():
                self.release()  # granted, then cancelled before it was used
            raise

    def acquire_sync(self, timeout: float | None = None) -> None:
        """Block the calling thread until a place is free.

        Raises:
            TimeoutError: no place within ``timeout`` seconds (None: wait as long as it
                takes).
        """
        with self._lock:
            if self.in_use < self.limit and not self._waiters:
                self.in_use += 1
                return
            event = threading.Event()
            self._waiters.append(event)
        if event.wait(timeout):
            return
        with self._lock:
            try:
                self._waiters.remove(event)
            except ValueError:
                return  # handed to it just now: it is taken
        raise TimeoutError


# -- the governor ----------------------------------------------------------------------------------


@dataclass
class Permit:
    """One attempt let through by a :class:`Governor`.

    Attributes:
        started: when it was let through (``time.monotonic()``).
        waited: seconds it waited (for a place and its start time).
        prompt_estimate: the raw prompt estimate it was given (tokens).
        tokens: the tokens it reserved (prompt and completion estimates).
    """

    started: float
    waited: float
    prompt_estimate: int
    tokens: int


class _Metrics:
    """The governor's metrics in a connection's metric group (any
    :class:`~flink_agents.api.metric_group.MetricGroup`)."""

    def __init__(self, group: Any) -> None:
        self.waiting = group.get_gauge("callsWaiting")
        self.limit = group.get_gauge("concurrencyLimit")
        self.rate = group.get_gauge("requestsPerMinuteLimit")
        self.tokens = group.get_gauge("tokensPerMinute")
        self.requests = group.get_gauge("requestsPerMinute")
        self.throttled = group.get_counter("numOfThrottled")
        self.paced = group.get_counter("numOfCallsWaited")
        self.wait_ms = group.get_histogram("rateWaitMs")
        self.waiting.update(0)
        self.tokens.update(0)
        self.requests.update(0)


@dataclass
class _Window:
    """Sums over the last ``span`` seconds (tokens or requests per minute)."""

    span: float
    items: collections.deque[tuple[float, int]] = field(default_factory=collections.deque)
    total: int = 0

    def add(self, now: float, amount: int) -> int:
        self.items.append((now, amount))
        self.total += amount
        return self.trim(now)

    def trim(self, now: float) -> int:
        items = self.items
        while items and now - items[0][0] > self.span:
            self.total -= items.popleft()[1]
        return self.total

    def count_between(self, start: float, end: float) -> int:
        return sum(1 for t, _ in self.items if start <= t <= end)


class Governor:
    """Pacing and adaptive concurrency of one connection in one task slot (thread safe,
    usable from any event loop and from threads).

    Args:
        requests_per_second: this slot's share of the declared request rate (None: none).
        tokens_per_second: this slot's share of the declared token rate (None: none).
        concurrency: most attempts in flight at once in this slot.
        adaptive: learn from throttling answers (pause, lower concurrency and rate); off,
            a throttled attempt is only retried with backoff.
        default_pause: connection-wide pause after a throttling answer without a delay.
        completion_guess: completion tokens assumed before replies tell (0 for embeddings).
        metrics: the connection's metric group (None: no metrics).
        clock: the monotonic clock (tests pass their own).
    """

    def __init__(
        self,
        *,
        requests_per_second: float | None = None,
        tokens_per_second: float | None = None,
        concurrency: int = 16,
        adaptive: bool = True,
        default_pause: float = 0.5,
        completion_guess: int = COMPLETION_GUESS,
        metrics: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.declared_rate = requests_per_second
        self.learned_rate: float | None = None
        self.cap = max(1, concurrency)
        self.adaptive = adaptive
        self.default_pause = default_pause
        self.clock = clock
        declared = requests_per_second is not None or tokens_per_second is not None
        # Slow start only when nothing says how much the provider takes.
        self.slow_start = adaptive and not declared
        self.limit = float(min(self.cap, SLOW_START) if self.slow_start else self.cap)
        self._lock = threading.Lock()
        self._requests = _Pacer(requests_per_second)
        self._tokens = _Pacer(tokens_per_second)
        self._slots = _Slots(int(self.limit))
        self.pause_until = -math.inf
        self.last_decrease = -math.inf
        self._last_probe = clock()
        self._last_paced = -math.inf
        self._accepted = _Window(60.0)
        self._first_start: float | None = None
        #: Typical seconds from an attempt's start to its answer (smoothed).
        self._latency = 0.0
        #: Whether an attempt sent after the last pause succeeded (a decrease waits for it:
        #: one decrease per round under the new rate).
        self._recovered = True
        #: Requests per second a learned rate rises per second while it binds.
        self._probe_step: float | None = None
        self._step_sound = False
        #: Attempts waiting for their start, FIFO (the first one waits on the clock).
        self._queue: collections.deque[Any] = collections.deque()
        self._used = _Window(60.0)
        self._prompt_ratio = 1.0
        self._completion = float(completion_guess)
        self.waiting = 0
        self.throttles = 0
        self._metrics = _Metrics(metrics) if metrics is not None else None
        self._publish()

    # -- what it paces at ----------------------------------------------------------------------
    @property
    def rate(self) -> float | None:
        """Requests per second this slot paces at (declared share or learned), or None."""
        rates = [r for r in (self.declared_rate, self.learned_rate) if r is not None]
        return min(rates) if rates else None

    @property
    def in_use(self) -> int:
        """Attempts in flight."""
        return self._slots.in_use

    def estimate(self, prompt_estimate: int) -> int:
        """Tokens to reserve for a call whose prompt was estimated at ``prompt_estimate``."""
        return max(1, round(prompt_estimate * self._prompt_ratio + self._completion))

    # -- acquiring -----------------------------------------------------------------------------
    # -- the start queue -------------------------------------------------------------------
    # Attempts that hold a place wait for their start in FIFO order. Only the head of the
    # queue waits on the clock, re-reading the pacers every RESCHEDULE_SLICE at most: a
    # token refund, a pause or a lower rate applies to it at once, and nothing is reserved
    # in advance (a reservation made at an overestimate would keep the calls behind it
    # late). The head commits its start to the pacers when it goes and hands the head on.

    def _earliest(self, tokens: int) -> float:
        """When an attempt of ``tokens`` may start (under the lock)."""
        return max(self.pause_until, self._requests.earliest(1), self._tokens.earliest(tokens))

    def _commit(self, start: float, tokens: int) -> None:
        """An attempt of ``tokens`` starts at ``start`` (under the lock)."""
        self._requests.commit(start, 1)
        self._tokens.commit(start, tokens)

    def _try_start(self, raw: int, taken: list[int]) -> float:
        """Start now if the pacers allow (then 0; ``taken`` gets the tokens reserved), else
        the seconds to wait (under the lock). The tokens are estimated at the start, from
        what replies have told so far (not when the attempt began to wait)."""
        now = self.clock()
        tokens = self.estimate(raw) if self._tokens.rate else 0
        delay = self._earliest(tokens) - now
        if delay <= 0:
            self._commit(now, tokens)
            taken.append(tokens)
            return 0.0
        self._last_paced = now
        return delay

    def _leave_queue(self, entry: Any) -> Any:
        """Remove ``entry``; returns the waiter to wake when it was the head (under the
        lock; the caller wakes it after letting the lock go)."""
        queue = self._queue
        if queue and queue[0] is entry:
            queue.popleft()
            return queue[0] if queue else None
        try:
            queue.remove(entry)
        except ValueError:
            pass
        return None

    @staticmethod
    def _wake(waiter: Any) -> None:
        """Tell the next waiter it is the head now."""
        if waiter is None:
            return
        if isinstance(waiter, threading.Event):
            waiter.set()
            return
        loop, turn = waiter
        try:
            loop.call_soon_threadsafe(_set_turn, turn)
        except RuntimeError:  # its loop is closed: the waiter is gone with it
            pass

    async def _start(self, raw: int) -> int:
        """Wait (on the loop) for this attempt's turn and start time, then start; returns
        the tokens reserved."""
        loop = asyncio.get_running_loop()
        taken: list[int] = []
        with self._lock:
            if not self._queue and self._try_start(raw, taken) == 0:
                return taken[0]
            entry = (loop, loop.create_future())
            self._queue.append(entry)
            head = self._queue[0] is entry
        nxt = None
        try:
            if not head:
                await entry[1]
            while True:
                with self._lock:
                    delay = self._try_start(raw, taken)
                    if delay == 0:
                        nxt = self._leave_queue(entry)
                        break
                await asyncio.sleep(min(delay, RESCHEDULE_SLICE))
        except BaseException:
            with self._lock:
                nxt = self._leave_queue(entry)
            self._wake(nxt)
            raise
        self._wake(nxt)
        return taken[0]

    def _start_sync(self, raw: int, end: float | None = None) -> int:
        """:meth:`_start` for a blocking caller (``end``: give up with ``TimeoutError`` at
        this ``time.monotonic()``)."""
        taken: list[int] = []
        with self._lock:
            if not self._queue and self._try_start(raw, taken) == 0:
                return taken[0]
            entry = threading.Event()
            self._queue.append(entry)
            if self._queue[0] is entry:
                entry.set()
        nxt = None
        try:
            if not entry.wait(None if end is None else max(0.0, end - time.monotonic())):
                raise TimeoutError
            while True:
                with self._lock:
                    delay = self._try_start(raw, taken)
                    if delay == 0:
                        nxt = self._leave_queue(entry)
                        break
                if end is not None:
                    left = end - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    delay = min(delay, left)
                time.sleep(min(delay, RESCHEDULE_SLICE))
        except BaseException:
            with self._lock:
                nxt = self._leave_queue(entry)
            self._wake(nxt)
            raise
        self._wake(nxt)
        return taken[0]

    def _enter(self) -> float:
        with self._lock:
            self.waiting += 1
        self._publish_waiting()
        return self.clock()

    def _leave(self, since: float) -> float:
        now = self.clock()
        with self._lock:
            self.waiting -= 1
        waited = now - since
        if self._metrics is not None:
            self._publish_waiting()
            self._metrics.wait_ms.update(round(waited * 1000.0, 1))
            if waited > 0.001:
                self._metrics.paced.inc()
        return waited

    async def acquire(self, prompt_estimate: int | None = None) -> Permit:
        """Wait (without blocking the loop) until an attempt may be sent.

        Args:
            prompt_estimate: the prompt's estimated tokens (:func:`estimate_prompt_tokens`).
        """
        raw = max(0, int(prompt_estimate or 0))
        since = self._enter()
        try:
            await self._slots.acquire()
            try:
                tokens = await self._start(raw)
            except BaseException:
                self._slots.release()
                raise
        finally:
            waited = self._leave(since)
        return Permit(started=self.clock(), waited=waited, prompt_estimate=raw, tokens=tokens)

    def acquire_sync(
        self, prompt_estimate: int | None = None, *, timeout: float | None = None
    ) -> Permit:
        """:meth:`acquire` for a blocking caller (a sync ``chat`` on a worker thread).

        Args:
            prompt_estimate: the prompt's estimated tokens (:func:`estimate_prompt_tokens`).
            timeout: most seconds to wait (None: as long as it takes). The async
                :meth:`acquire` is bounded by cancelling it.

        Raises:
            TimeoutError: the attempt could not start within ``timeout``; it holds nothing.
        """
        raw = max(0, int(prompt_estimate or 0))
        end = None if timeout is None else time.monotonic() + timeout
        since = self._enter()
        try:
            self._slots.acquire_sync(timeout)
            try:
                tokens = self._start_sync(raw, end)
            except BaseException:
                self._slots.release()
                raise
        finally:
            waited = self._leave(since)
        return Permit(started=self.clock(), waited=waited, prompt_estimate=raw, tokens=tokens)

    # -- outcomes ------------------------------------------------------------------------------
    def succeeded(
        self,
        permit: Permit,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> None:
        """An attempt got its answer; ``prompt_tokens`` / ``completion_tokens`` from the
        reply's usage, when it has one (they correct the estimates)."""
        now = self.clock()
        with self._lock:
            used = None
            if prompt_tokens is not None or completion_tokens is not None:
                prompt, completion = int(prompt_tokens or 0), int(completion_tokens or 0)
                used = prompt + completion
                if permit.prompt_estimate > 0 and prompt > 0:
                    ratio = prompt / permit.prompt_estimate
                    self._prompt_ratio = 0.8 * self._prompt_ratio + 0.2 * ratio
                self._completion = 0.8 * self._completion + 0.2 * completion
                if permit.tokens:
                    self._tokens.adjust(used - permit.tokens, now)
            self._accepted.add(permit.started, 1)
            if permit.started >= self.last_decrease:
                self._recovered = True
            if self._first_start is None:
                self._first_start = permit.started
            self._latency = 0.8 * self._latency + 0.2 * (now - permit.started)
            if used is not None:
                self._used.add(now, used)
            if self.adaptive:
                if self.slow_start:
                    self.limit = min(float(self.cap), self.limit + 1.0)
                else:
                    self.limit = min(float(self.cap), self.limit + 1.0 / self.limit)
                self._probe(now)
            limit = int(self.limit)
        self._slots.release()
        if limit != self._slots.limit:
            self._slots.set_limit(limit)
        self._publish()

    def _probe(self, now: float) -> None:
        """Raise a learned rate while it binds (calls waited for it in the last second)."""
        elapsed, self._last_probe = now - self._last_probe, now
        learned, step = self.learned_rate, self._probe_step
        if learned is None or step is None or now - self._last_paced > 1.0:
            return
        # Additive (a step fixed when the rate was first learned): subtasks that share a
        # quota, each lowering its rate by the same factor when throttled, converge to
        # equal shares (a multiplicative probe would keep any unfair split).
        learned += step * min(elapsed, 1.0)
        if self.declared_rate is not None and learned >= self.declared_rate:
            self.learned_rate = None  # back at the declared share
        else:
            self.learned_rate = learned
        self._requests.rate = self.rate

    def throttled(self, permit: Permit, retry_after: float | None = None) -> None:
        """An attempt got a throttling answer (``retry_after``: what the server asked)."""
        now = self.clock()
        with self._lock:
            self.throttles += 1
            if self.adaptive:
                pause = self.default_pause if retry_after is None else retry_after
                self.pause_until = max(self.pause_until, now + min(pause, MAX_PAUSE))
                if permit.started >= self.last_decrease and self._recovered:
                    self._decrease(now)
                # No burst after the pause: the bucket starts empty there.
                rate = self._requests.rate
                if rate:
                    self._requests.tat = max(
                        self._requests.tat, self.pause_until + BURST_SECONDS - 1.0 / rate
                    )
            limit = int(self.limit)
        if self._metrics is not None:
            self._metrics.throttled.inc()
        self._slots.release()
        if limit != self._slots.limit:
            self._slots.set_limit(limit)
        self._publish()

    def _measured(self, now: float) -> tuple[float, bool]:
        """Requests per second the server accepted lately (0: too little to tell), and
        whether that is a measurement over enough answers (else a first guess).

        Successes counted by their start, over a window that ends one typical latency ago
        (later starts have not answered yet) and spans :data:`MEASURE_SECONDS`, or the time
        since the first answer when that is shorter; at least :data:`MIN_SAMPLES` of them.
        """
        first = self._first_start
        if first is None:
            return 0.0, False
        self._accepted.trim(now)
        end = now - self._latency
        span = min(MEASURE_SECONDS, end - first)
        count = self._accepted.count_between(end - span, end) if span >= 0.2 else 0
        if count >= MIN_SAMPLES:
            return count / span, True
        # Too early to tell (the first answers): the answers so far over the time so far.
        answered = len(self._accepted.items)
        return (answered / (now - first) if answered >= 2 and now > first else 0.0), False

    def _decrease(self, now: float) -> None:
        """One decrease per round: attempts sent before it do not lower things again."""
        self.last_decrease = now
        self._recovered = False
        self.slow_start = False
        self.limit = max(1.0, self.limit * CONCURRENCY_DECREASE)
        measured, sound = self._measured(now)
        current = self.rate
        candidates = []
        if measured > 0:
            candidates.append(measured * MEASURED_FACTOR)
        if current is not None:
            candidates.append(current * RATE_DECREASE)
        if candidates:
            learned = max(MIN_RATE, min(candidates))
            if self._probe_step is None or (sound and not self._step_sound):
                # Set once from a sound measurement (a first guess sets it for the time
                # being): the same step in every subtask is what makes their shares even.
                self._probe_step = RATE_PROBE * learned
                self._step_sound = sound
            if self.declared_rate is None or learned < self.declared_rate:
                self.learned_rate = learned
        rate = self._requests.rate = self.rate
        if rate:
            # The bucket starts empty after the pause: no burst at the new rate.
            self._requests.tat = max(now, self.pause_until) + BURST_SECONDS - 1.0 / rate
        self._last_probe = now

    def failed(self, permit: Permit) -> None:
        """An attempt failed otherwise (an error, a timeout, a cancellation)."""
        self._slots.release()

    # -- metrics -------------------------------------------------------------------------------
    def _publish_waiting(self) -> None:
        if self._metrics is not None:
            self._metrics.waiting.update(self.waiting)

    def _publish(self) -> None:
        metrics = self._metrics
        if metrics is None:
            return
        now = self.clock()
        metrics.limit.update(int(self.limit))
        rate = self.rate
        metrics.rate.update(round(rate * 60.0, 1) if rate is not None else 0)
        metrics.tokens.update(self._used.trim(now))
        metrics.requests.update(self._accepted.trim(now))


def _set_turn(turn: asyncio.Future[None]) -> None:
    if not turn.done():
        turn.set_result(None)


# -- the settings every governed connection has ------------------------------------------------


class RateLimitSettings(BaseModel):
    """Declared limits of a connection (for the whole job) and the adaptive switch.

    Attributes:
        requests_per_minute: requests the provider allows per minute (for this API key and
            model: what the job may use of it). Each subtask paces at its share.
        tokens_per_minute: tokens (prompt + completion) the provider allows per minute.
        max_concurrent_requests: requests the job may have in flight at once (each subtask
            at most its share, at least 1); ``max_concurrency`` also bounds a slot.
        adaptive: learn from throttling answers (429/529/busy): pause for the server's
            ``Retry-After``, lower concurrency and rate, probe back up. Off: a throttled
            attempt is retried with backoff like any other failure (what earlier versions
            did).
        max_throttled_retries: further attempts after throttling answers, counted apart
            from ``max_retries`` (paced attempts that were throttled are not failures of
            the call).
    """

    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    max_concurrent_requests: int | None = Field(default=None, ge=1)
    adaptive: bool = True
    max_throttled_retries: int = Field(default=10, ge=0)

    _governor: Governor | None = PrivateAttr(default=None)
    _governor_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    #: Completion tokens assumed before replies tell (embeddings set 0).
    COMPLETION_GUESS: ClassVar[int] = COMPLETION_GUESS

    @property
    def governed(self) -> bool:
        """Whether calls are paced or adapted at all (else only ``max_concurrency``)."""
        return (
            self.adaptive
            or self.requests_per_minute is not None
            or (self.tokens_per_minute is not None)
        )

    @property
    def governor(self) -> Governor:
        """This connection's governor (made on first use, with the share the runtime gave
        the connection: see :class:`~flink_agents.api.resource.ResourcePlacement`)."""
        governor = self._governor
        if governor is None:
            with self._governor_lock:
                governor = self._governor
                if governor is None:
                    governor = self._governor = self._make_governor()
        return governor

    def _make_governor(self) -> Governor:
        context = getattr(self, "placement", None)
        share = max(1, int(getattr(context, "parallelism", 1) or 1))
        cap = int(getattr(self, "max_concurrency", 16))
        if self.max_concurrent_requests is not None:
            cap = min(cap, max(1, self.max_concurrent_requests // share))
        rpm, tpm = self.requests_per_minute, self.tokens_per_minute
        return Governor(
            requests_per_second=rpm / 60.0 / share if rpm is not None else None,
            tokens_per_second=tpm / 60.0 / share if tpm is not None else None,
            concurrency=cap,
            adaptive=self.adaptive,
            default_pause=float(getattr(self, "retry_initial_backoff", 0.5)) or 0.5,
            completion_guess=int(self.COMPLETION_GUESS),
            metrics=getattr(context, "metric_group", None),
        )
