"""The governor of a connection: pacing math, throttling, adaptive limits, header parsing.

The arithmetic is tested with a hand-driven clock (deterministic); the waiting with real
event loops and threads; the whole against a real quota server in test_rate_limits.py.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.integrations import _pacing as pacing
from flink_agents.integrations._pacing import (
    BURST_SECONDS,
    CallReport,
    Governor,
    _Pacer,
    _Slots,
    estimate_prompt_tokens,
    retry_delay,
)
from flink_agents.runtime.metric_groups import SimpleMetricGroup


class Clock:
    """A clock the test moves."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _starts(governor: Governor, count: int, tokens: int = 0) -> list[float]:
    """The starts of ``count`` attempts one after the other (each the head of the queue in
    turn), relative to the clock, which does not move."""
    starts = []
    for _ in range(count):
        with governor._lock:
            start = max(governor.clock(), governor._earliest(tokens))
            governor._commit(start, tokens)
            if start > governor.clock():
                governor._last_paced = governor.clock()
        starts.append(round(start - governor.clock(), 6))
    return starts


# -- the pacer ---------------------------------------------------------------------------------


def test_pacer_lets_half_a_second_go_then_spaces_calls():
    assert BURST_SECONDS == 0.5
    pacer = _Pacer(10.0)  # 10 per second, a bucket of 5: 5 at once, then one per 0.1 s
    starts = []
    for _ in range(8):
        start = max(0.0, pacer.earliest(1))
        pacer.commit(start, 1)
        starts.append(round(start, 6))
    assert starts == [0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.2, 0.3]


def test_pacer_lets_a_cost_larger_than_the_bucket_go_when_full_and_owes_the_rest():
    pacer = _Pacer(100.0)  # a 50-token bucket
    assert pacer.earliest(500) < 0  # full: at once
    pacer.commit(0.0, 500)  # 5 s of tokens
    assert pacer.earliest(10) == pytest.approx(5.0 - BURST_SECONDS + 0.1)


def test_pacer_corrections_take_more_or_give_back_but_never_overfill():
    pacer = _Pacer(10.0)
    pacer.commit(0.0, 10)  # tat 1.0
    pacer.adjust(5, now=0.0)
    assert pacer.tat == pytest.approx(1.5)
    pacer.adjust(-100, now=0.2)  # a refund down to "full now", not beyond
    assert pacer.tat == pytest.approx(0.2)
    idle = _Pacer(10.0)
    idle.commit(0.0, 1)
    idle.adjust(-1, now=5.0)  # full already: stays full
    assert idle.tat == pytest.approx(0.1)


def _paced_starts(governor: Governor, clock: Clock, until: float, stall=(0.0, 0.0)) -> list:
    """Starts of a backlog of attempts until ``until``: the head of the queue starts as soon
    as the pacer lets it, except while the job stalls (``stall``: from, to), when nothing
    runs (a loaded machine, a long GC): the head then starts when the stall ends."""
    starts = []
    while True:
        with governor._lock:
            start = max(clock.now, governor._earliest(0))
        if stall[0] <= start < stall[1]:
            start = stall[1]
        if start > until:
            return starts
        clock.now = start + 1e-9  # at its start (float rounding aside)
        with governor._lock:
            assert governor._try_start(0, []) == 0
        starts.append(round(start, 6))


def _refused_by_a_one_second_bucket(starts: list, rate: float) -> int:
    """Requests a provider holding one second of ``rate`` (QuotaServer's bucket, full at
    the start) would refuse."""
    level, last, refused = rate, starts[0], 0
    for t in starts:
        level = min(rate, level + (t - last) * rate)
        last = t
        if level >= 1 - 1e-9:
            level -= 1
        else:
            refused += 1
    return refused


