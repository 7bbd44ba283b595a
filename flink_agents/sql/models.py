"""Flink models (``CREATE MODEL ... WITH ('provider' = ...)``) as our chat model resources.

A model's options map onto a chat model connection (endpoint, credentials, timeouts) and a
chat model setup (model name, sampling). Endpoint and credentials may come from a connection
of the agent catalog instead (``'connection' = 'name'``), which keeps the API key out of
Flink's ``SHOW CREATE MODEL``.

==========  ===================================================================================
provider    options
==========  ===================================================================================
openai      ``endpoint`` (``https://host/v1`` or ``.../v1/chat/completions``), ``model``,
            ``api-key`` or ``api-key-env`` (default: ``OPENAI_API_KEY``), ``temperature``,
            ``max-tokens``, ``top-p``, ``seed``, ``timeout``, ``max-retries``
ollama      ``endpoint`` (default ``http://localhost:11434``), ``model``, ``temperature``,
            ``timeout``, ``max-retries``
anthropic   ``endpoint``, ``model``, ``api-key`` or ``api-key-env`` (default:
            ``ANTHROPIC_API_KEY``), ``temperature``, ``max-tokens``, ``timeout``,
            ``max-retries``
azure_openai ``endpoint`` (``https://<resource>.openai.azure.com``), ``api-version``,
            ``model`` (the deployment), ``api-key`` or ``api-key-env`` (default:
            ``AZURE_OPENAI_API_KEY``), ``temperature``, ``max-tokens``, ``top-p``, ``seed``,
            ``api`` (``chat_completions`` / ``responses``), ``timeout``, ``max-retries``
vllm        ``endpoint`` (default ``http://localhost:8000/v1``), ``model`` (required),
            ``api-key`` or ``api-key-env``, ``temperature``, ``max-tokens``, ``top-p``,
            ``top-k``, ``seed``, ``timeout``, ``max-retries``
tongyi      ``endpoint`` (DashScope's ``.../api/v1``), ``model`` (default ``qwen-plus``),
            ``api-key`` or ``api-key-env`` (default: ``DASHSCOPE_API_KEY``), ``temperature``,
            ``max-tokens``, ``timeout``, ``max-retries``
bedrock     ``region``, ``endpoint``, ``model`` (required: model id or inference profile),
            ``access-key-id`` with ``secret-access-key`` or ``secret-access-key-env``,
            ``session-token``, ``profile`` (else boto3's credential chain), ``temperature``,
            ``max-tokens``, ``top-p``, ``timeout``, ``max-retries``
gemini      ``endpoint``, ``model`` (required), ``api-key`` or ``api-key-env`` (default:
            ``GEMINI_API_KEY``); Vertex AI: ``vertex-ai`` = ``true``, ``project``,
            ``location``, ``access-token``; ``temperature``, ``max-tokens``, ``top-p``,
            ``top-k``, ``timeout``, ``max-retries``
local       ``model-path`` (default: the managed model of ``make model``), ``temperature``,
            ``max-tokens``, ``seed``, ``n-ctx``
scripted    ``respond`` (``module:function`` of ``(messages, tools) -> reply``), ``latency``:
            :class:`~flink_agents.testing.ScriptedChatModelConnection`, for tests and examples
==========  ===================================================================================

Every provider also takes ``provider``, ``connection`` and Flink's ``task``; any other key is
an error naming the supported ones. ``api_key`` (the FLIP draft's spelling) is ``api-key``,
``api_key_env`` is ``api-key-env``. The ``'connection'`` option names a connection of the
model's provider type (endpoint and credentials) or an ``'api-key'`` connection (the key
alone).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flink_agents.api.resource import ResourceDescriptor
from flink_agents.errors import ConfigurationError
from flink_agents.sql.options import (
    API_KEY,
    connection_type,
    duration_seconds,
    normalized,
    secret_from,
)

_INTEGRATIONS = "flink_agents.integrations.chat_models."
_CLASSES = {
    "openai": (
        _INTEGRATIONS + "openai.openai_chat_model.OpenAIChatModelConnection",
        _INTEGRATIONS + "openai.openai_chat_model.OpenAIChatModelSetup",
    ),
    "ollama": (
        _INTEGRATIONS + "ollama_chat_model.OllamaChatModelConnection",
        _INTEGRATIONS + "ollama_chat_model.OllamaChatModelSetup",
    ),
    "anthropic": (
        _INTEGRATIONS + "anthropic.anthropic_chat_model.AnthropicChatModelConnection",
        _INTEGRATIONS + "anthropic.anthropic_chat_model.AnthropicChatModelSetup",
    ),
    "azure_openai": (
        _INTEGRATIONS + "azure.azure_openai_chat_model.AzureOpenAIChatModelConnection",
        _INTEGRATIONS + "azure.azure_openai_chat_model.AzureOpenAIChatModelSetup",
    ),
    "vllm": (
        _INTEGRATIONS + "vllm.vllm_chat_model.VLLMChatModelConnection",
        _INTEGRATIONS + "vllm.vllm_chat_model.VLLMChatModelSetup",
    ),
    "tongyi": (
        _INTEGRATIONS + "tongyi_chat_model.TongyiChatModelConnection",
        _INTEGRATIONS + "tongyi_chat_model.TongyiChatModelSetup",
    ),
    "bedrock": (
        _INTEGRATIONS + "bedrock.bedrock_chat_model.BedrockChatModelConnection",
        _INTEGRATIONS + "bedrock.bedrock_chat_model.BedrockChatModelSetup",
    ),
    "gemini": (
        _INTEGRATIONS + "gemini.gemini_chat_model.GeminiChatModelConnection",
        _INTEGRATIONS + "gemini.gemini_chat_model.GeminiChatModelSetup",
    ),
    "local": (
        _INTEGRATIONS + "local_llama.local_llama_chat_model.LocalLlamaChatModelConnection",
        _INTEGRATIONS + "local_llama.local_llama_chat_model.LocalLlamaChatModelSetup",
    ),
    "scripted": (
        "flink_agents.testing.scripted_chat_model.ScriptedChatModelConnection",
        "flink_agents.testing.scripted_chat_model.ScriptedChatModelSetup",
    ),
}
#: The model providers, in the order error messages list them.
PROVIDERS = tuple(_CLASSES)

_REMOTE = ("endpoint", "timeout", "max-retries")
_KEYS: dict[str, tuple[str, ...]] = {
    "openai": (
        *(*_REMOTE, "model", "api-key", "api-key-env", "temperature", "max-tokens"),
        *("top-p", "seed", "api"),
    ),
    "azure_openai": (
        *(*_REMOTE, "model", "api-key", "api-key-env", "temperature", "max-tokens"),
        *("top-p", "seed", "api", "api-version"),
    ),
    "vllm": (
        *(*_REMOTE, "model", "api-key", "api-key-env", "temperature", "max-tokens"),
        *("top-p", "top-k", "seed"),
    ),
    "tongyi": (*_REMOTE, "model", "api-key", "api-key-env", "temperature", "max-tokens"),
    "bedrock": (
        *(*_REMOTE, "model", "region", "access-key-id", "secret-access-key"),
        *("secret-access-key-env", "session-token", "profile", "temperature", "max-tokens"),
        "top-p",
    ),
    "gemini": (
        *(*_REMOTE, "model", "api-key", "api-key-env", "vertex-ai", "project", "location"),
        *("access-token", "temperature", "max-tokens", "top-p", "top-k"),
    ),
    "ollama": (*_REMOTE, "model", "temperature"),
    "anthropic": (*_REMOTE, "model", "api-key", "api-key-env", "temperature", "max-tokens"),
    "local": ("model-path", "temperature", "max-tokens", "seed", "n-ctx"),
    "scripted": ("respond", "latency"),
}
#: Keys every model takes (``task`` is Flink's, for ML_PREDICT; it is ignored here).
_COMMON = ("provider", "connection", "task")
#: Endpoint path suffixes Flink's model options include and our clients add themselves.
_SUFFIXES = {
    "openai": "/chat/completions",
    "vllm": "/chat/completions",
    "ollama": "/api/chat",
    "anthropic": "/v1/messages",
}


#: The connection argument an ``endpoint`` option sets (default ``base_url``).
_ENDPOINT_ARGUMENT = {
    "openai": "api_base_url",
    "vllm": "api_base_url",
    "azure_openai": "azure_endpoint",
    "bedrock": "endpoint_url",
}


def _cloud_connection(provider: str, options: Mapping[str, str]) -> dict[str, Any]:
    """Connection arguments of the cloud providers' own options."""
    conn: dict[str, Any] = {}
    if provider in ("openai", "azure_openai") and "api" in options:
        api = options["api"].strip().lower()
        if api not in ("chat_completions", "responses"):
            raise ConfigurationError(
                f"option 'api' = '{options['api']}' must be chat_completions or responses"
            )
        conn["api"] = api
    if provider == "azure_openai" and "api-version" in options:
        conn["api_version"] = options["api-version"]
    if provider == "bedrock":
        for key, argument in (
            ("region", "region"),
            ("profile", "profile_name"),
            ("access-key-id", "aws_access_key_id"),
            ("session-token", "aws_session_token"),
        ):
            if options.get(key):
                conn[argument] = options[key]
        secret = secret_from(options, "secret-access-key", "secret-access-key-env")
        if secret:
            conn["aws_secret_access_key"] = secret
        if bool(conn.get("aws_access_key_id")) != bool(secret):
            raise ConfigurationError(
                "'access-key-id' and 'secret-access-key' (or 'secret-access-key-env') go "
                "together; leave both out for boto3's credential chain or use 'profile'"
            )
    if provider == "gemini":
        if "vertex-ai" in options:
            flag = options["vertex-ai"].strip().lower()
            if flag not in ("true", "false"):
                raise ConfigurationError(
                    f"option 'vertex-ai' = '{options['vertex-ai']}' must be true or false"
                )
            conn["vertex_ai"] = flag == "true"
        for key in ("project", "location"):
            if options.get(key):
                conn[key] = options[key]
        if options.get("access-token"):
            conn["access_token"] = options["access-token"]
    return conn


