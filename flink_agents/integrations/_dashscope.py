"""The ``dashscope`` SDK (Alibaba Cloud Model Studio), shared by the Tongyi chat and
embedding connections (extra ``tongyi``).

Why the SDK and not DashScope's OpenAI-compatible mode: it is what Apache Flink Agents uses
(same package, same arguments, so its YAML files run unchanged), it speaks DashScope's native
protocol (``/api/v1/services/aigc/...``) whose error answers carry DashScope's codes
(``Throttling.RateQuota``, ``InvalidApiKey``...), which the compatible mode flattens, and it
reaches the embedding service with its token counts. The SDK answers failures with a
response object (``status_code``, ``code``, ``message``) rather than exceptions; transport
problems raise ``requests`` / ``aiohttp`` exceptions. The SDK's module globals are never
set: every call passes ``api_key`` and ``base_address``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from pydantic import Field, SecretStr

from flink_agents.errors import ModelCallError
from flink_agents.integrations._common import (
    CallFailure,
    ModelClientSettings,
    is_retryable_status,
    secret_value,
    snippet,
)
from flink_agents.integrations._extras import require
from flink_agents.integrations._throttling import dashscope_is_throttling

#: DashScope's endpoint in mainland China; the international one is
#: ``https://dashscope-intl.aliyuncs.com/api/v1``.
DEFAULT_BASE_URL = "https://dashscope.aliyuncs.com/api/v1"


def dashscope_sdk(user: str) -> Any:
    """The ``dashscope`` module, or a :class:`MissingExtraError` naming the extra."""
    return require("dashscope", extra="tongyi", user=user)


class DashScopeClient(ModelClientSettings):
    """Settings of a DashScope connection.

    Attributes:
        api_key: the DashScope API key; default: the ``DASHSCOPE_API_KEY`` environment
            variable.
        base_url: the API's base URL (default: ``DASHSCOPE_HTTP_BASE_URL``, else
            ``https://dashscope.aliyuncs.com/api/v1``).
        workspace: the Model Studio workspace id, if any.
        request_timeout: seconds one attempt may take (Apache Flink Agents' name; wins
            over ``timeout``).
    """

    PROVIDER = "tongyi"

    api_key: SecretStr | None = Field(default=None, repr=False)
    base_url: str | None = None
    workspace: str | None = None
    request_timeout: float | None = Field(default=None, gt=0)

    def _key(self) -> str:
        key = secret_value(self.api_key) or os.environ.get("DASHSCOPE_API_KEY")
        if not key:
            raise ModelCallError(
                "no DashScope API key: pass api_key= or set the DASHSCOPE_API_KEY environment "
                "variable",
                provider=self.PROVIDER,
            )
        return key

    def _secrets(self) -> tuple[str | None, ...]:
        return (secret_value(self.api_key), os.environ.get("DASHSCOPE_API_KEY"))

    def _seconds(self) -> float:
        return self.request_timeout or self.timeout

    def _attempt_timeout(self) -> float:
        return self._seconds()

    def _call_kwargs(self) -> dict[str, Any]:
        """Arguments every SDK call gets (credentials, endpoint, timeout)."""
        kwargs: dict[str, Any] = {
            "api_key": self._key(),
            "base_address": self.base_url
            or os.environ.get("DASHSCOPE_HTTP_BASE_URL")
            or DEFAULT_BASE_URL,
            "request_timeout": self._seconds(),
        }
        if self.workspace:
            kwargs["workspace"] = self.workspace
        return kwargs

    def _answer(self, response: Any) -> Any:
        """``response`` if it succeeded, else the classified :class:`CallFailure`."""
        status = getattr(response, "status_code", None)
        if status == 200:
            return response
        code = getattr(response, "code", None) or None
        message = getattr(response, "message", None) or ""
        request_id = getattr(response, "request_id", None)
        throttled = dashscope_is_throttling(status, code)
        raise CallFailure(
            f"HTTP {status} {code or ''}: {snippet(str(message))}"
            + (f" (request id {request_id})" if request_id else ""),
            status=status,
            retryable=is_retryable_status(status),
            throttled=throttled,
        )

    def _transport_failure(self, exc: BaseException) -> CallFailure:
        where = self.base_url or DEFAULT_BASE_URL
        name = type(exc).__name__
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or "Timeout" in name:
            return CallFailure(
                f"no reply from {where} within {self._seconds():g}s",
                retryable=True,
                timed_out=self._seconds(),
            )
        if isinstance(exc, (ValueError, TypeError, KeyError)):
            # the SDK could not read the answer (not JSON, or not DashScope's shape);
            # before OSError: requests' JSONDecodeError is both
            return CallFailure(f"malformed reply from {where}: {name}: {snippet(str(exc))}")
        if "Connect" in name or isinstance(exc, (ConnectionError, OSError)):
            return CallFailure(f"cannot reach {where}: {name}: {exc}", retryable=True)
        return CallFailure(f"{name}: {snippet(str(exc))}")