def test_pacer_catches_up_a_stall_without_bursting_more_than_a_second_of_the_limit():
    # 10 calls a second; the job stalls 0.4 s (nothing runs) in the middle of a backlog.
    clock = Clock(0.0)
    smooth = _paced_starts(Governor(requests_per_second=10.0, clock=clock), clock, 4.0)
    clock = Clock(0.0)
    governor = Governor(requests_per_second=10.0, clock=clock)
    stalled = _paced_starts(governor, clock, 4.0, stall=(2.0, 2.4))
    # The stall is caught up: as many calls by 4 s as without it (a quarter second's bucket
    # lost 2-3 calls for good)...
    assert len(stalled) == len(smooth)
    assert [t for t in stalled if t < 2.0] == [t for t in smooth if t < 2.0]
    # ...by a burst when it ends, of at most the bucket (never a second of the limit), that
    # a provider's one-second bucket accepts (as the start of the job's).
    burst = sum(1 for t in stalled if t == 2.4)
    assert 1 < burst <= 10 * BURST_SECONDS < 10
    assert _refused_by_a_one_second_bucket(smooth, 10.0) == 0
    assert _refused_by_a_one_second_bucket(stalled, 10.0) == 0
    # A longer stall is lost beyond the bucket: the burst after it is the bucket, no more.
    clock = Clock(0.0)
    governor = Governor(requests_per_second=10.0, clock=clock)
    long_stall = _paced_starts(governor, clock, 6.0, stall=(2.0, 4.0))
    assert sum(1 for t in long_stall if t == 4.0) == int(10 * BURST_SECONDS + 1e-9)
    assert _refused_by_a_one_second_bucket(long_stall, 10.0) == 0


# -- declared limits ----------------------------------------------------------------------------


def test_declared_rate_is_paced_not_refused():
    clock = Clock()
    governor = Governor(requests_per_second=4.0, concurrency=100, clock=clock)
    assert _starts(governor, 5) == [0.0, 0.0, 0.25, 0.5, 0.75]  # a bucket of two


def test_declared_tokens_pace_by_the_estimate_and_are_corrected_from_usage():
    clock = Clock()
    governor = Governor(tokens_per_second=100.0, concurrency=100, completion_guess=0, clock=clock)
    assert governor.estimate(20) == 20
    # 100 tokens per second, a 50-token bucket: 40 at once, then 20 every 0.2 s.
    assert _starts(governor, 4, tokens=20) == [0.0, 0.0, 0.1, 0.3]
    permit = pacing.Permit(started=clock.now, waited=0.0, prompt_estimate=20, tokens=20)
    governor._slots.in_use = 1
    owed = governor._tokens.tat
    governor.succeeded(permit, prompt_tokens=60, completion_tokens=20)  # 80 used: 60 more
    assert governor._tokens.tat == pytest.approx(owed + 0.6)  # the next calls wait longer
    # Learned: prompts are 3x the estimate here (smoothed), completions ~4 tokens.
    assert governor.estimate(20) > 20


def test_token_refunds_let_the_next_call_go_earlier_but_not_past_the_request_rate():
    clock = Clock(0.0)
    governor = Governor(tokens_per_second=100.0, concurrency=100, completion_guess=100, clock=clock)
    assert _starts(governor, 1, tokens=100) == [0.0]  # the bucket is full: at once
    with governor._lock:
        assert governor._earliest(100) == pytest.approx(1.0)  # then 1 s owed
    # The first call used 20 of its 100 tokens: the next may go 0.8 s earlier.
    governor._slots.in_use = 1
    permit = pacing.Permit(started=0.0, waited=0.0, prompt_estimate=0, tokens=100)
    governor.succeeded(permit, prompt_tokens=0, completion_tokens=20)
    with governor._lock:
        assert governor._earliest(100) == pytest.approx(0.2)
    # With a request rate too, a refund never lets a call go before the request schedule.
    paced = Governor(requests_per_second=1.0, tokens_per_second=100.0, concurrency=100, clock=clock)
    _starts(paced, 1, tokens=100)
    paced._tokens.adjust(-100, now=0.0)
    with paced._lock:
        assert paced._earliest(100) == pytest.approx(1.0)


async def test_waiting_attempts_start_in_order_and_a_refund_applies_at_once():
    governor = Governor(tokens_per_second=200.0, concurrency=100, completion_guess=0)
    started: list[int] = []

    async def attempt(i: int) -> None:
        permit = await governor.acquire(40)  # 40 tokens: a 50-token bucket, 0.2 s apart
        started.append(i)
        governor.succeeded(permit, prompt_tokens=4, completion_tokens=0)  # used 4: refund

    await asyncio.gather(*(attempt(i) for i in range(6)))
    assert started == list(range(6))  # FIFO
    assert governor.waiting == 0 and not governor._queue


