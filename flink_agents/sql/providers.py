"""Agent providers: what turns a catalog agent into the agent ``agent_run`` runs.

``CREATE AGENT a ... WITH ('provider' = 'default')`` (the FLIP draft's option) chooses the
provider; without the option it is ``default``, our own: the model with the prompt as system
message, the tool loop of the built-in chat action, short-term memory per ``PARTITION BY`` key
(:class:`~flink_agents.sql.agent.SqlAgent`).

A provider is an :class:`AgentProvider`: it checks the agent's options when the agent is
created or altered, and makes an :class:`~flink_agents.api.agents.agent.Agent` for each
``agent_run`` call from an :class:`AgentProviderContext` (the resolved catalog agent: its
model's resources, its tools, the input columns). The agent it makes follows the contract of
the draft's ``AgentRunner.run(row) -> rows``:

- each input row arrives as ``InputEvent(input=[v1, v2, ...])`` (the row's values, in the
  input table's column order);
- each ``OutputEvent(output=...)`` it sends is one output row: the input row's values followed
  by the answer (``[*row, answer]``; the answer becomes the ``agent_output`` column, a
  string). Zero, one or several outputs per input are fine.

Agents configuration keys among the options (``max-iterations``,
``error-handling-strategy``, ...) configure our runtime whatever the provider; the others
are the provider's own, checked by :meth:`AgentProvider.check_options`.

Providers are found by name:

- ``default``: :class:`DefaultAgentProvider`;
- names registered with :func:`register_agent_provider`;
- names of the entry point group ``flink_agents.sql.agent_providers`` (a package declares
  ``[project.entry-points."flink_agents.sql.agent_providers"] mine = "pkg.module:MyProvider"``);
- a class path (``'pkg.module:MyProvider'`` or ``'pkg.module.MyProvider'``).

The class is instantiated with no arguments. The job's workers import it too (its agent's
actions run there), so it must be importable on the TaskManagers.
"""

from __future__ import annotations

import importlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import ConfigurationError
from flink_agents.sql.catalog import CatalogAgent, ObjectIdentifier
from flink_agents.sql.models import ModelResources

#: The option that names the provider, and the provider used without it.
PROVIDER = "provider"
DEFAULT = "default"
#: The entry point group providers of other packages are declared in.
ENTRY_POINT_GROUP = "flink_agents.sql.agent_providers"


@dataclass(frozen=True)
class AgentProviderContext:
    """What a provider knows when it makes the agent of one ``agent_run`` call.

    Attributes:
        identifier: the catalog agent's identifier.
        agent: the catalog agent (model, prompt, tools, options, comment).
        model: the chat model resources of the agent's model (connection descriptor and
            setup class and arguments; see :class:`~flink_agents.sql.models.ModelResources`).
        tools: the function tools by name (Python and Java functions of Flink's catalog).
        mcp_servers: the MCP server resources of the agent's connection tools, by resource
            name.
        tool_names: every tool name the model may call (function tools and the MCP tools
            chosen by ``allowed_tools``), in the agent's order.
        columns: the input table's column names.
        column: index of the column the agent answers (``COL =>`` / ``INPUT_COL =>``).
        partitioned: whether the input is keyed (``PARTITION BY``): rows of one key run in
            order and may share memory.
        options: the provider's own options (the agent's, overridden by the call's
            ``CONFIG``), without ``provider`` and the agents configuration keys.
        config: the agents configuration values among them (already applied to the job).
    """

    identifier: ObjectIdentifier
    agent: CatalogAgent
    model: ModelResources
    tools: Mapping[str, Tool] = field(default_factory=dict)
    mcp_servers: Mapping[str, Any] = field(default_factory=dict)
    tool_names: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    column: int = 0
    partitioned: bool = False
    options: Mapping[str, str] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)


class AgentProvider(ABC):
    """Makes the agent of a catalog agent (see the module docstring for the contract)."""

    def check_options(self, options: Mapping[str, str]) -> None:
        """Check the provider's own options (called at ``CREATE AGENT``, ``ALTER AGENT``
        and per ``agent_run`` call with its ``CONFIG``).

        The default accepts none: override it to accept yours.

        Raises:
            ConfigurationError: an unknown key or a bad value (say which and why).
        """
        if options:
            key = sorted(options)[0]
            raise ConfigurationError(
                f"unknown option '{key}' for agent provider {type(self).__name__} (it takes "
                "no options of its own besides the agents configuration keys)"
            )

    @abstractmethod
    def create_agent(self, context: AgentProviderContext) -> Agent:
        """The agent of one ``agent_run`` call."""


