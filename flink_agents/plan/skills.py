"""Skills in the plan: the agent's sources merged into one resource, and the built-in
``load_skill`` and ``bash`` tools added beside them.

:func:`add_skills` runs while an agent is compiled. When the agent (or its environment)
declares :class:`~flink_agents.api.skills.Skills`, it adds:

- ``_skills_config`` (type ``skills``): every source, de-duplicated, for the runtime's
  :class:`~flink_agents.runtime.skill.skill_manager.SkillManager` (one per task slot);
- the tool ``load_skill`` (:class:`~flink_agents.runtime.skill.skill_tools.LoadSkillTool`);
- the tool ``bash`` (:class:`~flink_agents.plan.tools.bash.bash_tool.BashTool`), which allows
  nothing until a chat model setup binds it to its ``allowed_commands``.

It checks what can be checked before the job runs: a setup naming ``skills`` needs declared
skills, ``allowed_commands`` needs ``skills`` (there is no ``bash`` tool otherwise), the tool
names ``load_skill`` and ``bash`` are the built-ins'. Whether the named skills exist is known
only where the sources are read (the TaskManagers): an unknown name fails the first model
call with the list of skills.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.skills import BASH_TOOL, LOAD_SKILL_TOOL, SKILLS_CONFIG, Skills

#: Class paths of the runtime's parts (strings: the plan does not import the runtime).
SKILL_MANAGER = "flink_agents.runtime.skill.skill_manager.SkillManager"
LOAD_SKILL_TOOL_CLASS = "flink_agents.runtime.skill.skill_tools.LoadSkillTool"
BASH_TOOL_CLASS = "flink_agents.plan.tools.bash.bash_tool.BashTool"


def _setup_arguments(value: Any) -> Mapping[str, Any] | None:
    """A chat model setup's arguments (a descriptor's, or a made instance's fields)."""
    if isinstance(value, ResourceDescriptor):
        return value.arguments
    fields = getattr(type(value), "model_fields", None)
    if fields is not None and "skills" in fields:
        return {
            "skills": value.skills,
            "allowed_commands": value.allowed_commands,
            "allowed_script_dirs": value.allowed_script_dirs,
        }
    return None


def _string_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, str) and v for v in value)


def add_skills(resources: dict[ResourceType, dict[str, Any]]) -> list[str]:
    """Add the skills resources and tools to ``resources`` (by type and name, changed in
    place); returns the problems found."""
    problems: list[str] = []
    declared = resources.get(ResourceType.SKILLS, {})
    sources = []
    for name, value in declared.items():
        if name == SKILLS_CONFIG:
            continue
        if not isinstance(value, Skills):
            problems.append(
                f"skills resource {name!r} is {type(value).__name__}; return a Skills "
                "(Skills.from_local_dir(...), from_package(...) or from_url(...))"
            )
            continue
        if not value.sources:
            problems.append(f"skills resource {name!r} has no sources")
        sources.extend(value.sources)
    for name, value in resources.get(ResourceType.CHAT_MODEL, {}).items():
        args = _setup_arguments(value)
        if args is None:
            continue
        where = f"chat_model resource {name!r}"
        skills, commands = args.get("skills"), args.get("allowed_commands")
        if skills is not None and not _string_list(skills):
            problems.append(f"{where}: skills must be a list of skill names")
        if commands and not _string_list(commands):
            problems.append(f"{where}: allowed_commands must be a list of command names")
        if skills and not declared:
            problems.append(
                f"{where} uses skills {list(skills)} but the agent declares none: add an "
                "@skills method returning Skills.from_local_dir(...) (or from_package, "
                "from_url), or env.add_resource(name, ResourceType.SKILLS, Skills...)"
            )
        if commands and not skills:
            problems.append(
                f"{where}: allowed_commands is for the bash tool of skills; it has no effect "
                "without skills=[...]"
            )
    if not declared:
        return problems
    tools = resources.setdefault(ResourceType.TOOL, {})
    for reserved in (LOAD_SKILL_TOOL, BASH_TOOL):
        if reserved in tools:
            problems.append(
                f"tool name {reserved!r} is the built-in tool of skills; rename your tool"
            )
    tools[LOAD_SKILL_TOOL] = ResourceDescriptor(clazz=LOAD_SKILL_TOOL_CLASS)
    tools[BASH_TOOL] = ResourceDescriptor(clazz=BASH_TOOL_CLASS)
    merged = list(dict.fromkeys(sources))
    declared[SKILLS_CONFIG] = ResourceDescriptor(
        clazz=SKILL_MANAGER, sources=[s.model_dump() for s in merged]
    )
    return problems