def test_share_of_the_job_wide_limit_comes_from_the_placement():
    from flink_agents.api.resource import ResourcePlacement
    from flink_agents.integrations.chat_models.openai.openai_chat_model import (
        OpenAIChatModelConnection,
    )

    conn = OpenAIChatModelConnection(
        api_base_url="http://127.0.0.1:1/v1",
        requests_per_minute=600,
        tokens_per_minute=60_000,
        max_concurrent_requests=9,
        max_concurrency=16,
    )
    group = SimpleMetricGroup("agent")
    conn.set_placement(
        ResourcePlacement(name="llm", parallelism=3, subtask_index=1, metric_group=group)
    )
    governor = conn.governor
    assert governor.declared_rate == pytest.approx(600 / 60 / 3)
    assert governor._tokens.rate == pytest.approx(60_000 / 60 / 3)
    assert governor.cap == 3 and governor.limit == 3  # 9 in flight for the job
    assert group.to_dict()["requestsPerMinuteLimit"] == 200.0


def test_bad_limits_are_clear_errors():
    from pydantic import ValidationError

    from flink_agents.integrations.chat_models.openai.openai_chat_model import (
        OpenAIChatModelConnection,
    )

    with pytest.raises(ValidationError, match="requests_per_minute"):
        OpenAIChatModelConnection(api_base_url="http://x/v1", requests_per_minute=0)
    with pytest.raises(ValidationError, match="max_concurrent_requests"):
        OpenAIChatModelConnection(api_base_url="http://x/v1", max_concurrent_requests=0)


# -- throttling -----------------------------------------------------------------------------------


def _answer(governor: Governor, clock: Clock, started: float, at: float) -> None:
    clock.now = at
    governor._slots.in_use += 1
    governor.succeeded(pacing.Permit(started=started, waited=0.0, prompt_estimate=0, tokens=0))


def _throttle(governor: Governor, clock: Clock, started: float, at: float, retry_after=None):
    clock.now = at
    governor._slots.in_use += 1
    governor.throttled(
        pacing.Permit(started=started, waited=0.0, prompt_estimate=0, tokens=0), retry_after
    )


def test_a_throttle_pauses_the_connection_for_retry_after_and_learns_the_rate():
    clock = Clock(0.0)
    governor = Governor(concurrency=16, clock=clock)
    assert governor.rate is None and governor.limit == pacing.SLOW_START
    # 30 answers over 3 s (10 per second), 0.1 s each; the limit grows in slow start.
    for i in range(30):
        _answer(governor, clock, started=i / 10, at=i / 10 + 0.1)
    assert governor.limit == 16
    _throttle(governor, clock, started=3.0, at=3.05, retry_after=1.5)
    assert governor.pause_until == pytest.approx(4.55)
    assert governor.rate == pytest.approx(10 * pacing.MEASURED_FACTOR, rel=0.1)
    assert governor.limit == pytest.approx(16 * pacing.CONCURRENCY_DECREASE)
    # Nothing starts before the pause ends, and then no burst: spaced at the new rate.
    starts = _starts(governor, 3)
    assert starts[0] == pytest.approx(1.5)
    assert starts[1] - starts[0] == pytest.approx(1 / governor.rate, abs=1e-5)


def test_one_decrease_per_round():
    clock = Clock(0.0)
    governor = Governor(concurrency=16, clock=clock)
    for i in range(30):
        _answer(governor, clock, started=i / 10, at=i / 10 + 0.1)
    _throttle(governor, clock, started=3.0, at=3.05)
    rate, limit = governor.rate, governor.limit
    # Attempts sent before the decrease come back throttled too: no further decrease.
    _throttle(governor, clock, started=3.01, at=3.06)
    _throttle(governor, clock, started=3.02, at=3.07)
    assert (governor.rate, governor.limit) == (rate, limit)
    # Sent after it, but before anything sent after it was answered: still the same round.
    _throttle(governor, clock, started=3.6, at=3.7)
    assert governor.rate == rate
    # An answer under the new regime, then a throttle: the next decrease.
    _answer(governor, clock, started=3.8, at=3.9)
    _throttle(governor, clock, started=4.0, at=4.1)
    assert governor.rate < rate
    assert governor.throttles == 4 + 1


