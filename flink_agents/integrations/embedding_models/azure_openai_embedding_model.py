"""Embeddings from an Azure OpenAI deployment (the ``openai`` SDK's Azure client).

Example::

    agent.add_resource("azure_emb", ResourceDescriptor(
        clazz=AzureOpenAIEmbeddingModelConnection,
        azure_endpoint="https://my-resource.openai.azure.com", api_version="2024-10-21"))
    agent.add_resource("embedder", ResourceDescriptor(
        clazz=AzureOpenAIEmbeddingModelSetup, connection="azure_emb",
        model="my-embedding-deployment"))

Credentials as for the chat connection (see :mod:`flink_agents.integrations._azure`). Token
usage (``usage.prompt_tokens``) is counted in the agent's metrics.
"""

from __future__ import annotations

from flink_agents.integrations._azure import AzureOpenAIClient
from flink_agents.integrations.embedding_models.openai_embedding_model import (
    OpenAIEmbeddingModelConnection,
    OpenAIEmbeddingModelSetup,
)


class AzureOpenAIEmbeddingModelConnection(OpenAIEmbeddingModelConnection, AzureOpenAIClient):
    """Client of Azure OpenAI's embeddings
    (``/openai/deployments/{deployment}/embeddings?api-version=...``).

    Attributes:
        azure_endpoint: ``https://<resource>.openai.azure.com`` (default:
            ``AZURE_OPENAI_ENDPOINT``).
        api_version: the REST API version (default: ``OPENAI_API_VERSION``, else
            ``2024-10-21``).
        api_key: the resource key (default: ``AZURE_OPENAI_API_KEY``).
        azure_ad_token: a Microsoft Entra ID token instead of a key.
        use_entra_id: tokens from ``DefaultAzureCredential`` (extra ``azure``).
    """


class AzureOpenAIEmbeddingModelSetup(OpenAIEmbeddingModelSetup):
    """How an agent uses an Azure OpenAI embedding deployment.

    Attributes:
        connection: name of the :class:`AzureOpenAIEmbeddingModelConnection` resource.
        model: the deployment name (required).
        dimensions: shorten vectors to this size (text-embedding-3 models).
    """

    model: str
