"""Loading YAML agents files into an execution environment (Apache Flink Agents' YAML API).

``agents_env.load_yaml("agents.yaml")`` reads a file, registers its agents on the
environment and its shared resources with ``add_resource``; ``.apply("agent_name")`` then
compiles a registered agent like one written in Python. Several files may be loaded (in one
call or several); a name used twice (two agents, two shared resources of one type, a shared
resource already added to the environment) is an error.

Every error is a :class:`~flink_agents.errors.YamlError` naming the file, the line and the
field. A file is checked when it is loaded: its shape (unknown keys name the closest known
one), the functions (imported), the classes and their arguments, the event aliases. Names
of other resources (a setup's ``connection``, ``prompt``, ``tools``) are checked when the
agent is applied, since a file loaded later or ``add_resource`` may provide them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.resource import ResourceType
from flink_agents.api.yaml._build import (
    LABEL,
    BuiltFile,
    FileBuilder,
    Reference,
    SharedAction,
    closest,
)
from flink_agents.api.yaml._source import YamlSource
from flink_agents.errors import PlanValidationError, YamlError, YamlProblem

if TYPE_CHECKING:
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

PathLike = str | os.PathLike[str]


@dataclass
class YamlRegistry:
    """What ``load_yaml`` keeps on an environment besides agents and resources: shared
    actions (for agents of later files) and the names resources give for others, with
    where each was written (checked when an agent is applied)."""

    shared_actions: dict[str, SharedAction] = field(default_factory=dict)
    shared_references: list[Reference] = field(default_factory=list)
    agent_references: dict[str, list[Reference]] = field(default_factory=dict)
    agent_files: dict[str, str] = field(default_factory=dict)


def _registry_of(env: AgentsExecutionEnvironment) -> YamlRegistry:
    """The environment's YAML registry (made on first use)."""
    registry: YamlRegistry | None = getattr(env, "_yaml_registry", None)
    if registry is None:
        registry = YamlRegistry()
        env._yaml_registry = registry
    return registry


def build_agents(path: PathLike) -> BuiltFile:
    """Check one file and build what it declares, without registering anything.

    Raises:
        YamlError: with every problem of the file.
    """
    return FileBuilder(
        YamlSource.read(path), taken_agents={}, taken_resources={}, known_actions={}
    ).build()


def load_yaml(env: AgentsExecutionEnvironment, paths: PathLike | Sequence[PathLike]) -> None:
    """Load YAML agents files into ``env``, in order (each file may use the shared actions
    and resources of the files before it).

    Raises:
        YamlError: a file is not valid (nothing of that file is registered; files before
            it stay loaded).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not isinstance(paths, Sequence):
        raise TypeError(f"load_yaml takes a path or a list of paths, got {type(paths).__name__}")
    registry = _registry_of(env)
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"load_yaml takes paths (str or Path), got {type(path).__name__}")
        built = FileBuilder(
            YamlSource.read(Path(path)),
            taken_agents=env._agents,
            taken_resources=env.resources,
            known_actions=registry.shared_actions,
        ).build()
        for rtype, by_name in built.shared_resources.items():
            for name, value in by_name.items():
                env.add_resource(name, rtype, value)
        registry.shared_actions.update(built.shared_actions)
        registry.shared_references.extend(built.shared_references)
        for name, (agent, references) in built.agents.items():
            env._agents[name] = agent
            registry.agent_references[name] = references
            registry.agent_files[name] = built.path


def agent_to_apply(env: AgentsExecutionEnvironment, agent: Agent | str) -> Agent:
    """The agent ``apply(agent)`` compiles: ``agent`` itself, or the agent registered
    under that name; then the names its YAML resources (and the shared ones) give for
    other resources are checked.

    Raises:
        PlanValidationError: no agent has that name.
        YamlError: a YAML resource names a resource that does not exist.
    """
    if isinstance(agent, str):
        found = env._agents.get(agent)
        if found is None:
            known = sorted(env._agents)
            raise PlanValidationError(
                [
                    f"no agent named '{agent}' on this environment (agents loaded with "
                    f"load_yaml: {known or 'none'}){closest(agent, known)}"
                ]
            )
        name: str | None = agent
        agent = found
    elif isinstance(agent, Agent):
        name = None
    else:
        raise TypeError(f"apply() takes an Agent or an agent name, got {type(agent).__name__}")
    registry: YamlRegistry | None = getattr(env, "_yaml_registry", None)
    if registry is not None:
        references = [*registry.agent_references.get(name or "", []), *registry.shared_references]
        problems = _unresolved(references, env.resources, agent.resources, name)
        if problems:
            raise YamlError(problems)
    return agent


def _unresolved(
    references: list[Reference],
    env_resources: dict[ResourceType, dict[str, Any]],
    agent_resources: dict[ResourceType, dict[str, Any]],
    agent_name: str | None,
) -> list[YamlProblem]:
    def names(rtype: ResourceType) -> set[str]:
        return {*env_resources.get(rtype, {}), *agent_resources.get(rtype, {})}

    has_mcp = bool(names(ResourceType.MCP_SERVER))
    scope = f"agent '{agent_name}'" if agent_name else "the agent"
    problems: list[YamlProblem] = []
    for ref in references:
        declared = names(ref.target)
        if ref.name in declared or (
            ref.target is ResourceType.TOOL and (has_mcp or ref.name in names(ResourceType.AGENT))
        ):
            continue  # a tool may be a sub-agent, or come from an MCP server (at run time)
        where = ref.where
        problems.append(
            YamlProblem(
                f"{ref.owner} refers to {LABEL[ref.target]} '{ref.name}', which neither "
                f"{scope} nor the environment (shared sections, add_resource) declares"
                f" (declared: {sorted(declared) or 'none'}){closest(ref.name, declared)}",
                where.path,
                where.line,
                where.column,
                where.field,
            )
        )
    return problems
