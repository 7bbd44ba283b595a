"""A `vLLM <https://docs.vllm.ai>`_ server through its OpenAI-compatible API (class names
as in Apache Flink Agents).

Example::

    agent.add_resource("vllm", ResourceDescriptor(
        clazz=VLLMChatModelConnection, api_base_url="http://gpu-box:8000/v1"))
    agent.add_resource("model", ResourceDescriptor(
        clazz=VLLMChatModelSetup, connection="vllm", model="Qwen/Qwen2.5-7B-Instruct",
        top_k=20, repetition_penalty=1.05, tools=["add"]))

The connection is :class:`OpenAIChatModelConnection` with vLLM's defaults: the server of
``vllm serve`` (``http://localhost:8000/v1``) and the placeholder key ``EMPTY`` (a server
started without ``--api-key`` ignores it; set ``api_key`` when it has one). As upstream, the
``OPENAI_*`` environment variables are not consulted.

vLLM's own sampling parameters (``top_k``, ``min_p``, ``repetition_penalty``...) and guided
decoding (``guided_json``, ``guided_choice``, ``guided_regex``, ``guided_grammar``) travel in
the request body next to the OpenAI ones. An output schema is sent as a ``json_schema``
response format (vLLM enforces it by guided decoding, for any model it serves);
``structured_output="guided_json"`` sends it as ``guided_json`` instead (older vLLM
versions).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator

from flink_agents.integrations.chat_models.openai.openai_chat_model import (
    OpenAIChatModelConnection,
    OpenAIChatModelSetup,
)

DEFAULT_VLLM_API_BASE_URL = "http://localhost:8000/v1"
"""Default base URL of a local ``vllm serve``."""

DEFAULT_VLLM_API_KEY = "EMPTY"

VLLMStructuredOutput = Literal["json_schema", "json_object", "guided_json", "off"]
"""Placeholder key for a server started without ``--api-key``."""

#: vLLM's request fields beyond the OpenAI ones that the setup declares.
_VLLM_FIELDS = (
    "top_k",
    "min_p",
    "repetition_penalty",
    "length_penalty",
    "min_tokens",
    "guided_json",
    "guided_choice",
    "guided_regex",
    "guided_grammar",
    "guided_decoding_backend",
)


class VLLMChatModelConnection(OpenAIChatModelConnection):
    """Client of a vLLM server (OpenAI-compatible API).

    Attributes:
        api_base_url: the server's ``/v1`` URL (default ``http://localhost:8000/v1``; also
            for None or blank values).
        api_key: the server's ``--api-key`` (default: the placeholder ``EMPTY``).
        timeout: seconds one attempt may take.
        max_retries: further attempts after 429, 5xx, timeouts or connection errors.
        max_concurrency: calls this connection runs at once per task slot.
    """

    PROVIDER = "vllm"

    api_key: SecretStr | None = Field(default=SecretStr(DEFAULT_VLLM_API_KEY), repr=False)
    api_base_url: str | None = DEFAULT_VLLM_API_BASE_URL

    @field_validator("api_base_url", mode="before")
    @classmethod
    def _default_url(cls, value: Any) -> Any:
        return value if isinstance(value, str) and value.strip() else DEFAULT_VLLM_API_BASE_URL

    @field_validator("api_key", mode="before")
    @classmethod
    def _default_key(cls, value: Any) -> Any:
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        return value if isinstance(value, str) and value.strip() else DEFAULT_VLLM_API_KEY

    def _request(self, messages: Any, tools: Any, kwargs: dict[str, Any]) -> Any:
        kwargs = dict(kwargs)
        if kwargs.get("structured_output") == "guided_json":
            kwargs["structured_output"] = "off"
            schema = kwargs.get("output_schema")
            if schema is not None and kwargs.get("guided_json") is None:
                kwargs["guided_json"] = schema
        return super()._request(messages, tools, kwargs)


class VLLMChatModelSetup(OpenAIChatModelSetup):
    """How an agent uses a model served by vLLM.

    Attributes:
        connection: name of the :class:`VLLMChatModelConnection` resource.
        model: the served model's name (required: what ``GET /v1/models`` lists).
        temperature: sampling temperature.
        max_tokens: most tokens to generate.
        top_k: sample from the k most likely tokens (-1: all).
        min_p: minimum probability relative to the most likely token.
        repetition_penalty: > 1 discourages repeating tokens.
        length_penalty: beam search length penalty.
        min_tokens: fewest tokens to generate before a stop.
        guided_json: a JSON schema the output must follow.
        guided_choice: the output is one of these strings.
        guided_regex: the output matches this regular expression.
        guided_grammar: the output follows this context-free grammar.
        guided_decoding_backend: vLLM's guided decoding backend (``xgrammar``...).
        structured_output: how an output schema is sent: ``"json_schema"`` (response
            format), ``"guided_json"``, ``"json_object"`` or ``"off"``.
        additional_kwargs: further request options.
    """

    model: str
    structured_output: VLLMStructuredOutput = "json_schema"  # type: ignore[assignment]
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    length_penalty: float | None = None
    min_tokens: int | None = None
    guided_json: dict[str, Any] | str | None = None
    guided_choice: list[str] | None = None
    guided_regex: str | None = None
    guided_grammar: str | None = None
    guided_decoding_backend: str | None = None

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The options sent with every call."""
        options = super().model_kwargs
        for name in _VLLM_FIELDS:
            value = getattr(self, name)
            if value is not None:
                options.setdefault(name, value)
        return options
