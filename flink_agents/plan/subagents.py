"""Sub-agents in the plan: each one compiled into a section of its caller's plan.

An agent's ``AGENT`` resources (an :class:`~flink_agents.api.agents.agent.Agent` or an
:class:`~flink_agents.api.tools.agent_tool.AgentTool`) and its ``AgentTool`` tools are
sub-agents. :func:`compile_subagents` compiles each into an :class:`AgentPlan` of its own
(``AgentPlan.subagents[name]``, recursively), with the caller's configuration and the
environment's interceptors, and leaves in the caller's resources an ``AgentTool`` that names
that section (its path of names: ``"a"``, ``"a/b"``). A section declares only its own
resources: what it does not declare it finds in the plans around it at run time (so the
names its resources give for others are checked against those too). Its secrets live in the
root plan's side table under ``subagents/<name>/...``; config and secrets are shared by the
whole tree (:func:`share`). Cycles and nesting deeper than ``max-subagent-depth`` are plan
errors. See docs/ARCHITECTURE.md, "Sub-agents".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flink_agents.api.core_options import AgentConfigOptions, AgentConfiguration
from flink_agents.api.resource import ResourceType
from flink_agents.errors import PlanValidationError
from flink_agents.plan.redaction import SECRET_MARKER, is_marker

if TYPE_CHECKING:
    from flink_agents.api.agents.agent import Agent, InterceptorDefinition
    from flink_agents.plan.agent_plan import AgentPlan

#: Where the secrets of a sub-agent's section are kept in the root plan's side table.
SECRET_PREFIX = "subagents/"
#: A sub-agent's name: it becomes a path segment and a memory namespace.
_NAME = re.compile(r"^[A-Za-z0-9_\-]+$")


@dataclass(frozen=True)
class SectionScope:
    """Where a plan being compiled sits in the tree of sections.

    Attributes:
        path: the section path of its sub-agents' sections, with a trailing ``/`` (``""``
            for the root plan).
        ancestors: ids of the agents from the root down to this one (cycle check).
        chain: their names, for messages.
        inherited: resource names the enclosing plans declare, by type.
        depth: 0 for the root plan, 1 for a sub-agent's section...
    """

    path: str = ""
    ancestors: tuple[int, ...] = ()
    chain: tuple[str, ...] = ()
    inherited: Mapping[ResourceType, frozenset[str]] = field(default_factory=dict)
    depth: int = 0

    @staticmethod
    def root(agent: Agent) -> SectionScope:
        """The scope of the plan of ``agent`` itself."""
        name = agent.name if isinstance(agent.name, str) and agent.name else "the agent"
        return SectionScope(ancestors=(id(agent),), chain=(name,))


def compile_subagents(
    merged: dict[ResourceType, dict[str, Any]],
    config: AgentConfiguration,
    interceptors: Sequence[InterceptorDefinition] | None,
    problems: list[str],
    scope: SectionScope,
) -> dict[str, AgentPlan]:
    """Compile the sub-agents among ``merged`` (the agent's resources with the
    environment's, by type and name) into sections; each is replaced in ``merged`` by an
    ``AgentTool`` naming its section. Problems are added to ``problems``."""
    from flink_agents.api.agents.agent import Agent
    from flink_agents.api.tools.agent_tool import AgentTool
    from flink_agents.plan.agent_plan import AgentPlan

    tools: dict[str, AgentTool] = {}
    for rtype in (ResourceType.AGENT, ResourceType.TOOL):
        by_name = merged.get(rtype, {})
        for name, value in list(by_name.items()):
            if isinstance(value, Agent):
                value = AgentTool(value)
            elif not isinstance(value, AgentTool):
                if rtype is ResourceType.AGENT:
                    problems.append(
                        f"agent resource {name!r} is {type(value).__name__}: an AGENT resource "
                        "is an Agent instance or an AgentTool (external sub-agents, Apache "
                        "Flink Agents' SubagentSetup, are not supported)"
                    )
                    del by_name[name]
                continue
            if value.agent is None:
                problems.append(f"{rtype.value} resource {name!r} is an AgentTool without an agent")
                del by_name[name]
                continue
            known = tools.get(name)
            if known is not None:
                if known.agent is not value.agent:
                    problems.append(
                        f"the tool {name!r} and the agent resource {name!r} are different "
                        "sub-agents; give them different names"
                    )
                    del by_name[name]
                else:  # the same sub-agent as a tool and as an agent: one section
                    by_name[name] = value.named(name, known.section or "")
                continue
            if not _NAME.match(name):
                problems.append(
                    f"sub-agent name {name!r}: use letters, digits, '_' and '-' only (it "
                    "names the sub-agent's section and memory namespace)"
                )
                del by_name[name]
                continue
            tools[name] = by_name[name] = value.named(name, f"{scope.path}{name}")
    if not tools:
        return {}
    inherited = {
        rtype: frozenset({*scope.inherited.get(rtype, ()), *merged.get(rtype, {})})
        for rtype in {*scope.inherited, *merged}
    }
    max_depth = config.get(AgentConfigOptions.MAX_SUBAGENT_DEPTH)
    sections: dict[str, AgentPlan] = {}
    for name, tool in tools.items():
        child = tool.agent
        chain = " -> ".join(repr(n) for n in (*scope.chain, name))
        if id(child) in scope.ancestors:
            problems.append(
                f"sub-agent cycle {chain}: an agent cannot be a sub-agent of itself (directly "
                "or further down); use another instance of its class"
            )
            continue
        if scope.depth + 1 > max_depth:
            problems.append(
                f"sub-agent {chain} nests {scope.depth + 1} deep, more than "
                f"max-subagent-depth ({max_depth}); raise AgentConfigOptions."
                "MAX_SUBAGENT_DEPTH or nest less"
            )
            continue
        child_scope = SectionScope(
            path=f"{tool.section}/",
            ancestors=(*scope.ancestors, id(child)),
            chain=(*scope.chain, name),
            inherited=inherited,
            depth=scope.depth + 1,
        )
        try:
            sections[name] = AgentPlan.from_agent(
                child, config, None, interceptors, _scope=child_scope
            )
        except PlanValidationError as exc:
            problems.extend(f"sub-agent {name!r}: {p}" for p in exc.problems)
    return sections


def adopt_sections(
    plan: AgentPlan,
    section_secrets: Mapping[str, Mapping[str, Any]],
    secrets: dict[str, Any],
) -> None:
    """Move the secrets of ``plan``'s sections (``section_secrets``, by section name: their
    side tables as compiled) into ``secrets`` (``plan``'s side table), their markers renamed
    under ``subagents/<name>/``. ``plan.with_secrets`` then shares it (:func:`share`)."""
    for name, section in plan.subagents.items():
        prefix = f"{SECRET_PREFIX}{name}/"
        own = section_secrets.get(name)
        if own:
            _rename_markers(section, prefix)
            for path, value in own.items():
                secrets[prefix + path] = value


def share(plan: AgentPlan) -> None:
    """Give every section of ``plan`` its config and secrets table (``with_secrets`` of
    each section restores its actions' configs and shares with its own sections)."""
    private = plan.__pydantic_private__
    assert private is not None
    for section in plan.subagents.values():
        section.config = plan.config
        section.with_secrets(private["_secrets"])
        section_private = section.__pydantic_private__
        assert section_private is not None
        section_private["_configuration"] = private["_configuration"]


def section_at(plan: AgentPlan, path: str) -> AgentPlan:
    """The section of ``plan`` at ``path`` (``"a"``, ``"a/b"``).

    Raises:
        KeyError: there is none.
    """
    for name in path.split("/"):
        plan = plan.subagents[name]
    return plan


def _rename_markers(section: AgentPlan, prefix: str) -> None:
    for by_name in section.resource_providers.values():
        for provider in by_name.values():
            provider.arguments = _renamed(provider.arguments, prefix)
            provider.serialized = _renamed(provider.serialized, prefix)
    for action in section.actions.values():
        action.config = _renamed(action.config, prefix)
    for sub in section.subagents.values():
        _rename_markers(sub, prefix)


def _renamed(value: Any, prefix: str) -> Any:
    if isinstance(value, dict):
        if is_marker(value):
            return {**value, SECRET_MARKER: prefix + str(value[SECRET_MARKER])}
        return {k: _renamed(v, prefix) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, prefix) for v in value]
    return value
