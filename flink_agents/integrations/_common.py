"""What every model integration shares: retries, a concurrency limit, per-loop clients,
secret handling and reply bookkeeping (token usage, latency).

Private: the public names are the connections and setups in the integration modules.

Design notes:

- **Retries** use ``tenacity``: exponential backoff with jitter on 408/409/425/429/5xx,
  timeouts and connection errors; a ``Retry-After`` header shortens or lengthens the wait
  (never beyond ``retry_max_backoff``). Anything else fails at once.
- **Concurrency** is limited per connection by :class:`CallLimiter`, a semaphore that works
  across threads *and* event loops (the local runner uses a fresh loop per ``execute()``,
  the Flink host one background loop, sync ``chat`` any thread), which an
  ``asyncio.Semaphore`` (bound to one loop) cannot.
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
import collections
import contextvars
import logging
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, Generic, TypeVar

import httpx
import tenacity
from pydantic import BaseModel, Field, PrivateAttr, SecretStr

from flink_agents.api.embedding_models.embedding_model import BaseEmbeddingModelConnection
from flink_agents.api.timeouts import (
    DEFAULT_EMBEDDING_DEADLINE,
    DEFAULT_MODEL_DEADLINE,
    await_within,
)
from flink_agents.errors import ModelCallError, ModelCallTimeoutError
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
    """Seconds from ``retry-after-ms`` / ``retry-after`` headers (numbers only)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
    return None


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every secret replaced by ``***``: these, the registered ones (the
    plans') and what the secret rule finds in text (``flink_agents/secrets.py``)."""
    return registered_masker().mask(mask(text, [s for s in secrets if s]))


def snippet(text: str, limit: int = 300) -> str:
    """The start of a (possibly long) server reply, for error messages."""
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


class CallLimiter:
    """A counting semaphore usable from any thread and any event loop.

    Async waiters park on a future of their own loop and are woken through
    ``call_soon_threadsafe``; sync waiters park on a ``threading.Event``. A released slot is
    handed directly to the oldest waiter, so waiting is fair (FIFO).
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"concurrency limit must be >= 1, got {limit}")
        self.limit = limit
        self._lock = threading.Lock()
        self._in_use = 0
        self._waiters: collections.deque[Any] = collections.deque()

    @property
    def in_use(self) -> int:
        """Slots currently held."""
        return self._in_use

    def release(self) -> None:
        """Give a slot back (to the oldest waiter, if any)."""
        while True:
            with self._lock:
                if not self._waiters:
                    self._in_use -= 1
                    return
                waiter = self._waiters.popleft()
            if isinstance(waiter, threading.Event):
                waiter.set()
                return
            loop, fut = waiter
            try:
                loop.call_soon_threadsafe(self._grant, fut)
                return
            except RuntimeError:  # that loop is closed: its waiter is gone, try the next
                continue

    def _grant(self, fut: asyncio.Future[None]) -> None:
        if fut.cancelled():
            self.release()  # the waiter gave up after the slot was handed to it
        else:
            fut.set_result(None)

    async def acquire(self) -> None:
        """Wait for a slot without blocking the event loop."""
        with self._lock:
            if self._in_use < self.limit and not self._waiters:
                self._in_use += 1
                return
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            entry = (asyncio.get_running_loop(), fut)
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
                self.release()  # granted, then cancelled before we could use it
            raise

    def acquire_sync(self) -> None:
        """Block the calling thread until a slot is free."""
        with self._lock:
            if self._in_use < self.limit and not self._waiters:
                self._in_use += 1
                return
            event = threading.Event()
            self._waiters.append(event)
        event.wait()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """``with limiter.hold():`` for sync callers."""
        self.acquire_sync()
        try:
            yield
        finally:
            self.release()


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


class ModelClientSettings(BaseModel):
    """Options every model connection has (timeouts, retries, concurrency).

    Attributes:
        timeout: seconds one attempt may take as a whole (connect, send, the complete
            reply) before it counts as failed (and is retried).
        total_timeout: seconds the whole call may take, every attempt and the waits
            between them included (not the wait for a free place, ``max_concurrency``);
            default: 300 for chat models, 120 for embedding models. Past it the call fails
            with :class:`~flink_agents.errors.ModelCallTimeoutError`.
        max_retries: further attempts after a retryable failure (429, 5xx, timeout,
            connection error); 0 disables retries.
        retry_initial_backoff: seconds before the first retry; doubles on each retry.
        retry_max_backoff: upper bound of one wait between attempts.
        max_concurrency: calls this connection runs at once (per task slot); further calls
            wait for a free slot.
    """

    timeout: float = Field(default=60.0, gt=0)
    total_timeout: float | None = Field(default=None, gt=0)
    max_retries: int = Field(default=3, ge=0)
    retry_initial_backoff: float = Field(default=0.5, ge=0)
    retry_max_backoff: float = Field(default=8.0, ge=0)
    max_concurrency: int = Field(default=16, ge=1)

    _limiter: CallLimiter | None = PrivateAttr(default=None)
    _limiter_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    #: provider name used in errors and logs; set by each integration.
    PROVIDER: ClassVar[str] = "model"

    @property
    def limiter(self) -> CallLimiter:
        """This connection's concurrency limiter."""
        if self._limiter is None:
            with self._limiter_lock:
                if self._limiter is None:
                    self._limiter = CallLimiter(self.max_concurrency)
        return self._limiter

    def _secrets(self) -> tuple[str | None, ...]:
        """Secret values to scrub from error messages (override where there are some)."""
        return ()

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        backoff = self.retry_initial_backoff * (2 ** (state.attempt_number - 1))
        backoff = min(self.retry_max_backoff, backoff * (0.5 + random.random() / 2))
        if isinstance(exc, CallFailure) and exc.retry_after is not None:
            backoff = min(self.retry_max_backoff, exc.retry_after)
        return backoff

    def _retry_kwargs(self, model: str | None, deadline: CallDeadline) -> dict[str, Any]:
        def before_sleep(state: tenacity.RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            wait = state.next_action.sleep if state.next_action else 0.0
            log.warning(
                "%s call to model %r failed (attempt %d of %d): %s; retrying in %.2fs",
                self.PROVIDER,
                model,
                state.attempt_number,
                self.max_retries + 1,
                redact(str(exc), *self._secrets()),
                wait,
            )

        return {
            "stop": tenacity.stop_after_attempt(self.max_retries + 1),
            # A wait never goes past the deadline: the attempt after it fails at once.
            "wait": lambda state: min(self._wait(state), max(0.0, deadline.remaining())),
            "retry": tenacity.retry_if_exception(
                lambda e: isinstance(e, CallFailure) and e.retryable
            ),
            "before_sleep": before_sleep,
            "reraise": True,
        }

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

    def call_with_retries(self, attempt: Callable[[], T], *, model: str | None) -> tuple[T, int]:
        """Run ``attempt`` (which raises :class:`CallFailure`) under the concurrency limit
        with retries, each attempt and the whole call within their deadlines (an attempt
        runs on a helper thread that is abandoned at its deadline). Returns the result and
        the number of attempts made.

        Raises:
            ModelCallError: the call failed for good
                (:class:`~flink_agents.errors.ModelCallTimeoutError`: it ran out of time).
        """
        with self.limiter.hold():
            deadline = self._deadline()
            retrying = tenacity.Retrying(**self._retry_kwargs(model, deadline))
            try:
                result = retrying(_attempt_within_sync, attempt, deadline, self._attempt_timeout())
            except CallFailure as exc:
                raise self._error(
                    exc, model, retrying.statistics.get("attempt_number", 1)
                ) from None
        return result, int(retrying.statistics.get("attempt_number", 1))

    async def acall_with_retries(
        self, attempt: Callable[..., Awaitable[T]], *args: Any, model: str | None
    ) -> tuple[T, int]:
        """Asynchronous :meth:`call_with_retries`: ``attempt`` is an ``async def`` function
        (called with ``args``), cancelled at its deadline."""
        await self.limiter.acquire()
        try:
            deadline = self._deadline()
            retrying = tenacity.AsyncRetrying(**self._retry_kwargs(model, deadline))
            result: T = await retrying(
                _attempt_within, attempt, args, deadline, self._attempt_timeout()
            )
        except CallFailure as exc:
            raise self._error(exc, model, retrying.statistics.get("attempt_number", 1)) from None
        finally:
            self.limiter.release()
        return result, int(retrying.statistics.get("attempt_number", 1))

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
                f"no reply from {url} within {self.timeout}s",
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