def test_probe_raises_a_learned_rate_additively_while_it_binds():
    clock = Clock(0.0)
    governor = Governor(concurrency=16, clock=clock)
    for i in range(30):
        _answer(governor, clock, started=i / 10, at=i / 10 + 0.1)
    _throttle(governor, clock, started=3.0, at=3.05)
    learned = governor.rate
    step = governor._probe_step
    assert step == pytest.approx(pacing.RATE_PROBE * learned)
    # Calls wait for the rate (it binds): each second of answers adds one step.
    for second in range(1, 4):
        _starts(governor, 20)  # reservations past now: the rate binds
        _answer(governor, clock, started=3.05 + second - 0.1, at=3.05 + second)
    assert governor.rate == pytest.approx(learned + 3 * step, rel=0.02)
    # Not binding (nobody waited for a second): no probe.
    clock.now += 5
    before = governor.rate
    _answer(governor, clock, started=clock.now - 0.1, at=clock.now + 0.1)
    assert governor.rate == before


def test_a_declared_rate_that_is_wrong_is_lowered_and_probed_back_up_to_it():
    clock = Clock(0.0)
    governor = Governor(requests_per_second=50.0, concurrency=16, clock=clock)
    for i in range(30):
        _answer(governor, clock, started=i / 10, at=i / 10 + 0.1)
    _throttle(governor, clock, started=3.0, at=3.05)
    assert governor.learned_rate is not None and governor.rate < 50.0
    governor.learned_rate = 49.9
    _starts(governor, 50)
    _answer(governor, clock, started=3.2, at=3.5)
    assert governor.learned_rate is None and governor.rate == 50.0


def test_not_adaptive_means_no_pause_and_nothing_learned():
    clock = Clock(0.0)
    governor = Governor(concurrency=4, adaptive=False, clock=clock)
    assert governor.limit == 4
    _throttle(governor, clock, started=0.0, at=0.1, retry_after=5.0)
    assert governor.pause_until < 0 and governor.rate is None and governor.limit == 4
    assert governor.throttles == 1


def test_metrics_of_a_governor():
    clock = Clock(0.0)
    group = SimpleMetricGroup("connection")
    governor = Governor(concurrency=8, clock=clock, metrics=group)
    for i in range(10):
        clock.now = i / 10
        governor._slots.in_use += 1
        permit = pacing.Permit(started=clock.now, waited=0.02, prompt_estimate=10, tokens=0)
        governor.succeeded(permit, prompt_tokens=30, completion_tokens=10)
    _throttle(governor, clock, started=1.0, at=1.1, retry_after=0.5)
    values = group.to_dict()
    assert values["numOfThrottled"] == 1
    assert values["tokensPerMinute"] == 400 and values["requestsPerMinute"] == 10
    assert values["concurrencyLimit"] == int(governor.limit)
    assert values["requestsPerMinuteLimit"] == pytest.approx(governor.rate * 60, rel=0.01)
    assert values["callsWaiting"] == 0


def test_call_report_extra():
    assert CallReport().extra() == {}
    assert CallReport(throttled=2, waited=0.25).extra() == {"throttled": 2, "wait_ms": 250.0}


# -- waiting for real ------------------------------------------------------------------------------


async def test_waits_hold_no_thread_and_let_other_calls_run():
    governor = Governor(requests_per_second=20.0, concurrency=100)
    done: list[str] = []

    async def paced(i: int) -> None:
        await governor.acquire()
        done.append(f"call{i}")
        governor.succeeded(pacing.Permit(0, 0, 0, 0))

    async def other() -> None:
        await asyncio.sleep(0.01)
        done.append("other")

    await asyncio.gather(*(paced(i) for i in range(15)), other())
    # The other coroutine ran while paced calls still waited for their start.
    assert done.index("other") < len(done) - 1
    assert len(done) == 16