class DefaultAgentProvider(AgentProvider):
    """Our agent: the model answers the column, with the tools and the key's history.

    Options: ``memory-turns`` (earlier exchanges of the same ``PARTITION BY`` key sent with
    each input; default 10, 0 for none) and ``description``.
    """

    #: Its own options and their defaults.
    OPTIONS = {"memory-turns": "10", "description": ""}

    def check_options(self, options: Mapping[str, str]) -> None:
        from flink_agents.sql.options import CONFIG_KEYS

        for key in options:
            if key not in self.OPTIONS:
                supported = sorted([PROVIDER, *self.OPTIONS, *CONFIG_KEYS])
                raise ConfigurationError(
                    f"unknown option '{key}' for an agent; supported: {', '.join(supported)}"
                )
        self.memory_turns(options)

    @classmethod
    def memory_turns(cls, options: Mapping[str, str]) -> int:
        """The ``memory-turns`` option (checked: an integer >= 0)."""
        value = options.get("memory-turns", cls.OPTIONS["memory-turns"])
        try:
            turns = int(value)
        except ValueError:
            turns = -1
        if turns < 0:
            raise ConfigurationError(f"option 'memory-turns' = '{value}' must be an integer >= 0")
        return turns

    def create_agent(self, context: AgentProviderContext) -> Agent:
        from flink_agents.sql.agent import MODEL_CONNECTION, SqlAgent

        turns = self.memory_turns(context.options) if context.partitioned else 0
        return SqlAgent(
            model_connection=context.model.connection,
            model_setup=context.model.setup(MODEL_CONNECTION, list(context.tool_names)),
            prompt=context.agent.prompt,
            column=context.column,
            memory_turns=turns,
            tools=dict(context.tools),
            mcp_servers=dict(context.mcp_servers),
        )


_lock = threading.Lock()
_registered: dict[str, type[AgentProvider] | AgentProvider] = {DEFAULT: DefaultAgentProvider}


def register_agent_provider(name: str, provider: type[AgentProvider] | AgentProvider) -> None:
    """Make ``provider`` (a class or an instance) available as ``'provider' = 'name'``.

    Only this process sees the registration: the SQL statements run here, but a provider
    that the job's workers must find again (its agent's actions) is best declared as an
    entry point or named by its class path.

    Raises:
        ValueError: the name is empty or ``default``.
    """
    key = name.strip().lower()
    if not key or key == DEFAULT:
        raise ValueError(f"cannot register an agent provider named {name!r}")
    with _lock:
        _registered[key] = provider


def _entry_point(name: str) -> Any:
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name.lower() == name:
            return ep.load()
    return None


def _entry_point_names() -> list[str]:
    from importlib.metadata import entry_points

    return sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def _by_path(path: str) -> Any:
    module, sep, qualname = path.partition(":")
    if not sep:
        module, _, qualname = path.rpartition(".")
    if not module or not qualname:
        return None
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"agent provider '{path}' cannot be loaded: {type(exc).__name__}: {exc}"
        ) from None
    return obj


def agent_provider(name: str | None) -> AgentProvider:
    """The provider named ``name`` (None or empty: ``default``).

    Raises:
        ConfigurationError: no provider of that name (the message lists the known ones and
            how to add one), or it is not an :class:`AgentProvider`.
    """
    text = (name or "").strip() or DEFAULT
    key = text.lower()
    with _lock:
        found: Any = _registered.get(key)
    if found is None:
        found = _entry_point(key)
    if found is None and ("." in text or ":" in text):
        found = _by_path(text)
    if found is None:
        known = sorted({*_registered, *_entry_point_names()})
        raise ConfigurationError(
            f"unknown agent provider '{text}'; known: {', '.join(known)} (add one with "
            f"register_agent_provider, an entry point of group '{ENTRY_POINT_GROUP}', or "
            "give its class path 'pkg.module:Class')"
        )
    if isinstance(found, type) and issubclass(found, AgentProvider):
        return found()
    if isinstance(found, AgentProvider):
        return found
    raise ConfigurationError(
        f"agent provider '{text}' is {found!r}, not an AgentProvider (a subclass of "
        "flink_agents.sql.providers.AgentProvider)"
    )
