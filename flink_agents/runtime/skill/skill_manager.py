"""The skills of an agent at run time: loaded once per task slot from the merged sources.

The plan adds one resource of type ``skills`` named ``_skills_config``
(:data:`flink_agents.api.skills.SKILLS_CONFIG`) holding every source of the agent; the
resource cache creates this :class:`SkillManager` from it on first use and closes it with
the operator. Skills load lazily, on the first question asked (a chat model setup's
discovery prompt), so a broken source fails the first model call with a
:class:`~flink_agents.errors.ResourceError` naming the source, handled by the error strategy.

Progressive disclosure: the model sees names and descriptions (:meth:`generate_discovery_prompt`),
reads a skill's instructions with ``load_skill`` (:meth:`load`), and its files one by one
(:meth:`read_file`).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from pydantic import Field, PrivateAttr

from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.skills import Skills, SkillSourceSpec
from flink_agents.errors import ResourceError
from flink_agents.runtime.skill import skill_source_registry
from flink_agents.runtime.skill.agent_skill import AgentSkill, SkillOrigin
from flink_agents.runtime.skill.skill_prompt_provider import SkillPromptProvider
from flink_agents.runtime.skill.skill_repository import (
    SKILL_MD,
    SkillRepository,
    read_skill_file,
    skill_files,
)

log = logging.getLogger(__name__)


class SkillManager(Resource):
    """The skills of an agent (see the module docstring).

    Attributes:
        sources: where the skills come from, in order (a later skill of the same name
            overrides an earlier one, with a warning).
    """

    sources: list[SkillSourceSpec] = Field(default_factory=list)

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _skills: dict[str, AgentSkill] | None = PrivateAttr(default=None)
    _dirs: dict[str, Path | None] = PrivateAttr(default_factory=dict)
    _repos: list[SkillRepository] = PrivateAttr(default_factory=list)

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.SKILLS

    @classmethod
    def from_skills(cls, skills: Skills) -> SkillManager:
        """A manager of the sources of a :class:`~flink_agents.api.skills.Skills`."""
        return cls(sources=list(skills.sources))

    # -- loading ---------------------------------------------------------------------------------
    def _loaded(self) -> dict[str, AgentSkill]:
        skills = self._skills
        if skills is not None:
            return skills
        with self._lock:
            if self._skills is None:
                self._skills = self._load()
            return self._skills

    def _load(self) -> dict[str, AgentSkill]:
        skills: dict[str, AgentSkill] = {}
        try:
            for spec in dict.fromkeys(self.sources):
                try:
                    handler = skill_source_registry.get(spec.scheme)
                    origin = SkillOrigin(
                        scheme=spec.scheme, location=handler.describe_location(spec.params)
                    )
                    repo = handler.open(spec.params)
                    self._repos.append(repo)
                    found = repo.get_skills()
                except (OSError, ValueError) as exc:
                    raise ResourceError(
                        f"cannot load skills from {spec.describe()}: {exc}"
                    ) from None
                for skill in found:
                    skill.origin = origin
                    previous = skills.get(skill.name)
                    if previous is not None:
                        log.warning(
                            "skill %r of %s overrides the one of %s",
                            skill.name,
                            origin,
                            previous.origin,
                        )
                    skills[skill.name] = skill
                    self._dirs[skill.name] = repo.get_skill_dir(skill.name)
        except BaseException:
            self._close_repos()
            raise
        log.info("loaded %d skill(s): %s", len(skills), ", ".join(sorted(skills)) or "none")
        return skills

    # -- questions -------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """How many skills there are."""
        return len(self._loaded())

    def get_all_skill_names(self) -> list[str]:
        """The skills' names, in load order."""
        return list(self._loaded())

    def get_skill(self, name: str) -> AgentSkill:
        """The skill ``name``.

        Raises:
            ResourceError: no such skill (the message lists the skills).
        """
        skills = self._loaded()
        found = skills.get(name)
        if found is None:
            raise ResourceError(
                f"unknown skill {name!r} (skills: {', '.join(skills) or 'none'}); check the "
                "chat model setup's skills= and the agent's @skills sources"
            )
        return found

    def get_skill_dir(self, name: str) -> Path | None:
        """The directory of skill ``name`` (None: not on disk)."""
        self.get_skill(name)
        return self._dirs.get(name)

    def get_skill_dirs(self, *names: str) -> list[str]:
        """The directories of the named skills (every skill when none is named)."""
        chosen = names or tuple(self._loaded())
        dirs = [self.get_skill_dir(n) for n in chosen]
        return [str(d) for d in dirs if d is not None]

    def generate_discovery_prompt(self, *names: str) -> str:
        """The discovery message of the named skills (every skill when none is named)."""
        chosen = names or tuple(self._loaded())
        entries = [(s.name, s.description) for s in (self.get_skill(n) for n in chosen)]
        return SkillPromptProvider.discovery_prompt(entries) if entries else ""

    def load(self, name: str) -> str:
        """What ``load_skill(name)`` returns: the instructions, the skill's directory and
        its files."""
        skill = self.get_skill(name)
        skill_dir = self._dirs.get(name)
        if skill_dir is None:
            return skill.content
        listed = "\n".join(f"<file>{skill_dir / rel}</file>" for rel in skill_files(skill_dir))
        return (
            f'<skill_content name="{name}">\n# Skill: {name}\n\n{skill.content.strip()}\n\n'
            f"Base directory for this skill: {skill_dir}\n"
            "Relative paths in this skill are relative to this base directory.\n"
            f"<skill_files>\n{listed}\n</skill_files>\n</skill_content>"
        )

    def read_file(self, name: str, path: str) -> str:
        """The text of a file of skill ``name`` (``path`` relative to its directory, or an
        absolute path inside it).

        Raises:
            ResourceError: an unknown skill, or a path outside the skill, missing, binary or
                too large (the message says which).
        """
        self.get_skill(name)
        skill_dir = self._dirs.get(name)
        if skill_dir is None:
            raise ResourceError(f"skill {name!r} has no files on disk")
        if path in (SKILL_MD, f"./{SKILL_MD}"):
            return self.load(name)
        try:
            return read_skill_file(skill_dir, path)
        except (ValueError, OSError) as exc:
            files = skill_files(skill_dir)
            raise ResourceError(
                f"{exc} (files of skill {name!r}: {', '.join(files) or 'none'})"
            ) from None

    # -- life cycle ------------------------------------------------------------------------------
    def _close_repos(self) -> None:
        repos, self._repos = self._repos, []
        for repo in repos:
            try:
                repo.close()
            except Exception:
                log.warning("closing a skill source failed", exc_info=True)

    def close(self) -> None:
        """Remove the temporary copies of zip, package and URL sources."""
        with self._lock:
            self._close_repos()
            self._skills = None
            self._dirs = {}
