"""``load_skill``: the tool a model reads a skill's instructions and files with."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field

from flink_agents.api.resource import ResourceType
from flink_agents.api.skills import LOAD_SKILL_TOOL, SKILLS_CONFIG
from flink_agents.api.tools.tool import Tool, ToolMetadata, ToolType
from flink_agents.errors import ResourceError

log = logging.getLogger(__name__)

_ARGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "description": "The name of the skill to load (e.g. 'math-calculator').",
        },
        "path": {
            "type": "string",
            "description": (
                "A file of the skill, relative to its base directory (e.g. "
                "'references/guide.md'); default: SKILL.md, the skill's instructions."
            ),
        },
    },
    "required": ["name"],
}


def _default_metadata() -> ToolMetadata:
    return ToolMetadata(
        name=LOAD_SKILL_TOOL,
        description=("Load a skill's instructions (or one of its files) before you use the skill."),
        args_schema=_ARGS_SCHEMA,
    )


class LoadSkillTool(Tool):
    """Returns a skill's instructions (with its base directory and files) or one of its
    files. A chat model setup binds it to its skills (:meth:`bind_to`): other skills of the
    agent cannot be loaded through it.

    Attributes:
        skill_names: the skills it may load (None: every skill of the agent).
    """

    metadata: ToolMetadata = Field(default_factory=_default_metadata)
    skill_names: list[str] | None = None

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.FUNCTION

    def bind_to(self, setup: Any) -> LoadSkillTool:
        """This tool limited to the skills of a chat model setup."""
        return self.model_copy(update={"skill_names": list(setup.skills or [])})

    def call(self, *args: Any, **kwargs: Any) -> str:
        """Load skill ``name`` (or its file ``path``); problems come back as text."""
        if args:
            kwargs = {"name": args[0], **kwargs}
        unknown = sorted(set(kwargs) - {"name", "path"})
        if unknown:
            return f"Unknown argument(s) {unknown}: load_skill takes name and path"
        name, path = kwargs.get("name"), kwargs.get("path") or "SKILL.md"
        if not isinstance(name, str) or not isinstance(path, str):
            return "load_skill needs name (a string) and optionally path (a string)"
        manager = self._lookup(SKILLS_CONFIG, ResourceType.SKILLS)
        allowed = self.skill_names
        if allowed is not None and name not in allowed:
            return f"Skill '{name}' not found. Available skills: {', '.join(allowed) or 'none'}"
        try:
            manager.get_skill(name)
        except ResourceError:
            names = allowed if allowed is not None else manager.get_all_skill_names()
            return f"Skill '{name}' not found. Available skills: {', '.join(names) or 'none'}"
        log.debug("loading %s of skill %s", path, name)
        try:
            return str(manager.read_file(name, path))
        except ResourceError as exc:
            return f"Cannot load '{path}' of skill '{name}': {exc.message}"
