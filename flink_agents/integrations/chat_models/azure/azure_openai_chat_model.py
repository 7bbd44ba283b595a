"""Azure OpenAI through the ``openai`` SDK's Azure client (class names as in Apache Flink
Agents).

Example::

    agent.add_resource("azure", ResourceDescriptor(
        clazz=AzureOpenAIChatModelConnection,
        azure_endpoint="https://my-resource.openai.azure.com", api_version="2024-10-21"))
    agent.add_resource("model", ResourceDescriptor(
        clazz=AzureOpenAIChatModelSetup, connection="azure", model="my-gpt4o-deployment",
        model_of_azure_deployment="gpt-4o", tools=["add"]))

``model`` is the *deployment* name; ``model_of_azure_deployment`` (the model behind it) is
accepted as in Apache Flink Agents, but the reply's ``extra_args["model"]`` is the model Azure
reports in its answer. The key comes from ``api_key`` or
``AZURE_OPENAI_API_KEY`` (or an Entra ID token: ``azure_ad_token``, ``use_entra_id``; see
:mod:`flink_agents.integrations._azure`) and stays out of the plan, ``repr``, logs and errors.

Structured output: an output schema is sent as a ``json_schema`` response format with
api-versions from 2024-08-01 (Azure's first with structured outputs) and ``v1``/undated ones;
an older api-version gets JSON mode plus the schema as an instruction. ``api="responses"``
uses Azure's Responses API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.tools.tool import Tool
from flink_agents.integrations._azure import AzureOpenAIClient
from flink_agents.integrations.chat_models._messages import schema_instruction
from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)

#: The first api-version with structured outputs (``json_schema`` response formats).
STRUCTURED_OUTPUT_SINCE = "2024-08-01"


class AzureOpenAIChatModelConnection(OpenAIChatModelConnection, AzureOpenAIClient):
    """Client of an Azure OpenAI resource.

    Attributes:
        azure_endpoint: ``https://<resource>.openai.azure.com`` (default:
            ``AZURE_OPENAI_ENDPOINT``).
        api_version: the REST API version (default: ``OPENAI_API_VERSION``, else
            ``2024-10-21``).
        api_key: the resource key (default: ``AZURE_OPENAI_API_KEY``).
        azure_ad_token: a Microsoft Entra ID token instead of a key.
        use_entra_id: tokens from ``DefaultAzureCredential`` (extra ``azure``).
        api: ``"chat_completions"`` or ``"responses"``.
        timeout: seconds one attempt may take.
        max_retries: further attempts after 429, 5xx, timeouts or connection errors.
        max_concurrency: calls this connection runs at once per task slot.
    """

    def _request(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], str]:
        kwargs = dict(kwargs)
        kwargs.pop("model_of_azure_deployment", None)  # Azure's replies name the model
        schema = kwargs.get("output_schema")
        if schema is not None and kwargs.get("structured_output", "json_schema") == "json_schema":
            dated = self.api_version_date()
            if dated is not None and dated < STRUCTURED_OUTPUT_SINCE:
                kwargs["structured_output"] = "json_object"
                messages = [
                    ChatMessage(role=MessageRole.SYSTEM, content=schema_instruction(schema)),
                    *messages,
                ]
        return super()._request(messages, tools, kwargs)


class AzureOpenAIChatModelSetup(OpenAIChatModelSetup):
    """How an agent uses an Azure OpenAI deployment.

    Attributes:
        connection: name of the :class:`AzureOpenAIChatModelConnection` resource.
        model: the deployment name (required).
        model_of_azure_deployment: the model the deployment runs (``gpt-4o``); accepted for
            Apache Flink Agents' files (token metrics are counted without it here).
        temperature: sampling temperature (0-2).
        max_tokens: most tokens to generate.
        logprobs: return log probabilities of the output tokens.
        structured_output: ``"json_schema"``, ``"json_object"`` or ``"off"`` (see the
            module docstring for old api-versions).
        additional_kwargs: further request options.
    """

    model: str
    model_of_azure_deployment: str | None = None
    logprobs: bool | None = None

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        return {**super().model_kwargs, "logprobs": self.logprobs}
