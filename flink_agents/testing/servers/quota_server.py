"""An OpenAI-protocol stand-in that enforces a provider's quota: requests and tokens per
minute, a 429 with ``Retry-After`` beyond them.

Test how your job behaves against a rate-limited provider (pacing, throttling, retries)
without one::

    from flink_agents.testing.servers import QuotaServer

    with QuotaServer(["ok"], requests_per_minute=600, tokens_per_minute=60_000) as server:
        conn = OpenAIChatModelConnection(api_base_url=server.base_url, requests_per_minute=600)
        ...  # run the agent
    assert server.refused == 0
    assert server.max_accepted_in(1.0) <= 10 + 10  # a second's rate plus the burst

Both limits are token buckets holding ``burst`` seconds of the limit (one second by
default, as providers enforce per-minute quotas over short windows): a request is accepted
when the request bucket holds one request and the token bucket its tokens (prompt tokens
counted from the request as :func:`count_tokens` does, plus the completion it will get),
else it gets a 429 whose ``retry-after`` (whole seconds, rounded up) and
``retry-after-ms`` say when it would fit, and ``x-ratelimit-*`` headers as OpenAI sends
them. A quota per minute works at per-second granularity, so tests run in seconds.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from flink_agents.api.chat_message import ChatMessage
from flink_agents.testing.servers._provider import ChatReply, as_message
from flink_agents.testing.servers._scripted import Latency, Reply, Request
from flink_agents.testing.servers.openai_server import OpenAIServer, openai_reply

__all__ = ["QuotaServer", "count_tokens"]


def count_tokens(body: Any) -> int:
    """The prompt tokens of a Chat Completions request as the server counts them: four
    characters a token (rounded up) per message, plus 4 per message, plus the tools'
    schemas (a stand-in for the provider's tokenizer, deliberately not ours)."""
    if not isinstance(body, dict):
        return 0
    tokens = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        text = content if isinstance(content, str) else json.dumps(content or "")
        tokens += math.ceil(len(text) / 4) + 4
    if body.get("tools"):
        tokens += math.ceil(len(json.dumps(body["tools"])) / 4)
    if isinstance(body.get("input"), (str, list)):  # embeddings
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        tokens += sum(math.ceil(len(str(t)) / 4) for t in texts)
    return tokens


class _Bucket:
    """A token bucket: ``rate`` per second, ``size`` at most (full at the start)."""

    def __init__(self, rate: float, size: float) -> None:
        self.rate = rate
        self.size = size
        self.level = size
        self.updated = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.size, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` fits (0: now); an amount larger than the bucket fits
        when it is full."""
        needed = min(amount, self.size) - self.level
        return max(0.0, needed / self.rate)


class QuotaServer(OpenAIServer):
    """OpenAI's Chat Completions and Embeddings APIs under a quota (see the module).

    Args:
        replies: chat replies in order (the last repeats); default one text answer.
        respond: alternatively, ``request -> reply`` for each chat request.
        requests_per_minute: requests accepted per minute (None: no request limit).
        tokens_per_minute: tokens (prompt + completion) accepted per minute (None: none).
        burst: seconds of each limit the buckets hold.
        completion_tokens: completion tokens of a reply whose script does not say.
        retry_after: ``"ms"``: ``retry-after`` (whole seconds) and ``retry-after-ms``;
            ``"seconds"``: ``retry-after`` only, as many servers send it; ``"none"``.
        latency: seconds an accepted request takes, or ``(low, high)``; a 429 is answered
            at once.
        api_key: the key requests must present (None: any).
        port: the port (default: any free one).

    Attributes:
        accepted: requests answered.
        refused: requests refused with a 429.
        accepted_at: ``time.monotonic()`` of each accepted request's arrival.
        tokens_used: tokens of the accepted requests.
    """

    def __init__(
        self,
        replies: Sequence[ChatReply] | None = None,
        respond: Callable[[Request], ChatReply] | None = None,
        *,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        burst: float = 1.0,
        completion_tokens: int = 20,
        retry_after: Literal["ms", "seconds", "none"] = "ms",
        latency: Latency = 0.0,
        api_key: str | None = None,
        port: int = 0,
    ) -> None:
        super().__init__(replies or ["ok"], respond, api_key=api_key, port=port)
        self.quota_latency = latency
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.completion_tokens = completion_tokens
        self.retry_after_mode = retry_after
        self._requests = (
            _Bucket(requests_per_minute / 60.0, requests_per_minute / 60.0 * burst)
            if requests_per_minute
            else None
        )
        self._tokens = (
            _Bucket(tokens_per_minute / 60.0, tokens_per_minute / 60.0 * burst)
            if tokens_per_minute
            else None
        )
        self._quota_lock = threading.Lock()
        self.accepted = 0
        self.refused = 0
        self.accepted_at: list[float] = []
        self.tokens_used = 0

    # -- figures ---------------------------------------------------------------------------
    def max_accepted_in(self, seconds: float) -> int:
        """The most requests accepted within any ``seconds`` long window."""
        times = sorted(self.accepted_at)
        best, lo = 0, 0
        for hi, t in enumerate(times):
            while t - times[lo] > seconds:
                lo += 1
            best = max(best, hi - lo + 1)
        return best

    def accepted_rate(self) -> float:
        """Accepted requests per second from the first to the last accepted one."""
        times = self.accepted_at
        if len(times) < 2:
            return 0.0
        return (len(times) - 1) / max(max(times) - min(times), 1e-9)

    def reset_counts(self) -> None:
        """Forget the counts and refill the buckets (between two runs of a benchmark)."""
        with self._quota_lock:
            self.accepted = self.refused = self.tokens_used = 0
            self.accepted_at = []
            for bucket in (self._requests, self._tokens):
                if bucket is not None:
                    bucket.level = bucket.size
                    bucket.updated = time.monotonic()

    # -- serving ---------------------------------------------------------------------------
    def reply_for(self, request: Request, index: int) -> Reply:
        if not (self.is_chat(request) or self.is_embeddings(request)):
            return super().reply_for(request, index)
        message: ChatMessage | None = None
        scripted: ChatReply | None = None
        if self.is_chat(request):
            scripted = self._script(request)
            if isinstance(scripted, Reply):
                return scripted
            message = as_message(scripted)
        prompt = count_tokens(request.body)
        completion = self.completion_tokens if message is not None else 0
        if message is not None:
            usage = message.extra_args.get("usage") or {}
            completion = int(usage.get("completion_tokens", completion))
        refusal = self._admit(prompt + completion)
        if refusal is not None:
            return refusal
        if message is None:
            return super().reply_for(request, index)
        reply = Reply(
            openai_reply(
                message.content,
                model=str((request.body or {}).get("model") or "test-model"),
                prompt_tokens=prompt,
                completion_tokens=completion,
            ),
            headers=self._limit_headers(),
        )
        reply.delay = self._latency()
        with self._route_lock:
            self.chat_requests.append(request)
        return reply

    def _script(self, request: Request) -> ChatReply:
        if self.chat_respond is not None:
            return self.chat_respond(request)
        index = self.accepted
        return self.chat_replies[min(index, len(self.chat_replies) - 1)]

    def _latency(self) -> float:
        latency = self.quota_latency
        if isinstance(latency, (int, float)):
            return float(latency)
        import random

        low, high = latency
        return random.uniform(low, high)

    def _admit(self, tokens: int) -> Reply | None:
        """Take one request and ``tokens`` from the buckets, or the 429 saying when."""
        now = time.monotonic()
        with self._quota_lock:
            wait = 0.0
            for bucket, amount in ((self._requests, 1), (self._tokens, tokens)):
                if bucket is not None:
                    bucket.refill(now)
                    wait = max(wait, bucket.wait_for(amount))
            if wait > 0:
                self.refused += 1
                return self._refusal(wait)
            if self._requests is not None:
                self._requests.level -= 1
            if self._tokens is not None:
                self._tokens.level -= tokens
            self.accepted += 1
            self.accepted_at.append(now)
            self.tokens_used += tokens
        return None

    def _refusal(self, wait: float) -> Reply:
        headers = self._limit_headers()
        if self.retry_after_mode != "none":
            headers["retry-after"] = str(max(1, math.ceil(wait)))
        if self.retry_after_mode == "ms":
            headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
        body = self.error_body("Rate limit reached: please slow down.", 429)
        body["error"]["code"] = "rate_limit_exceeded"
        return Reply(body, status=429, headers=headers)

    def _limit_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        for name, limit, bucket in (
            ("requests", self.requests_per_minute, self._requests),
            ("tokens", self.tokens_per_minute, self._tokens),
        ):
            if limit is None or bucket is None:
                continue
            headers[f"x-ratelimit-limit-{name}"] = f"{limit:g}"
            headers[f"x-ratelimit-remaining-{name}"] = str(max(0, int(bucket.level)))
            refill = (bucket.size - bucket.level) / bucket.rate
            headers[f"x-ratelimit-reset-{name}"] = f"{max(0, round(refill * 1000))}ms"
        return headers