@dataclass(frozen=True)
class ModelResources:
    """The chat model resources of one model.

    Attributes:
        provider: the provider.
        connection: descriptor of the chat model connection.
        setup_class: class path of the chat model setup.
        setup_arguments: arguments of the setup (``model``, ``temperature``...), without
            ``connection`` and ``tools``, which the agent fills in.
    """

    provider: str
    connection: ResourceDescriptor
    setup_class: str
    setup_arguments: dict[str, Any] = field(default_factory=dict)

    def setup(self, connection_name: str, tools: list[str]) -> ResourceDescriptor:
        """The setup descriptor using connection resource ``connection_name`` and ``tools``."""
        return ResourceDescriptor(
            clazz=self.setup_class,
            connection=connection_name,
            tools=list(tools),
            **self.setup_arguments,
        )


def _provider(options: Mapping[str, str], where: str) -> str:
    provider = options.get("provider", "").strip().lower()
    if not provider:
        raise ConfigurationError(
            f"{where} needs a 'provider' option: one of {', '.join(PROVIDERS)}"
        )
    if provider not in _CLASSES:
        raise ConfigurationError(
            f"{where}: option 'provider' = '{options['provider']}' is not supported; use one "
            f"of {', '.join(PROVIDERS)}"
        )
    return provider


