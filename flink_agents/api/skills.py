"""Agent skills: where to load them from (the :class:`Skills` resource), as in Apache Flink
Agents.

A *skill* is a directory holding a ``SKILL.md`` file (YAML front matter with ``name`` and
``description``, then Markdown instructions) and, optionally, scripts and reference files.
A *skill source* is a directory (or a ``.zip``) whose subdirectories are skills. An agent
declares sources with ``@skills`` methods returning a :class:`Skills` (or
``add_resource(name, ResourceType.SKILLS, Skills...)`` on the agent or the environment)::

    class MathAgent(Agent):
        @skills
        @staticmethod
        def my_skills() -> Skills:
            return Skills.from_local_dir("/path/to/skills")

A chat model setup opts in by naming the skills it may use, ``skills=["math-calculator"]``:
its model then sees each skill's name and description in a system message (discovery) and
gets the ``load_skill`` tool to read a skill's instructions and files when it decides to use
one (activation). ``allowed_commands=["echo", "bc"]`` also gives it the ``bash`` tool, which
runs only those commands, without a shell, inside the skills' directories; without
``allowed_commands`` there is no ``bash`` tool (see :mod:`flink_agents.plan.tools.bash` and
the documentation's Skills page for what it guards and what it does not).

Sources (one :class:`SkillSourceSpec` each; several ``@skills`` methods are merged and
identical sources de-duplicated):

- :meth:`Skills.from_local_dir`: directories or ``.zip`` files, read where the agent runs
  (the TaskManagers);
- :meth:`Skills.from_package`: ``(package, resource)`` pairs, a directory or ``.zip`` inside
  an installed Python package (shipped with the job's Python code);
- :meth:`Skills.from_url`: ``http(s)`` URLs of ``.zip`` files, downloaded once per task slot.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from flink_agents.api.resource import ResourceType, SerializableResource

__all__ = [
    "BASH_TOOL",
    "LOAD_SKILL_TOOL",
    "SKILLS_CONFIG",
    "SkillSourceSpec",
    "Skills",
]

#: Names of the built-in tools a setup with ``skills`` gets.
LOAD_SKILL_TOOL = "load_skill"
BASH_TOOL = "bash"
#: The resource (type ``skills``) that holds every source of an agent, merged by the plan.
SKILLS_CONFIG = "_skills_config"


class SkillSourceSpec(BaseModel):
    """One source of skills: a ``scheme`` (``local``, ``package``, ``url``) and its
    parameters (``path``; ``package`` and ``resource``; ``url``).

    The scheme is kept in lower case. An unknown scheme is accepted here (a plan written
    elsewhere may carry one) and refused, with the known schemes, when the skills load.
    """

    model_config = ConfigDict(frozen=True)

    scheme: str
    params: dict[str, str] = Field(default_factory=dict)

    @field_validator("scheme")
    @classmethod
    def _lower(cls, value: str) -> str:
        return value.lower()

    def __hash__(self) -> int:
        return hash((self.scheme, tuple(sorted(self.params.items()))))

    def describe(self) -> str:
        """Where the source is, for messages (``local:/path``, ``package:pkg/res``, ...)."""
        params = self.params
        if self.scheme == "local" and "path" in params:
            return f"local:{params['path']}"
        if self.scheme == "package" and "package" in params:
            return f"package:{params['package']}/{params.get('resource', '')}"
        if self.scheme == "url" and "url" in params:
            return f"url:{params['url']}"
        return f"{self.scheme}:{dict(params)}"


class Skills(SerializableResource):
    """Where an agent's skills come from. Make one with a ``from_*`` factory.

    Attributes:
        sources: the sources, in order (a later skill of the same name overrides an
            earlier one, with a warning).
    """

    sources: list[SkillSourceSpec] = Field(default_factory=list)

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.SKILLS

    @classmethod
    def from_local_dir(cls, *paths: str) -> Skills:
        """Skills from local directories or ``.zip`` files; each directory's (or zip's
        top-level) subdirectories with a ``SKILL.md`` are skills. The paths are read where
        the agent runs."""
        return cls(sources=[SkillSourceSpec(scheme="local", params={"path": p}) for p in paths])

    @classmethod
    def from_url(cls, *urls: str) -> Skills:
        """Skills from ``http(s)`` URLs of ``.zip`` files whose top level holds the skill
        directories."""
        return cls(sources=[SkillSourceSpec(scheme="url", params={"url": u}) for u in urls])

    @classmethod
    def from_package(cls, *pairs: tuple[str, str]) -> Skills:
        """Skills inside installed Python packages.

        Args:
            *pairs: ``(package, resource)``: a dotted package name and a path inside it (a
                directory or a ``.zip``).
        """
        return cls(
            sources=[
                SkillSourceSpec(scheme="package", params={"package": pkg, "resource": res})
                for pkg, res in pairs
            ]
        )
