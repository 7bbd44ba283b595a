"""What the governor is fed and what it reports: token estimates of a request, the delay
a throttling answer's headers ask for, and a call's :class:`CallReport` (see ``_pacing.py``).
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass
class CallReport:
    """What the governor did to one call (all its attempts), for the reply's
    ``extra_args`` and the event log.

    Attributes:
        throttled: throttling answers the call got.
        waited: seconds its attempts waited in the governor.
        failures: other failed attempts (retried under ``max_retries``).
    """

    throttled: int = 0
    waited: float = 0.0
    failures: int = 0

    def extra(self) -> dict[str, Any]:
        """``{"throttled": n, "wait_ms": ms}`` for what happened (empty when nothing did)."""
        out: dict[str, Any] = {}
        if self.throttled:
            out["throttled"] = self.throttled
        if self.waited >= 0.0005:
            out["wait_ms"] = round(self.waited * 1000.0, 1)
        return out


# -- retry delays from headers -------------------------------------------------------------

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_RESET_HEADERS = (
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-output-tokens-reset",
    "x-ratelimit-reset",
    "ratelimit-reset",
)


def _duration(text: str) -> float | None:
    """Seconds of ``"1s"``, ``"6m0s"``, ``"20ms"``, ``"1h2m3.5s"`` (OpenAI's reset format)."""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def _seconds_until(text: str, now: float) -> float | None:
    """Seconds from ``now`` (``time.time()``) to a header's time: a number of seconds (or
    a Unix time when it is one), a duration, an HTTP date or an RFC 3339 time."""
    text = text.strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        return max(0.0, number - now) if number > 1e9 else max(0.0, number)
    seconds = _duration(text)
    if seconds is not None:
        return seconds
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        when = parsed.timestamp()
    return max(0.0, when - now)


def retry_delay(headers: Any, *, now: float | None = None) -> float | None:
    """Seconds a throttling answer's headers ask to wait, or None when they do not say.

    ``retry-after-ms`` first, then ``retry-after`` (seconds or an HTTP date), then the
    soonest of the providers' reset headers (OpenAI's ``x-ratelimit-reset-requests`` /
    ``-tokens`` durations, Anthropic's ``anthropic-ratelimit-*-reset`` times,
    ``x-ratelimit-reset``): the soonest, because a reset time says when a limit is whole
    again, and the one that refused may be any of them.
    """
    if headers is None:
        return None
    wall = time.time() if now is None else now
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is not None:
        seconds = _seconds_until(str(value), wall)
        if seconds is not None:
            return seconds
    resets = [
        s
        for name in _RESET_HEADERS
        if (v := headers.get(name)) is not None and (s := _seconds_until(str(v), wall)) is not None
    ]
    return min(resets) if resets else None


# -- token estimates -------------------------------------------------------------------------


def _text_of(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return len(value)
    try:
        return len(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return len(str(value))


def estimate_prompt_tokens(messages: Sequence[Any], tools: Sequence[Any] | None = None) -> int:
    """A rough prompt size in tokens: four characters a token, a few per message, and the
    tools' schemas. The governor scales it by what replies reported (``usage``)."""
    chars = 0
    for m in messages:
        chars += _text_of(getattr(m, "content", m)) + 16
        calls = getattr(m, "tool_calls", None)
        if calls:
            chars += _text_of(calls)
    for t in tools or ():
        metadata = getattr(t, "metadata", None)
        chars += _text_of(metadata.model_dump() if metadata is not None else str(t))
    return chars // 4 + 3


def with_report(reply: Any, report: CallReport) -> Any:
    """``reply`` (a ``ChatMessage``) with what the governor did in its ``extra_args``:
    ``throttled`` (throttling answers) and ``wait_ms`` (time its attempts waited)."""
    extra = report.extra()
    if extra:
        reply.extra_args.update(extra)
    return reply


def estimate_text_tokens(texts: Sequence[str]) -> int:
    """A rough size of texts to embed, in tokens (four characters a token)."""
    return sum(len(t) for t in texts) // 4 + len(texts)


def embedding_usage(reply: tuple[Any, Any]) -> tuple[int, int] | None:
    """``(prompt, completion)`` tokens for the governor of an embedding call whose attempt
    returns ``(data, usage)``: the ``EmbeddingTokenUsage`` read once with the reply, which
    the result reports too (None: the reply reported none)."""
    usage = reply[1]
    return (usage.prompt_tokens, 0) if usage is not None else None
