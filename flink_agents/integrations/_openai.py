"""The ``openai`` SDK client shared by the OpenAI chat and embedding connections."""

from __future__ import annotations

import os
import threading
from typing import Any

import openai
from pydantic import Field, PrivateAttr, SecretStr

from flink_agents.errors import ModelCallError
from flink_agents.integrations._common import (
    CallFailure,
    ModelClientSettings,
    PerLoop,
    is_retryable_status,
    parse_retry_after,
    secret_value,
    snippet,
)
from flink_agents.integrations._throttling import openai_is_throttling


class OpenAIClient(ModelClientSettings):
    """Settings and lazily created SDK clients of an OpenAI-compatible endpoint.

    Attributes:
        api_key: the API key; default: the ``OPENAI_API_KEY`` environment variable. A
            server given by ``api_base_url`` gets a placeholder when neither is set.
        api_base_url: the server's base URL (``http://host:port/v1``); default: OpenAI's.
        default_headers: extra HTTP headers sent with every request.
    """

    PROVIDER = "openai"

    api_key: SecretStr | None = Field(default=None, repr=False)
    api_base_url: str | None = None
    default_headers: dict[str, str] | None = Field(default=None, repr=False)

    _client: openai.OpenAI | None = PrivateAttr(default=None)
    _aclients: PerLoop[openai.AsyncOpenAI] | None = PrivateAttr(default=None)
    _client_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _key(self) -> str:
        key = secret_value(self.api_key) or os.environ.get("OPENAI_API_KEY")
        if key:
            return key
        if self.api_base_url:
            return "not-needed"  # local OpenAI-compatible servers usually take no key
        raise ModelCallError(
            "no API key: pass api_key= or set the OPENAI_API_KEY environment variable",
            provider=self.PROVIDER,
        )

    def _secrets(self) -> tuple[str | None, ...]:
        return (secret_value(self.api_key), os.environ.get("OPENAI_API_KEY"))

    def _client_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "api_key": self._key(),
            "max_retries": 0,  # retries are ours (one policy for every provider)
            "timeout": self.timeout,
            "default_headers": self.default_headers,
        }
        if self.api_base_url:
            kwargs["base_url"] = self.api_base_url
        return kwargs

    def _new_client(self, kwargs: dict[str, Any], *, asynchronous: bool) -> Any:
        """A new SDK client (Azure overrides this with the Azure clients)."""
        return openai.AsyncOpenAI(**kwargs) if asynchronous else openai.OpenAI(**kwargs)

    @property
    def client(self) -> openai.OpenAI:
        """The synchronous SDK client (thread safe, shared)."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = self._new_client(self._client_kwargs(), asynchronous=False)
        return self._client

    @property
    def aclient(self) -> openai.AsyncOpenAI:
        """The asynchronous SDK client of the running event loop."""
        if self._aclients is None:
            kwargs = self._client_kwargs()
            with self._client_lock:
                if self._aclients is None:
                    self._aclients = PerLoop(lambda: self._new_client(kwargs, asynchronous=True))
        return self._aclients.get()

    def _where(self) -> str:
        """The server, for messages."""
        return self.api_base_url or "api.openai.com"

    def _failure(self, exc: Exception) -> CallFailure:
        if isinstance(exc, openai.APITimeoutError):
            return CallFailure(
                f"no reply within {self.timeout:g}s", retryable=True, timed_out=self.timeout
            )
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return CallFailure(
                f"cannot reach {self._where()}: {type(cause).__name__}: {cause}",
                retryable=True,
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            body = exc.body
            if isinstance(body, dict) and isinstance(body.get("error"), dict):
                body = body["error"]
            detail = body.get("message") if isinstance(body, dict) else None
            code = body.get("code") if isinstance(body, dict) else None
            return CallFailure(
                f"HTTP {status}: {snippet(str(detail or exc.message))}",
                status=status,
                retryable=is_retryable_status(status) and code != "insufficient_quota",
                retry_after=parse_retry_after(exc.response.headers),
                throttled=openai_is_throttling(status, str(code) if code else None),
            )
        if isinstance(exc, (ValueError, openai.APIResponseValidationError)):
            return CallFailure(f"malformed reply: {type(exc).__name__}: {snippet(str(exc))}")
        return CallFailure(f"{type(exc).__name__}: {snippet(str(exc))}")

    def close(self) -> None:
        """Close the HTTP clients."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._aclients is not None:
            self._aclients.close(lambda c: c.close())
            self._aclients = None
