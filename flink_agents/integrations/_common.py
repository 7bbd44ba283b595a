"""What every model integration shares: retries, a concurrency limit, per-loop clients,
secret handling and reply bookkeeping (token usage, latency).

Private: the public names are the connections and setups in the integration modules.

Design notes:

- **Retries** (a loop of our own): exponential backoff with jitter on 408/409/425/429/5xx,
  timeouts and connection errors; a ``Retry-After`` header shortens or lengthens the wait
  (never beyond ``retry_max_backoff``). Anything else fails at once. A throttled attempt
  (``adaptive``, the default) is retried without backoff of its own: the governor holds it
  until the server's ``Retry-After`` has passed and paces it; ``max_throttled_retries``
  counts those apart from ``max_retries``.
- **Concurrency, pacing and throttling**: every attempt passes the connection's governor
  (``_pacing.py``): ``max_concurrency`` and the declared limits (``requests_per_minute``,
  ``tokens_per_minute``, ``max_concurrent_requests``), an adaptive limit lowered by
  throttling answers. Its waits work across threads *and* event loops (the local runner
  uses one loop per session, the Flink host a background loop, sync ``chat`` any thread),
  which an ``asyncio.Semaphore`` (bound to one loop) cannot.
- **Async HTTP clients** are kept per event loop (:class:`PerLoop`): an httpx/openai async
  client's connection pool belongs to the loop that created it.
- **Deadlines** are enforced here, the same way for every provider, whatever its SDK does
  with a timeout (httpx and the openai SDK apply one per read, so a server that dribbles
  its reply never trips it): each attempt may take ``timeout`` seconds as a whole (connect,
  send, the complete reply, any retry inside the SDK), the whole call ``total_timeout``
  (every attempt and the waits between them). See "Deadlines" below.
- **Throttling**: a failed attempt whose answer means "slow down" (HTTP 429, Bedrock's
  ``ThrottlingException``, Gemini's ``RESOURCE_EXHAUSTED``, DashScope's ``Throttling.*``...)
  carries ``CallFailure.throttled``; each provider has one classifying function in
  ``flink_agents/integrations/_throttling.py``. Throttled attempts are retried.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Generic, TypeVar

import httpx
from pydantic import Field, PrivateAttr, SecretStr

from flink_agents.api.embedding_models.embedding_model import BaseEmbeddingModelConnection
from flink_agents.api.timeouts import (
    DEFAULT_EMBEDDING_DEADLINE,
    DEFAULT_MODEL_DEADLINE,
    await_within,
)
from flink_agents.errors import ModelCallError, ModelCallTimeoutError
from flink_agents.integrations._pacing import CallReport, Permit, RateLimitSettings, retry_delay
from flink_agents.secrets import mask, registered_masker

log = logging.getLogger("flink_agents.integrations")

T = TypeVar("T")

#: HTTP statuses worth retrying: timeouts, conflicts, rate limits and server errors.
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})


def is_retryable_status(status: int | None) -> bool:
    """Whether a reply with this HTTP status is worth retrying."""
    return status is not None and (status in RETRYABLE_STATUSES or status >= 500)


class CallFailure(Exception):
    """One failed attempt of a model call, classified for the retry policy.

    Attributes:
        message: what went wrong (never contains secrets).
        status: the HTTP status, if the server answered.
        retryable: whether another attempt may succeed.
        retry_after: seconds the server asked us to wait, if it said so.
        timed_out: the timeout in seconds this attempt (or the whole call) ran past, if it
            failed for that reason.
        throttled: the provider refused the call because of a rate or quota limit (as
            classified by the provider's function in ``_throttling.py``); such a failure
            is always retryable.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        timed_out: float | None = None,
        throttled: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable or throttled
        self.retry_after = retry_after
        self.timed_out = timed_out
        self.throttled = throttled


def parse_retry_after(headers: Any) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, ``retry-after`` (seconds or an
    HTTP date), else the soonest rate-limit reset header (``_pacing.retry_delay``)."""
    return retry_delay(headers)


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every secret replaced by ``***``: these, the registered ones (the
    plans') and what the secret rule finds in text (``flink_agents/secrets.py``)."""
    return registered_masker().mask(mask(text, [s for s in secrets if s]))


def snippet(text: str, limit: int = 300) -> str:
    """The start of a (possibly long) server reply, for error messages."""
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


class PerLoop(Generic[T]):
    """One object per event loop (async HTTP clients), created on first use in that loop."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._items: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> T:
        """The object of the running loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            item = self._items.get(loop)
            if item is None:
                item = self._factory()
                self._items[loop] = item
            return item

    def close(self, closer: Callable[[T], Awaitable[Any]]) -> None:
        """Close every object whose loop is still running (others go with their loop)."""
        with self._lock:
            items, self._items = list(self._items.items()), weakref.WeakKeyDictionary()
        for loop, item in items:
            if loop.is_running() and not loop.is_closed():
                try:
                    asyncio.run_coroutine_threadsafe(closer(item), loop)  # type: ignore[arg-type]
                except RuntimeError:
                    pass  # the loop closed meanwhile


class ModelClientSettings(RateLimitSettings):
    """Options every model connection has (timeouts, retries, concurrency, and the rate
    limits of :class:`~flink_agents.integrations._pacing.RateLimitSettings`).

    Attributes:
        timeout: seconds one attempt may take as a whole (connect, send, the complete
            reply) before it counts as failed (and is retried).
        total_timeout: seconds the whole call may take, every attempt and the waits
            between them included (not the governor's wait for the first attempt's place
            and start; its waits before retries count);
            default: 300 for chat models, 120 for embedding models. Past it the call fails
            with :class:`~flink_agents.errors.ModelCallTimeoutError`.
        max_retries: further attempts after a retryable failure (429, 5xx, timeout,
            connection error); 0 disables retries.
        retry_initial_backoff: seconds before the first retry; doubles on each retry.
        retry_max_backoff: upper bound of one wait between attempts.
        max_concurrency: attempts this connection has in flight at once per task slot
            (the adaptive limit moves below it); further calls wait for a free place.
    """

    timeout: float = Field(default=60.0, gt=0)
    total_timeout: float | None = Field(default=None, gt=0)
    max_retries: int = Field(default=3, ge=0)
    retry_initial_backoff: float = Field(default=0.5, ge=0)
    retry_max_backoff: float = Field(default=8.0, ge=0)
    max_concurrency: int = Field(default=16, ge=1)

    _limiter_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    #: provider name used in errors and logs; set by each integration.
    PROVIDER: ClassVar[str] = "model"

    def _secrets(self) -> tuple[str | None, ...]:
        """Secret values to scrub from error messages (override where there are some)."""
        return ()

    def _next_wait(self, exc: CallFailure, attempts: int, report: CallReport) -> float | None:
        """Seconds before the next attempt after the failed ``attempts``-th, or None to give
        up. A throttled attempt (``adaptive``) is retried at once, up to
        ``max_throttled_retries`` times: the governor holds it for the server's
        Retry-After and paces it. Other failures: ``max_retries`` with exponential backoff
        and jitter, a Retry-After shortening or lengthening the wait (at most
        ``retry_max_backoff``)."""
        if not exc.retryable:
            return None
        if self.adaptive and exc.throttled:
            return 0.0 if report.throttled <= self.max_throttled_retries else None
        failed = report.failures if self.adaptive else attempts
        if failed > self.max_retries:
            return None
        backoff = self.retry_initial_backoff * (2 ** (failed - 1))
        backoff = min(self.retry_max_backoff, backoff * (0.5 + random.random() / 2))
        if exc.retry_after is not None:
            backoff = min(self.retry_max_backoff, exc.retry_after)
        return backoff

    def _retrying(
        self, exc: CallFailure, model: str | None, attempts: int, wait: float, report: CallReport
    ) -> None:
        if self.adaptive and exc.throttled:
            log.info(
                "%s call to model %r was throttled (%d time(s)): %s; paced retry",
                self.PROVIDER,
                model,
                report.throttled,
                redact(str(exc), *self._secrets()),
            )
            return
        log.warning(
            "%s call to model %r failed (attempt %d of %d): %s; retrying in %.2fs",
            self.PROVIDER,
            model,
            attempts,
            self.max_retries + 1,
            redact(str(exc), *self._secrets()),
            wait,
        )

    def _error(self, exc: CallFailure, model: str | None, attempts: int) -> ModelCallError:
        tries = f" after {attempts} attempt(s)" if exc.retryable or exc.timed_out else ""
        message = redact(f"{exc.message}{tries}", *self._secrets())
        if exc.timed_out:
            return ModelCallTimeoutError(
                message,
                provider=self.PROVIDER,
                model=model,
                kind=self._call_kind(),
                timeout=exc.timed_out,
            )
        return ModelCallError(
            message,
            provider=self.PROVIDER,
            model=model,
            status=exc.status,
            throttled=exc.throttled,
        )

    # -- one attempt through the governor (flink_agents/integrations/_pacing.py) -------------
    def _settle_attempt(
        self,
        permit: Permit,
        report: CallReport,
        result: Any,
        error: BaseException | None,
        usage_of: Callable[[Any], tuple[Any, Any] | None] | None,
    ) -> None:
        governor = self.governor
        report.waited += permit.waited
        if error is None:
            used = usage_of(result) if usage_of is not None else None
            prompt, completion = used if used else (None, None)
            governor.succeeded(permit, prompt_tokens=prompt, completion_tokens=completion)
        elif isinstance(error, CallFailure) and error.throttled:
            report.throttled += 1
            governor.throttled(permit, error.retry_after)
        else:
            if isinstance(error, CallFailure):
                report.failures += 1
            governor.failed(permit)

    def _wait_before_retry(
        self,
        exc: CallFailure,
        model: str | None,
        attempts: int,
        report: CallReport,
        deadline: CallDeadline,
    ) -> float:
        """Seconds to wait after a failed attempt, clipped to what is left of the call's
        deadline (the attempt after it then fails at once as timed out).

        Raises:
            ModelCallError: no further attempt (not retryable, or retries used up).
        """
        wait = self._next_wait(exc, attempts, report)
        if wait is None:
            raise self._error(exc, model, attempts) from None
        wait = min(wait, max(0.0, deadline.remaining()))
        self._retrying(exc, model, attempts, wait, report)
        return wait

    def call_with_retries(
        self,
        attempt: Callable[[], T],
        *,
        model: str | None,
        tokens: int | None = None,
        usage_of: Callable[[T], tuple[Any, Any] | None] | None = None,
        report: CallReport | None = None,
    ) -> tuple[T, int]:
        """Run ``attempt`` (which raises :class:`CallFailure`) with retries, each attempt
        let through by the connection's governor (concurrency, pacing, throttling: see
        ``_pacing.py``) and run within its deadline (on a helper thread that is abandoned
        at the deadline). Returns the result and the number of attempts made.

        The call's deadline (``total_timeout``) starts once its first attempt is let
        through (holds its place): the governor's waits for later attempts (a server's
        ``Retry-After``, pacing) count against it, the wait for the first does not.

        Args:
            attempt: one attempt.
            model: the model name (for errors and logs).
            tokens: the request's estimated prompt tokens (``estimate_prompt_tokens``),
                for a ``tokens_per_minute`` limit.
            usage_of: ``(prompt tokens, completion tokens)`` of a result (None: unknown),
                which corrects the token estimates.
            report: filled with what the governor did (throttling answers, waits).

        Raises:
            ModelCallError: the call failed for good
                (:class:`~flink_agents.errors.ModelCallTimeoutError`: it ran out of time).
        """
        report = report if report is not None else CallReport()
        governor = self.governor
        timeout = self._attempt_timeout()
        deadline: CallDeadline | None = None
        attempts = 0
        while True:
            if deadline is None:
                permit = governor.acquire_sync(tokens)
                deadline = self._deadline()
            else:
                left = deadline.remaining()
                try:
                    if left <= 0:
                        raise TimeoutError
                    permit = governor.acquire_sync(tokens, timeout=left)
                except TimeoutError:
                    raise self._error(_deadline_failure(deadline), model, attempts) from None
            attempts += 1
            try:
                result = _attempt_within_sync(attempt, deadline, timeout)
            except CallFailure as exc:
                self._settle_attempt(permit, report, None, exc, usage_of)
                wait = self._wait_before_retry(exc, model, attempts, report, deadline)
                if wait > 0:
                    time.sleep(wait)
                continue
            except BaseException as exc:
                self._settle_attempt(permit, report, None, exc, usage_of)
                raise
            self._settle_attempt(permit, report, result, None, usage_of)
            return result, attempts

    async def acall_with_retries(
        self,
        attempt: Callable[..., Awaitable[T]],
        *args: Any,
        model: str | None,
        tokens: int | None = None,
        usage_of: Callable[[T], tuple[Any, Any] | None] | None = None,
        report: CallReport | None = None,
    ) -> tuple[T, int]:
        """Asynchronous :meth:`call_with_retries`: ``attempt`` is an ``async def`` function
        (called with ``args``), cancelled at its deadline; waits in the governor hold no
        thread."""
        # A loop of our own, not tenacity's: its statistics are thread-local, and a run on
        # the Flink host may resume on another thread (the operator thread borrows the
        # slot's loop: runtime/flink/gated_loop.py).
        report = report if report is not None else CallReport()
        governor = self.governor
        timeout = self._attempt_timeout()
        deadline: CallDeadline | None = None
        attempts = 0
        while True:
            if deadline is None:
                permit = await governor.acquire(tokens)
                deadline = self._deadline()
            else:
                left, expired = deadline.remaining(), functools.partial(_deadline_failure, deadline)
                try:
                    if left <= 0:
                        raise expired()
                    permit = await await_within(governor.acquire(tokens), left, expired)
                except CallFailure as exc:
                    raise self._error(exc, model, attempts) from None
            attempts += 1
            try:
                result = await _attempt_within(attempt, args, deadline, timeout)
            except CallFailure as exc:
                self._settle_attempt(permit, report, None, exc, usage_of)
                wait = self._wait_before_retry(exc, model, attempts, report, deadline)
                if wait > 0:
                    await asyncio.sleep(wait)
                continue
            except BaseException as exc:
                self._settle_attempt(permit, report, None, exc, usage_of)
                raise
            self._settle_attempt(permit, report, result, None, usage_of)
            return result, attempts

    async def acall_in_thread_with_retries(
        self,
        attempt: Callable[[], T],
        *,
        model: str | None,
        tokens: int | None = None,
        usage_of: Callable[[T], tuple[Any, Any] | None] | None = None,
        report: CallReport | None = None,
    ) -> tuple[T, int]:
        """:meth:`acall_with_retries` for a synchronous SDK: each attempt runs on a daemon
        thread of its own (abandoned at its deadline), but the waits in the governor (pacing, a
        throttling pause) happen on the event loop, holding no thread."""

        async def in_thread() -> T:
            return await _in_daemon_thread(attempt)

        return await self.acall_with_retries(
            in_thread, model=model, tokens=tokens, usage_of=usage_of, report=report
        )

    # -- deadlines --------------------------------------------------------------------------
    def _attempt_timeout(self) -> float:
        """Seconds one attempt may take (``timeout``; a provider with an option of its own
        for it overrides this)."""
        return self.timeout

    def _call_kind(self) -> str:
        return "embedding model" if isinstance(self, BaseEmbeddingModelConnection) else "chat model"

    @property
    def call_deadline(self) -> float:
        """Seconds a whole call may take: ``total_timeout``, else the default of the kind
        (the built-in chat action reads it to know that the connection bounds its calls)."""
        if self.total_timeout is not None:
            return self.total_timeout
        if isinstance(self, BaseEmbeddingModelConnection):
            return DEFAULT_EMBEDDING_DEADLINE
        return DEFAULT_MODEL_DEADLINE

    def _deadline(self) -> CallDeadline:
        # Starts once the call holds its place: waiting for one is not part of it.
        return CallDeadline(self.call_deadline)


# --- Deadlines ----------------------------------------------------------------------------
# One call = attempts with waits between them. An attempt gets min(timeout, what is left of
# the call's deadline); when it runs out the attempt fails as "timed out" (retryable while
# the call has time left). The async path cancels the attempt (inline, see
# flink_agents.api.timeouts.await_within); the sync path runs it on a helper thread and
# abandons it (a blocking socket read cannot be interrupted from outside).


class CallDeadline:
    """When a call must have finished (monotonic clock).

    Attributes:
        seconds: the call's deadline in seconds from its start.
    """

    __slots__ = ("_at", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._at = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left (negative once past)."""
        return self._at - time.monotonic()


def _attempt_budget(deadline: CallDeadline, timeout: float) -> tuple[float, bool]:
    """Seconds the next attempt may take and whether the call's deadline (not the
    attempt's timeout) is what bounds it.

    Raises:
        CallFailure: the call has no time left.
    """
    left = deadline.remaining()
    if left <= 0:
        raise _deadline_failure(deadline)
    return (left, True) if left < timeout else (timeout, False)


def _deadline_failure(deadline: CallDeadline) -> CallFailure:
    return CallFailure(
        f"the call did not finish within its deadline of {deadline.seconds:g}s (total_timeout)",
        timed_out=deadline.seconds,
    )


def _attempt_failure(seconds: float) -> CallFailure:
    return CallFailure(f"no complete reply within {seconds:g}s", retryable=True, timed_out=seconds)


async def _attempt_within(
    attempt: Callable[..., Awaitable[T]],
    args: tuple[Any, ...],
    deadline: CallDeadline,
    timeout: float,
) -> T:
    seconds, by_deadline = _attempt_budget(deadline, timeout)
    return await await_within(
        attempt(*args),
        seconds,
        lambda: _deadline_failure(deadline) if by_deadline else _attempt_failure(seconds),
    )


def _attempt_within_sync(attempt: Callable[[], T], deadline: CallDeadline, timeout: float) -> T:
    seconds, by_deadline = _attempt_budget(deadline, timeout)
    box: list[Any] = []
    context = contextvars.copy_context()

    def run() -> None:
        try:
            box.append((True, context.run(attempt)))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box.append((False, exc))

    # A daemon thread: an abandoned attempt must not keep the process from exiting.
    worker = threading.Thread(target=run, name="flink-agents-call", daemon=True)
    worker.start()
    worker.join(seconds)
    if not box:
        raise _deadline_failure(deadline) if by_deadline else _attempt_failure(seconds)
    ok, value = box[0]
    if ok:
        return value
    raise value


async def _in_daemon_thread(fn: Callable[[], T]) -> T:
    """``fn()`` on a daemon thread of its own, awaited on the loop. Not
    ``asyncio.to_thread``: an attempt abandoned at its deadline would keep a worker of the
    loop's default executor busy until its reply ends (starving other calls), and
    ``asyncio.run`` waits for those workers when it ends."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if done.done():  # cancelled: the attempt was abandoned
            return
        if ok:
            done.set_result(value)
        else:
            done.set_exception(value)

    def run() -> None:
        try:
            outcome: tuple[bool, Any] = (True, context.run(fn))
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:
            pass  # the loop closed meanwhile: nobody waits for it

    threading.Thread(target=run, name="flink-agents-call", daemon=True).start()
    return await done


def secret_value(value: SecretStr | str | None) -> str | None:
    """The plain text of a secret field."""
    if value is None:
        return None
    return value.get_secret_value() if isinstance(value, SecretStr) else value


class Stopwatch:
    """Milliseconds since creation (monotonic)."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    @property
    def ms(self) -> float:
        """Elapsed milliseconds, rounded to 0.1 ms."""
        return round((time.perf_counter() - self._start) * 1000.0, 1)


def usage(prompt: Any, completion: Any) -> dict[str, int] | None:
    """Token usage in our common shape, or None when the server did not report it."""
    if prompt is None and completion is None:
        return None
    p, c = int(prompt or 0), int(completion or 0)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


class HttpJsonClient(ModelClientSettings):
    """A model connection that speaks JSON over HTTP with ``httpx`` (Ollama, Anthropic...).

    Subclasses say where to send requests (:meth:`_base_url`), which headers to add and how
    to read an error body; one attempt is :meth:`_post` / :meth:`_apost`.
    """

    _sync_client: httpx.Client | None = PrivateAttr(default=None)
    _async_clients: PerLoop[httpx.AsyncClient] | None = PrivateAttr(default=None)

    def _base_url(self) -> str:
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        return {}

    def _error_text(self, body: Any) -> str | None:
        """The server's error message inside a parsed error body, if any."""
        if isinstance(body, dict):
            err = body.get("error")
            if isinstance(err, dict):
                return str(err.get("message") or err)
            if err:
                return str(err)
        return None

    def _client_kwargs(self) -> dict[str, Any]:
        return {
            "base_url": self._base_url(),
            "headers": self._headers(),
            "timeout": httpx.Timeout(self.timeout),
            "limits": httpx.Limits(max_connections=max(self.max_concurrency, 1)),
        }

    @property
    def http(self) -> httpx.Client:
        """The shared synchronous client (thread safe)."""
        if self._sync_client is None:
            with self._limiter_lock:
                if self._sync_client is None:
                    self._sync_client = httpx.Client(**self._client_kwargs())
        return self._sync_client

    @property
    def ahttp(self) -> httpx.AsyncClient:
        """The asynchronous client of the running event loop."""
        if self._async_clients is None:
            with self._limiter_lock:
                if self._async_clients is None:
                    self._async_clients = PerLoop(
                        lambda: httpx.AsyncClient(**self._client_kwargs())
                    )
        return self._async_clients.get()

    def _is_throttling(self, status: int, body: Any) -> bool:
        """Whether an error reply (``body`` parsed, or None) is a rate/quota refusal; the
        providers' classifiers are in ``_throttling.py``."""
        return status == 429

    def _reply(self, response: httpx.Response) -> Any:
        status = response.status_code
        if status >= 400:
            body: Any = None
            try:
                body = response.json()
                detail = self._error_text(body) or snippet(response.text)
            except ValueError:
                detail = snippet(response.text) or response.reason_phrase
            raise CallFailure(
                f"HTTP {status} from {response.request.url}: {detail}",
                status=status,
                retryable=is_retryable_status(status),
                retry_after=parse_retry_after(response.headers),
                throttled=self._is_throttling(status, body),
            )
        try:
            return response.json()
        except ValueError:
            raise CallFailure(
                f"malformed JSON in the reply from {response.request.url}: "
                f"{snippet(response.text, 200)!r}",
                status=status,
            ) from None

    def _transport_failure(self, exc: httpx.HTTPError, path: str) -> CallFailure:
        url = f"{self._base_url().rstrip('/')}{path}"
        if isinstance(exc, httpx.TimeoutException):
            return CallFailure(
                f"no reply from {url} within {self.timeout:g}s",
                retryable=True,
                timed_out=self.timeout,
            )
        return CallFailure(
            f"cannot reach {url}: {type(exc).__name__}: {exc}",
            retryable=isinstance(exc, httpx.TransportError),
        )

    def _post(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
        """One synchronous attempt (``headers``: extra ones for this request)."""
        try:
            response = self.http.post(path, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise self._transport_failure(exc, path) from None
        return self._reply(response)

    async def _apost(
        self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> Any:
        """One asynchronous attempt (``headers``: extra ones for this request)."""
        try:
            response = await self.ahttp.post(path, json=body, headers=headers)
        except httpx.HTTPError as exc:
            raise self._transport_failure(exc, path) from None
        return self._reply(response)

    def _close_clients(self) -> None:
        if self._sync_client is not None:
            self._sync_client.close()
            self._sync_client = None
        if self._async_clients is not None:
            self._async_clients.close(lambda c: c.aclose())
            self._async_clients = None
