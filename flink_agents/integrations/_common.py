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
- **Throttling**: a failed attempt whose answer means "slow down" (HTTP 429, Bedrock's
  ``ThrottlingException``, Gemini's ``RESOURCE_EXHAUSTED``, DashScope's ``Throttling.*``...)
  carries ``CallFailure.throttled``; each provider has one classifying function in
  ``flink_agents/integrations/_throttling.py``. Throttled attempts are retried.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Generic, TypeVar

import httpx
from pydantic import Field, PrivateAttr, SecretStr

from flink_agents.errors import ModelCallError
from flink_agents.integrations._pacing import CallReport, Permit, RateLimitSettings, retry_delay

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
        throttled: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable or throttled
        self.retry_after = retry_after
        self.throttled = throttled


def parse_retry_after(headers: Any) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, ``retry-after`` (seconds or an
    HTTP date), else the soonest rate-limit reset header (``_pacing.retry_delay``)."""
    return retry_delay(headers)


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every secret replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


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
        timeout: seconds one attempt may take before it counts as failed.
        max_retries: further attempts after a retryable failure (429, 5xx, timeout,
            connection error); 0 disables retries.
        retry_initial_backoff: seconds before the first retry; doubles on each retry.
        retry_max_backoff: upper bound of one wait between attempts.
        max_concurrency: attempts this connection has in flight at once per task slot
            (the adaptive limit moves below it); further calls wait for a free place.
    """

    timeout: float = Field(default=60.0, gt=0)
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
        tries = f" after {attempts} attempt(s)" if exc.retryable else ""
        message = redact(f"{exc.message}{tries}", *self._secrets())
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
        ``_pacing.py``). Returns the result and the number of attempts made.

        Args:
            attempt: one attempt.
            model: the model name (for errors and logs).
            tokens: the request's estimated prompt tokens (``estimate_prompt_tokens``),
                for a ``tokens_per_minute`` limit.
            usage_of: ``(prompt tokens, completion tokens)`` of a result (None: unknown),
                which corrects the token estimates.
            report: filled with what the governor did (throttling answers, waits).

        Raises:
            ModelCallError: the call failed for good.
        """
        report = report if report is not None else CallReport()
        governor = self.governor
        attempts = 0
        while True:
            attempts += 1
            permit = governor.acquire_sync(tokens)
            try:
                result = attempt()
            except CallFailure as exc:
                self._settle_attempt(permit, report, None, exc, usage_of)
                wait = self._next_wait(exc, attempts, report)
                if wait is None:
                    raise self._error(exc, model, attempts) from None
                self._retrying(exc, model, attempts, wait, report)
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
        (called with ``args``); waits in the governor hold no thread."""
        # A loop of our own, not tenacity's: its statistics are thread-local, and a run on
        # the Flink host may resume on another thread (the operator thread borrows the
        # slot's loop: runtime/flink/gated_loop.py).
        report = report if report is not None else CallReport()
        governor = self.governor
        attempts = 0
        while True:
            attempts += 1
            permit = await governor.acquire(tokens)
            try:
                result = await attempt(*args)
            except CallFailure as exc:
                self._settle_attempt(permit, report, None, exc, usage_of)
                wait = self._next_wait(exc, attempts, report)
                if wait is None:
                    raise self._error(exc, model, attempts) from None
                self._retrying(exc, model, attempts, wait, report)
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
        """:meth:`acall_with_retries` for a synchronous SDK: each attempt runs on a worker
        thread, but the waits in the governor (pacing, a throttling pause) happen on the
        event loop, holding no thread."""

        async def in_thread() -> T:
            return await asyncio.to_thread(attempt)

        return await self.acall_with_retries(
            in_thread, model=model, tokens=tokens, usage_of=usage_of, report=report
        )


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
            return CallFailure(f"no reply from {url} within {self.timeout}s", retryable=True)
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
