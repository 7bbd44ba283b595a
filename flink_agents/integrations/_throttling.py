"""Which failed calls are *throttling*: the provider refused because of a rate or quota limit
and asks the caller to slow down (as opposed to a server error or a bad request).

One function per provider, each fed with what that provider's answer carries (HTTP status,
error code or status string). The integrations set ``CallFailure.throttled`` from them; a
throttled attempt is retried with backoff (``Retry-After`` when the server sends one). Rate
governance builds on this classification: keep one function per provider, pure and cheap.

==================  ===================================================================
provider            throttling answers
==================  ===================================================================
OpenAI / Azure /    HTTP 429, except OpenAI's ``insufficient_quota`` (billing: waiting
vLLM (openai SDK)   does not help)
Anthropic           HTTP 429 ``rate_limit_error``; HTTP 529 ``overloaded_error``
Ollama              HTTP 429; HTTP 503 "server busy" (its request queue is full)
Amazon Bedrock      error code ``ThrottlingException`` / ``TooManyRequestsException``
                    (HTTP 429), whatever the status
Google Gemini       HTTP 429 or status ``RESOURCE_EXHAUSTED``
DashScope (Tongyi)  error code ``Throttling`` or ``Throttling.*`` (``RateQuota``,
                    ``AllocationQuota``, ``User``...), or HTTP 429
==================  ===================================================================
"""

from __future__ import annotations

_OPENAI_NOT_THROTTLING = frozenset({"insufficient_quota"})
_BEDROCK_THROTTLING = frozenset({"ThrottlingException", "TooManyRequestsException"})


def openai_is_throttling(status: int | None, code: str | None = None) -> bool:
    """OpenAI-protocol servers (OpenAI, Azure OpenAI, vLLM): a 429 other than
    ``insufficient_quota``."""
    return status == 429 and (code or "") not in _OPENAI_NOT_THROTTLING


def anthropic_is_throttling(status: int | None, error_type: str | None = None) -> bool:
    """Anthropic: ``rate_limit_error`` (429) or ``overloaded_error`` (529)."""
    return status in (429, 529) or error_type in ("rate_limit_error", "overloaded_error")


def ollama_is_throttling(status: int | None, message: str | None = None) -> bool:
    """Ollama: 429, or 503 "server busy" when its queue of pending requests is full."""
    return status == 429 or (status == 503 and "busy" in (message or "").lower())


def bedrock_is_throttling(error_code: str | None, status: int | None = None) -> bool:
    """Amazon Bedrock: ``ThrottlingException`` (or ``TooManyRequestsException``); a 429
    without an error code (botocore then uses the status as the code) counts too, while
    ``ModelNotReadyException`` (also 429: the model is being loaded) does not."""
    code = error_code or ""
    if code in _BEDROCK_THROTTLING:
        return True
    return status == 429 and (not code or code.isdigit())


def gemini_is_throttling(status: int | None, status_text: str | None = None) -> bool:
    """Google Gemini / Vertex AI: HTTP 429 or the RPC status ``RESOURCE_EXHAUSTED``."""
    return status == 429 or (status_text or "").upper() == "RESOURCE_EXHAUSTED"


def dashscope_is_throttling(status: int | None, code: str | None = None) -> bool:
    """DashScope (Tongyi): ``Throttling`` / ``Throttling.<reason>`` codes, or HTTP 429."""
    code = code or ""
    return status == 429 or code == "Throttling" or code.startswith("Throttling.")
