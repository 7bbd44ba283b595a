"""What a model call was, in the OpenTelemetry GenAI conventions' terms (no OTel import).

The run loop reports a model call by its chat model resource's name (``CallFinished.name``).
The event log and the OpenTelemetry export also want the provider (``gen_ai.provider.name``,
formerly ``gen_ai.system``) and the requested model (``gen_ai.request.model``):
:func:`model_identity` finds them from the setup resource, once per name, and
:func:`reply_details` takes the reported model, finish reason and response id from a
reply's ``extra_args`` (the integrations' common keys).
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from flink_agents.api.resource import ResourceType

#: Our integrations' ``PROVIDER`` names -> the GenAI conventions' well-known provider names
#: (others are kept as they are: the conventions allow a custom value).
PROVIDER_NAMES = {
    "openai": "openai",
    "azure_openai": "azure.ai.openai",
    "anthropic": "anthropic",
    "bedrock": "aws.bedrock",
    "gemini": "gcp.gen_ai",
}

_SUFFIXES = re.compile(r"(ChatModelConnection|ChatModel|Connection)$")


class ModelIdentity(NamedTuple):
    """Who answered a chat model resource's calls.

    Attributes:
        provider: the provider, in the conventions' names (``openai``, ``anthropic``,
            ``aws.bedrock``, ...; ``ollama``, ``vllm``, ... as our integrations call them;
            else from the connection's class name: ``scripted``).
        model: the model the setup asks for (None when the setup names none).
    """

    provider: str | None
    model: str | None


_UNKNOWN = ModelIdentity(None, None)


def provider_name(connection: Any) -> str | None:
    """The provider of a chat model connection (see :class:`ModelIdentity`)."""
    if connection is None:
        return None
    own = getattr(type(connection), "PROVIDER", None)
    if isinstance(own, str) and own and own != "model":  # "model": the base class's default
        return PROVIDER_NAMES.get(own, own)
    name = _SUFFIXES.sub("", type(connection).__name__)
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() or None


def model_identity(resources: Any, name: str) -> ModelIdentity:
    """The provider and requested model of chat model setup ``name`` in ``resources`` (a
    ``ResourceCache``); nothing is created: a setup not made yet is unknown."""
    cache = getattr(resources, "_cache", None)
    setup = cache.get((ResourceType.CHAT_MODEL, name)) if isinstance(cache, dict) else None
    if setup is None:
        return _UNKNOWN
    model = getattr(setup, "model", None)
    try:
        connection = setup.get_connection()
    except Exception:  # noqa: BLE001 - an identity is best effort; the call itself worked
        connection = None
    return ModelIdentity(provider_name(connection), model if isinstance(model, str) else None)


class ReplyDetails(NamedTuple):
    """What a model reply says about itself (``ChatMessage.extra_args``).

    Attributes:
        model: the model that answered, as the provider reported it.
        finish_reason: why it stopped (``stop``, ``tool_calls``, ``length``, ...).
        response_id: the provider's id of the response.
        usage: ``{"prompt_tokens", "completion_tokens", "total_tokens"}`` when reported.
    """

    model: str | None
    finish_reason: str | None
    response_id: str | None
    usage: dict[str, Any] | None


_NO_DETAILS = ReplyDetails(None, None, None, None)


def reply_details(result: Any) -> ReplyDetails:
    """The :class:`ReplyDetails` of a model call's result (a ``ChatMessage``)."""
    extra = getattr(result, "extra_args", None)
    if not extra:
        return _NO_DETAILS
    get = extra.get
    model, reason, response_id = get("model"), get("finish_reason"), get("response_id")
    usage = get("usage")
    return ReplyDetails(
        model if isinstance(model, str) else None,
        reason if isinstance(reason, str) else None,
        response_id if isinstance(response_id, str) else None,
        usage if isinstance(usage, dict) else None,
    )
