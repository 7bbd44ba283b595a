"""A skill as loaded: its ``SKILL.md`` metadata and instructions, and where it came from."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SkillOrigin(BaseModel):
    """The source a skill was loaded from: ``scheme`` (``local``, ``package``, ``url``) and
    a readable ``location`` (a path, ``package/resource``, a URL)."""

    scheme: str
    location: str

    def __str__(self) -> str:
        return f"{self.scheme}:{self.location}"


class AgentSkill(BaseModel):
    """One skill.

    Attributes:
        name: 1-64 characters: lower-case letters, digits and hyphens, no hyphen first or
            last, none doubled.
        description: 1-1024 characters: what the skill does and when to use it (the model
            sees it at discovery).
        content: the Markdown instructions after the front matter (sent on activation).
        license: the skill's license, if given.
        compatibility: what the skill needs of its environment (at most 500 characters).
        metadata: free key-value pairs of the front matter's ``metadata``.
        origin: where it was loaded from.
    """

    name: str = Field(min_length=1, max_length=64)
    description: str = Field(min_length=1, max_length=1024)
    content: str = Field(min_length=1)
    license: str | None = None
    compatibility: str | None = Field(default=None, max_length=500)
    metadata: dict[str, str] | None = None
    origin: SkillOrigin | None = None
