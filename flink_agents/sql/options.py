"""``WITH`` options of tools, agents and connections: which exist, what they must hold, and
how secrets are kept out of what is shown.

Every check raises :class:`~flink_agents.errors.ConfigurationError` naming the option and
why it is wrong. Secrets (the package's one rule, ``flink_agents/secrets.py``: option keys
named like ``api-key``, ``token``, ``password``; URL credentials and secret query parameters
in values) are shown as ``***`` by ``SHOW CREATE`` and ``DESC ... EXTENDED`` and are never
logged.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flink_agents.api.core_options import (
    AgentConfigOptions,
    AgentConfiguration,
    AgentExecutionOptions,
    ConfigOption,
)
from flink_agents.errors import ConfigurationError
from flink_agents.secrets import MASK as MASK  # shown instead of a secret value
from flink_agents.secrets import is_secret_name, masked_mapping


def is_secret(key: str) -> bool:
    """Whether an option key names a secret (``api-key``, ``token``, ``password``, ...):
    the package's rule, :func:`flink_agents.secrets.is_secret_name`."""
    return is_secret_name(key)


def masked(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` with secret values replaced by :data:`MASK` (and URL credentials or
    secret query parameters inside the others masked)."""
    return masked_mapping(options)


def duration_seconds(value: str, key: str) -> float:
    """``'30s'``, ``'500 ms'``, ``'2min'``, ``'1h'`` or a plain number of seconds."""
    match = re.fullmatch(
        r"\s*(\d+(?:\.\d+)?)\s*(ms|milli|millis|s|sec|secs|second|seconds|min|mins|minute"
        r"|minutes|h|hour|hours)?\s*",
        value,
        re.I,
    )
    if not match:
        raise ConfigurationError(
            f"option '{key}' = '{value}' is not a duration: use e.g. '30s', '500ms' or '2min'"
        )
    number, unit = float(match.group(1)), (match.group(2) or "s").lower()
    scale = {"ms": 0.001, "milli": 0.001, "millis": 0.001, "min": 60.0, "mins": 60.0}
    scale.update({"minute": 60.0, "minutes": 60.0, "h": 3600.0, "hour": 3600.0, "hours": 3600.0})
    seconds = number * scale.get(unit, 1.0)
    if seconds <= 0:
        raise ConfigurationError(f"option '{key}' = '{value}' must be a positive duration")
    return seconds


def _unknown(key: str, where: str, supported: list[str]) -> ConfigurationError:
    return ConfigurationError(
        f"unknown option '{key}' for {where}; supported: {', '.join(sorted(supported))}"
    )


# -- aliases -----------------------------------------------------------------------------------

#: Option keys accepted in another spelling: the FLIP draft writes ``'api_key'`` where our
#: options (like Flink's own, ``'api-key'``) use hyphens. The stored definition keeps what was
#: written; checks and resources read the canonical key.
OPTION_ALIASES = {"api_key": "api-key", "api_key_env": "api-key-env"}


def normalized(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` with alias keys (``api_key``) replaced by their canonical key (``api-key``).

    Raises:
        ConfigurationError: a key is given in both spellings.
    """
    out: dict[str, str] = {}
    for key, value in options.items():
        canonical = OPTION_ALIASES.get(key, key)
        if canonical in out:
            raise ConfigurationError(
                f"option '{canonical}' is given twice (as '{key}' too): give it once"
            )
        out[canonical] = value
    return out


# -- agents ------------------------------------------------------------------------------------

#: The agents configuration keys an agent's options may set (``max-iterations``,
#: ``error-handling-strategy``, ``max-in-flight``, ...).
CONFIG_KEYS: dict[str, ConfigOption[Any]] = {
    opt.key: opt
    for holder in (AgentConfigOptions, AgentExecutionOptions)
    for opt in vars(holder).values()
    if isinstance(opt, ConfigOption)
}
#: Options of the SQL agent itself (the default provider's; see
#: :class:`flink_agents.sql.providers.DefaultAgentProvider`).
MEMORY_TURNS = "memory-turns"
DESCRIPTION = "description"
_ALIASES = {"max_iterations": "max-iterations"}


@dataclass(frozen=True)
class AgentSettings:
    """What an agent's options (and an ``agent_run`` ``CONFIG``) say.

    Attributes:
        memory_turns: earlier exchanges of the same ``PARTITION BY`` key sent to the model
            with each input (0: none; the default provider's option, 0 for others).
        config: agents configuration values (``max-iterations``, ``error-handling-strategy``...).
        provider: the agent provider's name (``'provider'`` option; ``default``).
        options: the provider's own options (neither ``provider`` nor configuration keys).
    """

    memory_turns: int
    config: dict[str, Any]
    provider: str = "default"
    options: dict[str, str] = field(default_factory=dict)


def agent_settings(*option_maps: Mapping[str, str]) -> AgentSettings:
    """Check and combine agent options (later maps, an ``agent_run`` call's ``CONFIG``,
    override earlier ones): the provider's own options are checked by the provider.

    Raises:
        ConfigurationError: an unknown provider or key, or a bad value.
    """
    from flink_agents.sql.providers import (
        DEFAULT,
        PROVIDER,
        DefaultAgentProvider,
        agent_provider,
    )

    merged: dict[str, str] = {}
    for i, options in enumerate(option_maps):
        for key, value in options.items():
            if key == PROVIDER and i > 0:
                raise ConfigurationError(
                    "the 'provider' of an agent cannot be changed per call: ALTER AGENT a SET "
                    "('provider' = '...') or create another agent"
                )
            merged[_ALIASES.get(key, key)] = value
    name = merged.pop(PROVIDER, "").strip() or DEFAULT
    provider = agent_provider(name)
    config: dict[str, Any] = {}
    own: dict[str, str] = {}
    for key, value in merged.items():
        option = CONFIG_KEYS.get(key)
        if option is None:
            own[key] = value
        else:
            config[key] = option.coerce(value)  # a bad value: ConfigurationError naming it
    provider.check_options(own)
    AgentConfiguration(config)  # every value once more through the configuration's own check
    turns = (
        DefaultAgentProvider.memory_turns(own) if isinstance(provider, DefaultAgentProvider) else 0
    )
    return AgentSettings(memory_turns=turns, config=config, provider=name, options=own)


# -- tools -------------------------------------------------------------------------------------

_FUNCTION_TOOL_KEYS = ("type", "description")
_MCP_TOOL_KEYS = ("type", "allowed_tools", "read_timeout")
#: An MCP tool whose connection only holds a key (``'type' = 'api-key'``) names the server.
_ENDPOINT_KEYS = ("endpoint", "url")


def check_tool_options(
    tool_type: str, options: Mapping[str, str], connection_type: str | None = None
) -> None:
    """Check a tool's options (``function`` or ``mcp`` tool).

    Args:
        tool_type: ``function`` or ``mcp``.
        options: the tool's ``WITH`` options.
        connection_type: the type of the connection of an ``mcp`` tool (``mcp`` or
            ``api-key``); an ``api-key`` connection holds only the key, so the tool names the
            server (``'endpoint'``).

    Raises:
        ConfigurationError: an unknown key, a ``type`` that does not match the tool, a
            missing endpoint, or a bad value.
    """
    keys = _FUNCTION_TOOL_KEYS if tool_type == "function" else _MCP_TOOL_KEYS
    if tool_type == "mcp" and connection_type == API_KEY:
        keys = (*keys, *_ENDPOINT_KEYS)
        if not any(options.get(k, "").strip() for k in _ENDPOINT_KEYS):
            raise ConfigurationError(
                "an mcp tool USING CONNECTION of an 'api-key' connection needs the server's "
                "address in its own options: add 'endpoint' = 'https://host/mcp' to its WITH "
                "(the connection holds only the key)"
            )
    for key in options:
        if key not in keys:
            if tool_type == "mcp" and key in _ENDPOINT_KEYS:
                raise ConfigurationError(
                    f"option '{key}' of an mcp tool is for a tool whose connection is an "
                    "'api-key' connection; this tool's connection is an 'mcp' connection, "
                    "which names the server itself ('endpoint' or 'command')"
                )
            raise _unknown(key, f"a {tool_type} tool", list(keys))
    declared = options.get("type", tool_type).lower()
    if declared == "mcp_server":
        declared = "mcp"
    if declared != tool_type:
        using = "USING FUNCTION" if tool_type == "function" else "USING CONNECTION"
        raise ConfigurationError(
            f"option 'type' = '{options['type']}' does not match the tool: a tool {using} is "
            f"of type '{tool_type}'"
        )
    if "read_timeout" in options:
        duration_seconds(options["read_timeout"], "read_timeout")


def allowed_tools(options: Mapping[str, str]) -> list[str]:
    """The ``allowed_tools`` option as a list (empty: all of the server's tools)."""
    return [t.strip() for t in options.get("allowed_tools", "").split(",") if t.strip()]


# -- connections ------------------------------------------------------------------------------

#: Connection types: ``mcp`` (an MCP server for tools) and the model providers (a model's
#: ``'connection'`` option takes endpoint and credentials from it).
_MCP_KEYS = (
    "type",
    "endpoint",
    "url",
    "command",
    "args",
    "cwd",
    "api-key",
    "api-key-env",
    "timeout",
)


#: The type of a connection that holds a key and nothing else (the FLIP draft's
#: ``'type' = 'api-key'``): a model (``'connection' = 'c'``) or an MCP tool (``USING
#: CONNECTION c``) takes its key from it.
API_KEY = "api-key"
_API_KEY_KEYS = ("type", "api-key", "api-key-env")
_TYPE_ALIASES = {"mcp_server": "mcp", "api_key": API_KEY, "apikey": API_KEY}


def connection_type(options: Mapping[str, str]) -> str:
    """The connection's ``type``, lower case (``mcp`` for ``mcp_server``, ``api-key`` for
    ``api_key``)."""
    kind = options.get("type", "").strip().lower()
    return _TYPE_ALIASES.get(kind, kind)


def check_connection_options(options: Mapping[str, str]) -> None:
    """Check a connection's options.

    Raises:
        ConfigurationError: no or an unknown ``type``, an unknown key, or a bad value.
    """
    from flink_agents.sql.models import PROVIDERS, check_provider_options

    options = normalized(options)
    kind = connection_type(options)
    types = ["mcp", API_KEY, *PROVIDERS]
    if not kind:
        raise ConfigurationError(f"a connection needs a 'type' option: one of {', '.join(types)}")
    if kind == API_KEY:
        for key in options:
            if key not in _API_KEY_KEYS:
                raise _unknown(key, "an api-key connection", list(_API_KEY_KEYS))
        if bool(options.get("api-key")) == bool(options.get("api-key-env")):
            raise ConfigurationError(
                "an api-key connection needs either 'api-key' (the key) or 'api-key-env' (an "
                "environment variable holding it), not both"
            )
        return
    if kind == "mcp":
        for key in options:
            if key not in _MCP_KEYS:
                raise _unknown(key, "an mcp connection", list(_MCP_KEYS))
        mcp_server_arguments(options, {})  # the endpoint / command checks
        return
    if kind not in PROVIDERS:
        raise ConfigurationError(
            f"option 'type' = '{options['type']}' is not a connection type; use one of "
            f"{', '.join(types)}"
        )
    check_provider_options(kind, {k: v for k, v in options.items() if k != "type"}, "connection")


def secret_from(options: Mapping[str, str], key: str, env_key: str) -> str | None:
    """The secret of ``key``, or read from the environment variable named by ``env_key``.

    Raises:
        ConfigurationError: the variable named by ``env_key`` is not set.
    """
    import os

    if options.get(key):
        return options[key]
    variable = options.get(env_key)
    if variable:
        value = os.environ.get(variable)
        if not value:
            raise ConfigurationError(
                f"option '{env_key}' names the environment variable {variable}, which is not set"
            )
        return value
    return None


def mcp_server_arguments(
    connection: Mapping[str, str], tool_options: Mapping[str, str]
) -> dict[str, Any]:
    """Arguments of :class:`~flink_agents.integrations.mcp.mcp.MCPServer` for an ``mcp``
    connection and a tool's options (``read_timeout``).

    Raises:
        ConfigurationError: neither or both of ``endpoint`` and ``command``, or bad ``args``.
    """
    connection = normalized(connection)
    if connection_type(connection) == API_KEY:  # the key's; the server is the tool's
        connection = {
            **{k: v for k, v in connection.items() if k != "type"},
            "endpoint": tool_options.get("endpoint") or tool_options.get("url") or "",
        }
    url = connection.get("endpoint") or connection.get("url")
    command = connection.get("command")
    if bool(url) == bool(command):
        raise ConfigurationError(
            "an mcp connection needs either 'endpoint' (an HTTP MCP server) or 'command' "
            "(a server started over stdio), not both"
        )
    arguments: dict[str, Any] = {}
    if url:
        arguments["url"] = url
        key = secret_from(connection, "api-key", "api-key-env")
        if key:
            arguments["headers"] = {"Authorization": f"Bearer {key}"}
    else:
        if connection.get("api-key") or connection.get("api-key-env"):
            raise ConfigurationError(
                "'api-key' is for an HTTP MCP server ('endpoint'); a server started over "
                "stdio ('command') reads its secrets from its own environment"
            )
        arguments["command"] = command
        raw = connection.get("args", "")
        if raw.strip().startswith("["):
            try:
                args = json.loads(raw)
            except ValueError as exc:
                raise ConfigurationError(f"option 'args' is not a JSON list: {exc}") from None
            if not isinstance(args, list):
                raise ConfigurationError("option 'args' must be a JSON list of strings")
        else:
            args = shlex.split(raw)
        arguments["args"] = [str(a) for a in args]
        if connection.get("cwd"):
            arguments["cwd"] = connection["cwd"]
    timeout = tool_options.get("read_timeout") or connection.get("timeout")
    if timeout:
        key = "read_timeout" if tool_options.get("read_timeout") else "timeout"
        arguments["timeout"] = duration_seconds(timeout, key)
    return arguments