def test_slots_hold_across_threads_and_loops_and_follow_limit_changes():
    slots = _Slots(2)
    active, peak, lock = [0], [0], threading.Lock()

    async def use() -> None:
        await slots.acquire()
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        await asyncio.sleep(0.02)
        with lock:
            active[0] -= 1
        slots.release()

    def sync_use() -> None:
        slots.acquire_sync()
        time.sleep(0.02)
        slots.release()

    async def many() -> None:
        await asyncio.gather(*(use() for _ in range(6)))

    threads = [threading.Thread(target=asyncio.run, args=(many(),)) for _ in range(2)]
    threads.append(threading.Thread(target=sync_use))
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert peak[0] <= 2 and slots.in_use == 0
    # A raised limit lets waiters in at once.
    slots.acquire_sync()
    slots.set_limit(1)
    waiter_done = threading.Event()
    threading.Thread(target=lambda: (slots.acquire_sync(), waiter_done.set())).start()
    assert not waiter_done.wait(0.05)
    slots.set_limit(2)
    assert waiter_done.wait(2)


async def test_a_cancelled_wait_gives_its_place_back():
    governor = Governor(requests_per_second=1.0, concurrency=1)
    first = await governor.acquire()
    waiting = asyncio.ensure_future(governor.acquire())
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    governor.succeeded(first)
    assert governor.in_use == 0 and governor.waiting == 0


def test_a_sync_wait_with_a_timeout_gives_up_holding_nothing():
    # A call's retry may wait only what is left of its deadline (total_timeout).
    governor = Governor(requests_per_second=10.0, concurrency=1)
    held = governor.acquire_sync()
    with pytest.raises(TimeoutError):  # no place free
        governor.acquire_sync(timeout=0.05)
    governor.succeeded(held)
    assert governor.in_use == 0 and governor.waiting == 0
    governor.throttled(governor.acquire_sync(), retry_after=30.0)  # a pause of 30 s
    with pytest.raises(TimeoutError):  # a place, but no start before the pause ends
        governor.acquire_sync(timeout=0.05)
    assert governor.in_use == 0 and governor.waiting == 0 and not governor._queue
    # The pause is over (and its empty bucket refilled): the next attempt goes at once.
    governor.pause_until = governor._requests.tat = -math.inf
    governor.succeeded(governor.acquire_sync(timeout=5.0))


# -- headers and estimates ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after-ms": "250", "retry-after": "1"}, 0.25),
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"}, 1.0),
        ({"x-ratelimit-reset-tokens": "20ms"}, 0.02),
        ({"x-ratelimit-reset-requests": "1h2m3.5s"}, 3723.5),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_delay_from_headers(headers, seconds):
    assert retry_delay(headers) == (pytest.approx(seconds) if seconds is not None else None)


def test_retry_delay_from_dates_and_reset_times():
    now = datetime(2026, 11, 25, 12, 0, 0, tzinfo=timezone.utc)
    later = now + timedelta(seconds=7)
    http_date = {"retry-after": format_datetime(later, usegmt=True)}
    assert retry_delay(http_date, now=now.timestamp()) == pytest.approx(7.0)
    anthropic = {
        "anthropic-ratelimit-requests-reset": later.isoformat().replace("+00:00", "Z"),
        "anthropic-ratelimit-tokens-reset": (now + timedelta(seconds=30)).isoformat(),
    }
    assert retry_delay(anthropic, now=now.timestamp()) == pytest.approx(7.0)
    unix = {"x-ratelimit-reset": str(now.timestamp() + 4)}
    assert retry_delay(unix, now=now.timestamp()) == pytest.approx(4.0)


def test_prompt_estimate_grows_with_messages_and_tools():
    from flink_agents.api.tools.function_tool import FunctionTool
    from tests.integrations.agents import add

    one = [ChatMessage(role=MessageRole.USER, content="x" * 400)]
    assert 100 <= estimate_prompt_tokens(one) <= 110
    two = one + [ChatMessage(role=MessageRole.ASSISTANT, content="y" * 40)]
    assert estimate_prompt_tokens(two) > estimate_prompt_tokens(one)
    with_tool = estimate_prompt_tokens(one, [FunctionTool.from_callable(add)])
    assert with_tool > estimate_prompt_tokens(one)
