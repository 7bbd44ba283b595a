"""``boto3``'s ``bedrock-runtime`` client, shared by the Bedrock chat and embedding
connections (extra ``bedrock``).

Credentials follow boto3's chain unless given: explicit keys (``aws_access_key_id`` +
``aws_secret_access_key`` [+ ``aws_session_token``]), else ``profile_name``, else the
environment / shared config / instance role. Requests are SigV4-signed by botocore. The
client's own retries are off (``total_max_attempts=1``): ours retry throttling
(``ThrottlingException``), 5xx, timeouts and connection errors, one policy for every
provider. boto3 clients are thread safe; one is made per connection, lazily.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from pydantic import Field, PrivateAttr, SecretStr

from flink_agents.integrations._common import (
    CallFailure,
    ModelClientSettings,
    is_retryable_status,
    parse_retry_after,
    secret_value,
    snippet,
)
from flink_agents.integrations._extras import require
from flink_agents.integrations._throttling import bedrock_is_throttling

#: Bedrock error codes worth another attempt besides throttling (HTTP 5xx and 408/429).
_RETRYABLE_CODES = frozenset(
    {
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelNotReadyException",
        "ModelTimeoutException",
    }
)


class BedrockClient(ModelClientSettings):
    """Settings and the lazily created ``bedrock-runtime`` client.

    Attributes:
        region: the AWS region (default: ``AWS_REGION`` / ``AWS_DEFAULT_REGION``, else
            ``us-east-1``).
        profile_name: a profile of the shared AWS config/credentials files.
        aws_access_key_id: an access key id (with ``aws_secret_access_key``).
        aws_secret_access_key: its secret.
        aws_session_token: a session token of temporary credentials.
        endpoint_url: another endpoint (a VPC endpoint, a proxy, a test server).
    """

    PROVIDER = "bedrock"

    region: str | None = None
    profile_name: str | None = None
    aws_access_key_id: str | None = Field(default=None, repr=False)
    aws_secret_access_key: SecretStr | None = Field(default=None, repr=False)
    aws_session_token: SecretStr | None = Field(default=None, repr=False)
    endpoint_url: str | None = None

    _client: Any = PrivateAttr(default=None)
    _client_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _region(self) -> str:
        return (
            self.region
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1"
        )

    def _secrets(self) -> tuple[str | None, ...]:
        return (
            secret_value(self.aws_secret_access_key),
            secret_value(self.aws_session_token),
            os.environ.get("AWS_SECRET_ACCESS_KEY"),
            os.environ.get("AWS_SESSION_TOKEN"),
        )

    @property
    def client(self) -> Any:
        """The ``bedrock-runtime`` client (thread safe, shared)."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    boto3 = require("boto3", extra="bedrock", user=type(self).__name__)
                    from botocore.config import Config

                    session = boto3.session.Session(
                        profile_name=self.profile_name,
                        aws_access_key_id=self.aws_access_key_id,
                        aws_secret_access_key=secret_value(self.aws_secret_access_key),
                        aws_session_token=secret_value(self.aws_session_token),
                        region_name=self._region(),
                    )
                    self._client = session.client(
                        "bedrock-runtime",
                        endpoint_url=self.endpoint_url,
                        config=Config(
                            retries={"total_max_attempts": 1, "mode": "standard"},
                            read_timeout=self.timeout,
                            connect_timeout=min(self.timeout, 10.0),
                            max_pool_connections=max(self.max_concurrency, 10),
                        ),
                    )
        return self._client

    def _failure(self, exc: Exception) -> CallFailure:
        """One failed attempt, classified."""
        from botocore import exceptions as bx

        if isinstance(exc, bx.ClientError):
            error = exc.response.get("Error", {})
            meta = exc.response.get("ResponseMetadata", {})
            code = str(error.get("Code") or "") or None
            status = meta.get("HTTPStatusCode")
            throttled = bedrock_is_throttling(code, status)
            return CallFailure(
                f"HTTP {status} {code}: {snippet(str(error.get('Message') or exc))}",
                status=status,
                retryable=is_retryable_status(status) or code in _RETRYABLE_CODES,
                retry_after=parse_retry_after(meta.get("HTTPHeaders")),
                throttled=throttled,
            )
        where = self.endpoint_url or f"bedrock-runtime in {self._region()}"
        if isinstance(exc, (bx.ReadTimeoutError, bx.ConnectTimeoutError)):
            return CallFailure(
                f"no reply from {where} within {self.timeout:g}s",
                retryable=True,
                timed_out=self.timeout,
            )
        if isinstance(exc, (bx.EndpointConnectionError, bx.ConnectionClosedError)):
            return CallFailure(f"cannot reach {where}: {exc}", retryable=True)
        if isinstance(exc, bx.NoCredentialsError):
            return CallFailure(
                "no AWS credentials: pass aws_access_key_id/aws_secret_access_key or "
                "profile_name, or configure the environment (AWS_ACCESS_KEY_ID, ~/.aws, an "
                "instance role)"
            )
        if isinstance(exc, bx.ParamValidationError):
            return CallFailure(f"invalid request: {snippet(str(exc))}")
        return CallFailure(f"{type(exc).__name__}: {snippet(str(exc))}")

    def _attempt(self, operation: str, request: dict[str, Any]) -> Any:
        """One call of the client's ``operation`` (``converse``, ``invoke_model``)."""
        try:
            return getattr(self.client, operation)(**request)
        except CallFailure:
            raise
        except Exception as exc:
            if type(exc).__module__.startswith("flink_agents"):
                raise
            raise self._failure(exc) from None

    def close(self) -> None:
        """Close the client's connection pool."""
        client, self._client = self._client, None
        if client is not None:
            client.close()
