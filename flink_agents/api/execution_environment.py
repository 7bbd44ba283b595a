"""The entry point: where agents get their input and where their output goes.

``AgentsExecutionEnvironment.get_execution_environment()`` gives the local environment
(``from_list`` / ``to_list``, no Flink needed); with a PyFlink ``StreamExecutionEnvironment``
it gives the Flink environment (``from_datastream`` / ``from_table`` / ``to_datastream`` /
``to_table``).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from flink_agents.api._function import unwrap
from flink_agents.api.agents.agent import (
    Agent,
    InterceptorDefinition,
    interceptor_name,
    resource_type_of,
)
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.resource import ResourceType

if TYPE_CHECKING:
    from flink_agents.api.yaml.loader import YamlRegistry


class AgentBuilder(ABC):
    """Returned by ``from_*``: apply an agent, then choose where the output goes."""

    @abstractmethod
    def apply(self, agent: Agent | str) -> AgentBuilder:
        """Run ``agent`` on this input (compiles it into a plan now).

        Args:
            agent: an agent, or the name of one loaded with
                :meth:`AgentsExecutionEnvironment.load_yaml`.
        """

    def to_list(self) -> list[dict[str, Any]]:
        """Outputs as ``[{key: output}, ...]`` (local environment), filled by ``execute()``."""
        raise NotImplementedError("to_list() is for the local environment; use to_datastream()")

    def to_datastream(self, output_type: Any = None) -> Any:
        """Outputs as a DataStream (Flink environment)."""
        raise NotImplementedError("to_datastream() needs the Flink environment")

    def to_table(self, schema: Any, output_type: Any) -> Any:
        """Outputs as a Table with ``schema`` (Flink environment)."""
        raise NotImplementedError("to_table() needs the Flink environment")

    def dead_letters(self) -> Any:
        """The runs set aside (:class:`~flink_agents.api.dead_letter.DeadLetter`: with
        ``error-handling-strategy: dead-letter``, and records that cannot become an input
        event): a list filled by ``execute()`` (local environment), or the agent operator's
        side output as a DataStream (Flink; call ``to_datastream()`` first to choose its
        arguments)."""
        raise NotImplementedError("this environment keeps no dead letters")


#: Entry point group naming the environment classes (``local``, ``flink``): the API does not
#: import the runtime that implements them (see pyproject.toml).
ENVIRONMENTS_GROUP = "flink_agents.environments"
_environments: dict[str, Callable[..., AgentsExecutionEnvironment]] = {}


def environment_class(kind: str) -> Callable[..., AgentsExecutionEnvironment]:
    """The environment class registered as ``kind`` in the ``flink_agents.environments``
    entry point group (``local``: without Flink, ``flink``: over a PyFlink environment).

    Raises:
        ConfigurationError: no installed package provides ``kind`` (the package metadata is
            missing: install the package, e.g. ``pip install -e .`` in a checkout).
    """
    found = _environments.get(kind)
    if found is None:
        from importlib.metadata import entry_points

        for point in entry_points(group=ENVIRONMENTS_GROUP):
            if point.name == kind:
                found = _environments[kind] = point.load()
                break
        else:
            from flink_agents.errors import ConfigurationError

            raise ConfigurationError(
                f"no {kind!r} agents environment is installed: the entry point group "
                f"{ENVIRONMENTS_GROUP!r} has none (the package's metadata is missing; install "
                "it with pip, e.g. `pip install -e .` in a checkout)"
            )
    return found


class AgentsExecutionEnvironment(ABC):
    """Base of the local and the Flink environments."""

    def __init__(self) -> None:
        self._config = AgentConfiguration()
        self._resources: dict[ResourceType, dict[str, Any]] = {}
        self._agents: dict[str, Agent] = {}
        self._yaml_registry: YamlRegistry | None = None
        self._interceptors: list[InterceptorDefinition] = []

    @staticmethod
    def get_execution_environment(
        env: Any = None, t_env: Any = None, **kwargs: Any
    ) -> AgentsExecutionEnvironment:
        """The local environment when ``env`` is None, else the Flink environment over
        the PyFlink ``StreamExecutionEnvironment`` ``env`` (and ``StreamTableEnvironment``
        ``t_env`` for tables)."""
        if env is None:
            return environment_class("local")(**kwargs)
        return environment_class("flink")(env, t_env, **kwargs)

    def get_config(self, path: str | os.PathLike[str] | None = None) -> AgentConfiguration:
        """The configuration shared by the agents of this environment.

        Args:
            path: a YAML file whose ``agent:`` section is loaded into it first (Flink's
                ``config.yaml`` layout); its values replace ones set before.

        Raises:
            ConfigurationError: ``path`` cannot be read or holds a bad option (the message
                names the file and the line).
        """
        if path is not None:
            self._config.load_from_file(path)
        return self._config

    def add_resource(
        self, name: str, resource_type_or_instance: Any, instance: Any = None
    ) -> AgentsExecutionEnvironment:
        """Add a resource every agent of this environment can use:
        ``add_resource(name, instance)`` or ``add_resource(name, resource_type, instance)``."""
        if instance is None:
            instance = resource_type_or_instance
            rtype = resource_type_of(instance)
        else:
            rtype = ResourceType(resource_type_or_instance)
        self._resources.setdefault(rtype, {})[name] = instance
        return self

    def add_model_interceptor(
        self, interceptor: Any, name: str | None = None
    ) -> AgentsExecutionEnvironment:
        """Add a model interceptor every agent of this environment uses, outside (before)
        the agents' own (see :mod:`flink_agents.api.interceptors`)."""
        func = unwrap(interceptor)
        self._interceptors.append(
            InterceptorDefinition("model", name or interceptor_name(func), func)
        )
        return self

    def add_tool_interceptor(
        self, interceptor: Any, name: str | None = None
    ) -> AgentsExecutionEnvironment:
        """Add a tool interceptor every agent of this environment uses, outside (before)
        the agents' own (see :mod:`flink_agents.api.interceptors`)."""
        func = unwrap(interceptor)
        self._interceptors.append(
            InterceptorDefinition("tool", name or interceptor_name(func), func)
        )
        return self

    @property
    def interceptors(self) -> list[InterceptorDefinition]:
        """Interceptors added to the environment, in order."""
        return self._interceptors

    @property
    def resources(self) -> dict[ResourceType, dict[str, Any]]:
        """Resources added to the environment, by type and name."""
        return self._resources

    def load_yaml(self, paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> None:
        """Load YAML agents files: their agents become applicable by name
        (``.apply("agent_name")``), their shared resources are added to this environment.

        Args:
            paths: one file or a list of files, loaded in order; may be called again.

        Raises:
            YamlError: a file is not valid; the message names the file, the line and the
                field of every problem.
        """
        from flink_agents.api.yaml.loader import load_yaml

        load_yaml(self, paths)

    def _agent_to_apply(self, agent: Agent | str) -> Agent:
        """For the builders' ``apply``: the agent itself, or the one loaded under that name
        (see :func:`flink_agents.api.yaml.loader.agent_to_apply`)."""
        if isinstance(agent, Agent) and self._yaml_registry is None:
            return agent
        from flink_agents.api.yaml.loader import agent_to_apply

        return agent_to_apply(self, agent)

    def from_list(self, input: list[Any]) -> AgentBuilder:  # noqa: A002
        """Input from a Python list (local environment)."""
        raise NotImplementedError("from_list() is for the local environment")

    def from_datastream(
        self,
        input: Any,  # noqa: A002
        key_selector: Callable[[Any], Any] | Any = None,
    ) -> AgentBuilder:
        """Input from a PyFlink DataStream (Flink environment)."""
        raise NotImplementedError(
            "from_datastream() needs the Flink environment: "
            "AgentsExecutionEnvironment.get_execution_environment(env)"
        )

    def from_table(
        self,
        input: Any,  # noqa: A002
        key_selector: Callable[[Any], Any] | Any = None,
    ) -> AgentBuilder:
        """Input from a PyFlink Table (Flink environment)."""
        raise NotImplementedError(
            "from_table() needs the Flink environment: "
            "AgentsExecutionEnvironment.get_execution_environment(env, t_env)"
        )

    @abstractmethod
    def execute(self) -> Any:
        """Run what was built."""
