"""The ``openai`` SDK's Azure clients, shared by the Azure OpenAI chat and embedding
connections.

Azure OpenAI serves each model as a *deployment*: requests go to
``{azure_endpoint}/openai/deployments/{deployment}/...?api-version={api_version}``. The
``model`` of a setup is the deployment name. Credentials, first found wins: ``api_key``
(header ``api-key``), ``azure_ad_token`` (a Microsoft Entra ID bearer token), ``use_entra_id``
(tokens from ``azure.identity.DefaultAzureCredential``, extra ``azure``), then the
environment variables ``AZURE_OPENAI_API_KEY`` and ``AZURE_OPENAI_AD_TOKEN``.
"""

from __future__ import annotations

import os
from typing import Any

import openai
from pydantic import Field, SecretStr

from flink_agents.errors import ModelCallError
from flink_agents.integrations._common import secret_value
from flink_agents.integrations._extras import require
from flink_agents.integrations._openai import OpenAIClient

#: The scope of Entra ID tokens for Azure OpenAI.
ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"
#: The api-version used when neither ``api_version`` nor ``OPENAI_API_VERSION`` is set.
DEFAULT_API_VERSION = "2024-10-21"


class AzureOpenAIClient(OpenAIClient):
    """Settings and lazily created Azure SDK clients.

    Attributes:
        azure_endpoint: ``https://<resource>.openai.azure.com``; default: the
            ``AZURE_OPENAI_ENDPOINT`` environment variable.
        api_version: the REST API version (``2024-10-21``...); default: the
            ``OPENAI_API_VERSION`` environment variable, else ``2024-10-21``.
        api_key: the resource's key; default: ``AZURE_OPENAI_API_KEY``.
        azure_ad_token: a Microsoft Entra ID access token; default: ``AZURE_OPENAI_AD_TOKEN``.
        use_entra_id: get tokens from ``azure.identity.DefaultAzureCredential``
            (managed identity, workload identity, ``az login``...); needs the ``azure``
            extra.
        entra_scope: the token scope for ``use_entra_id``.
    """

    PROVIDER = "azure_openai"

    azure_endpoint: str | None = None
    api_version: str | None = None
    azure_ad_token: SecretStr | None = Field(default=None, repr=False)
    use_entra_id: bool = False
    entra_scope: str = ENTRA_SCOPE

    def _endpoint_url(self) -> str:
        endpoint = self.azure_endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT")
        if not endpoint:
            raise ModelCallError(
                "no Azure OpenAI endpoint: pass azure_endpoint='https://<resource>.openai."
                "azure.com' or set the AZURE_OPENAI_ENDPOINT environment variable",
                provider=self.PROVIDER,
            )
        return endpoint

    def _version(self) -> str:
        return self.api_version or os.environ.get("OPENAI_API_VERSION") or DEFAULT_API_VERSION

    def _where(self) -> str:
        return self.azure_endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT") or "Azure OpenAI"

    def _secrets(self) -> tuple[str | None, ...]:
        return (
            secret_value(self.api_key),
            secret_value(self.azure_ad_token),
            os.environ.get("AZURE_OPENAI_API_KEY"),
            os.environ.get("AZURE_OPENAI_AD_TOKEN"),
        )

    def _credentials(self) -> dict[str, Any]:
        key = secret_value(self.api_key)
        if key:
            return {"api_key": key}
        token = secret_value(self.azure_ad_token)
        if token:
            return {"azure_ad_token": token}
        if self.use_entra_id:
            identity = require("azure.identity", extra="azure", user="use_entra_id=True")
            provider = identity.get_bearer_token_provider(
                identity.DefaultAzureCredential(), self.entra_scope
            )
            return {"azure_ad_token_provider": provider}
        key = os.environ.get("AZURE_OPENAI_API_KEY")
        if key:
            return {"api_key": key}
        token = os.environ.get("AZURE_OPENAI_AD_TOKEN")
        if token:
            return {"azure_ad_token": token}
        raise ModelCallError(
            "no Azure OpenAI credentials: pass api_key=, azure_ad_token= or use_entra_id=True, "
            "or set AZURE_OPENAI_API_KEY",
            provider=self.PROVIDER,
        )

    def _client_kwargs(self) -> dict[str, Any]:
        return {
            "azure_endpoint": self._endpoint_url(),
            "api_version": self._version(),
            **self._credentials(),
            "max_retries": 0,  # retries are ours (one policy for every provider)
            "timeout": self.timeout,
            "default_headers": self.default_headers,
        }

    def _new_client(self, kwargs: dict[str, Any], *, asynchronous: bool) -> Any:
        if asynchronous:
            return openai.AsyncAzureOpenAI(**kwargs)
        return openai.AzureOpenAI(**kwargs)

    def api_version_date(self) -> str | None:
        """The ``YYYY-MM-DD`` of a dated api-version, None for others (``v1``, ``preview``)."""
        version = self._version()
        head = version[:10]
        if (
            len(head) == 10
            and head[4] == "-"
            and head[7] == "-"
            and head.replace("-", "").isdigit()
        ):
            return head
        return None
