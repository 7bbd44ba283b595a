"""The ``google-genai`` SDK client, shared by the Gemini chat and embedding connections
(extra ``gemini``).

Two back ends, one SDK: the **Gemini API** (``api_key`` or ``GEMINI_API_KEY`` /
``GOOGLE_API_KEY``; requests go to ``/v1beta/models/{model}:generateContent``) and **Vertex
AI** (``vertex_ai=True`` with ``project`` and ``location``; Google application default
credentials, an ``access_token``, or an API key in Vertex express mode; requests go to
``/v1beta1/projects/{project}/locations/{location}/publishers/google/models/{model}:...``).
``base_url`` points either at another server (a proxy, a test server). The SDK's retries
are off: ours retry ``RESOURCE_EXHAUSTED`` (429), 5xx, timeouts and connection errors.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from pydantic import Field, PrivateAttr, SecretStr

from flink_agents.errors import ModelCallError
from flink_agents.integrations._common import (
    CallFailure,
    ModelClientSettings,
    is_retryable_status,
    secret_value,
    snippet,
)
from flink_agents.integrations._extras import require
from flink_agents.integrations._throttling import gemini_is_throttling


def genai_sdk(user: str) -> Any:
    """``google.genai``, or a :class:`MissingExtraError` naming the extra."""
    return require("google.genai", extra="gemini", user=user)


class GeminiClient(ModelClientSettings):
    """Settings and lazily created ``google.genai`` clients.

    Attributes:
        api_key: a Gemini API key (or a Vertex express-mode key); default:
            ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY`` (Gemini API only).
        vertex_ai: use Vertex AI instead of the Gemini API.
        project: the Google Cloud project (Vertex AI; default ``GOOGLE_CLOUD_PROJECT``).
        location: the Vertex AI region (default ``GOOGLE_CLOUD_LOCATION``, else
            ``us-central1``).
        access_token: an OAuth access token for Vertex AI instead of application default
            credentials.
        base_url: another endpoint (a proxy, a regional or test server).
        api_version: the API version in the path (default: the SDK's).
    """

    PROVIDER = "gemini"

    api_key: SecretStr | None = Field(default=None, repr=False)
    vertex_ai: bool = False
    project: str | None = None
    location: str | None = None
    access_token: SecretStr | None = Field(default=None, repr=False)
    base_url: str | None = None
    api_version: str | None = None

    _client: Any = PrivateAttr(default=None)
    _client_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _key(self) -> str | None:
        key = secret_value(self.api_key)
        if key or self.vertex_ai:
            return key
        return os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")

    def _secrets(self) -> tuple[str | None, ...]:
        return (
            secret_value(self.api_key),
            secret_value(self.access_token),
            os.environ.get("GEMINI_API_KEY"),
            os.environ.get("GOOGLE_API_KEY"),
        )

    def _new_client(self) -> Any:
        genai = genai_sdk(type(self).__name__)
        types = genai.types
        http = types.HttpOptions(
            base_url=self.base_url,
            api_version=self.api_version,
            timeout=int(self.timeout * 1000),
        )
        if not self.vertex_ai:
            key = self._key()
            if not key:
                raise ModelCallError(
                    "no Gemini API key: pass api_key= or set GEMINI_API_KEY (or use Vertex AI: "
                    "vertex_ai=True, project=, location=)",
                    provider=self.PROVIDER,
                )
            return genai.Client(api_key=key, http_options=http)
        key = self._key()
        if key:  # Vertex AI express mode
            return genai.Client(vertexai=True, api_key=key, http_options=http)
        credentials = None
        token = secret_value(self.access_token)
        if token:
            from google.oauth2.credentials import Credentials

            credentials = Credentials(token=token)
        return genai.Client(
            vertexai=True,
            project=self.project or os.environ.get("GOOGLE_CLOUD_PROJECT"),
            location=self.location or os.environ.get("GOOGLE_CLOUD_LOCATION") or "us-central1",
            credentials=credentials,
            http_options=http,
        )

    @property
    def client(self) -> Any:
        """The synchronous ``genai.Client`` (thread safe, shared)."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = self._new_client()
        return self._client

    def _where(self) -> str:
        if self.base_url:
            return self.base_url
        return "Vertex AI" if self.vertex_ai else "the Gemini API"

    def _failure(self, exc: BaseException) -> CallFailure:
        """One failed attempt, classified."""
        errors = genai_sdk(type(self).__name__).errors
        if isinstance(exc, errors.APIError):
            code = getattr(exc, "code", None)
            status_text = getattr(exc, "status", None)
            return CallFailure(
                f"HTTP {code} {status_text or ''}: {snippet(str(exc.message or exc))}",
                status=code,
                retryable=is_retryable_status(code),
                throttled=gemini_is_throttling(code, status_text),
            )
        name = type(exc).__name__
        if "Timeout" in name:
            return CallFailure(
                f"no reply from {self._where()} within {self.timeout:g}s",
                retryable=True,
                timed_out=self.timeout,
            )
        if "Connect" in name or isinstance(exc, (ConnectionError, OSError)):
            return CallFailure(f"cannot reach {self._where()}: {name}: {exc}", retryable=True)
        if isinstance(exc, ValueError):
            return CallFailure(f"malformed reply: {name}: {snippet(str(exc))}")
        return CallFailure(f"{name}: {snippet(str(exc))}")

    def close(self) -> None:
        """Forget the clients (their HTTP pools close with them)."""
        self._client = None