def check_provider_options(provider: str, options: Mapping[str, str], where: str) -> None:
    """Check options of ``provider`` (of a model, or of a connection used by models).

    Raises:
        ConfigurationError: an unknown key (the message lists the supported ones) or a bad
            value.
    """
    allowed = _KEYS[provider] + (_COMMON if where != "connection" else ())
    for key in options:
        if key not in allowed:
            raise ConfigurationError(
                f"unknown option '{key}' for a {provider} {where}; supported: "
                f"{', '.join(sorted(allowed))}"
            )
    _arguments(provider, options, for_model=where != "connection")  # the value checks


def _number(options: Mapping[str, str], key: str, kind: type, minimum: float | None = None) -> Any:
    value = options[key]
    try:
        number = kind(value)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise ConfigurationError(f"option '{key}' = '{value}' must be {what}") from None
    if minimum is not None and number < minimum:
        raise ConfigurationError(f"option '{key}' = '{value}' must be >= {minimum}")
    return number


def _arguments(
    provider: str, options: Mapping[str, str], *, for_model: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Connection and setup arguments of ``provider`` from ``options``."""
    conn: dict[str, Any] = {}
    setup: dict[str, Any] = {}
    endpoint = options.get("endpoint", "").strip().rstrip("/")
    suffix = _SUFFIXES.get(provider)
    if suffix and endpoint.endswith(suffix):
        endpoint = endpoint[: -len(suffix)]
    if endpoint:
        conn[_ENDPOINT_ARGUMENT.get(provider, "base_url")] = endpoint
    if "timeout" in options:
        seconds = duration_seconds(options["timeout"], "timeout")
        conn["request_timeout" if provider == "ollama" else "timeout"] = seconds
    if "max-retries" in options:
        conn["max_retries"] = _number(options, "max-retries", int, 0)
    if provider in ("openai", "anthropic", "azure_openai", "vllm", "tongyi", "gemini"):
        key = secret_from(options, "api-key", "api-key-env")
        if key:
            conn["api_key"] = key
    conn.update(_cloud_connection(provider, options))
    if "model" in options:
        setup["model"] = options["model"]
    if "temperature" in options:
        setup["temperature"] = _number(options, "temperature", float, 0)
    if "max-tokens" in options:
        setup["max_tokens"] = _number(options, "max-tokens", int, 1)
    if provider in ("openai", "azure_openai", "vllm"):
        extra = {}
        if "top-p" in options:
            extra["top_p"] = _number(options, "top-p", float, 0)
        if "seed" in options:
            extra["seed"] = _number(options, "seed", int)
        if extra:
            setup["additional_kwargs"] = extra
    if provider in ("bedrock", "gemini") and "top-p" in options:
        setup["top_p"] = _number(options, "top-p", float, 0)
    if provider in ("vllm", "gemini") and "top-k" in options:
        setup["top_k"] = _number(options, "top-k", int, 0)
    if provider == "local":
        if "model-path" in options:
            conn["model_path"] = options["model-path"]
        if "n-ctx" in options:
            conn["n_ctx"] = _number(options, "n-ctx", int, 256)
        if "seed" in options:
            setup["seed"] = _number(options, "seed", int)
    if provider == "scripted":
        if "respond" not in options or ":" not in options["respond"]:
            raise ConfigurationError(
                "a scripted model needs 'respond' = 'module:function' (a function of "
                "(messages, tools) returning the reply)"
            )
        conn["respond"] = options["respond"]
        if "latency" in options:
            conn["latency"] = duration_seconds(options["latency"], "latency")
    needs_model = ("ollama", "anthropic", "azure_openai", "vllm", "bedrock", "gemini")
    if for_model and provider in needs_model and "model" not in options:
        raise ConfigurationError(f"a {provider} model needs a 'model' option (the model name)")
    return conn, setup


def model_resources(
    name: str,
    options: Mapping[str, str],
    connection: Mapping[str, str] | None = None,
) -> ModelResources:
    """The chat model resources of the Flink model ``name`` with ``options``.

    Args:
        name: the model's identifier (for messages).
        options: the model's options in Flink's catalog.
        connection: the options of the catalog connection its ``'connection'`` option names
            (endpoint, credentials); the model's own options win.

    Raises:
        ConfigurationError: no or an unknown provider, an unknown option or a bad value
            (the message names the model and the option).
    """
    where = f"model {name}"
    provider = _provider(options, where)
    try:
        merged = normalized(options)
        conn = normalized(connection) if connection is not None else None
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None
    if conn is not None:
        conn_type = connection_type(conn)
        if conn_type not in (provider, API_KEY):
            raise ConfigurationError(
                f"{where}: its connection is of type '{conn_type}', not '{provider}' (or "
                f"'{API_KEY}', a connection holding only the key)"
            )
        for key, value in conn.items():
            if key != "type":
                merged.setdefault(key, value)
    try:
        check_provider_options(provider, merged, "model")
        conn_args, setup_args = _arguments(provider, merged)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}") from None
    conn_class, setup_class = _CLASSES[provider]
    return ModelResources(
        provider=provider,
        connection=ResourceDescriptor(clazz=conn_class, **conn_args),
        setup_class=setup_class,
        setup_arguments=setup_args,
    )
