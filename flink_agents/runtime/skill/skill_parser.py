"""``SKILL.md``: YAML front matter between ``---`` lines, then Markdown instructions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import ValidationError

from flink_agents.runtime.skill.agent_skill import AgentSkill

#: A skill name: lower-case letters, digits and single hyphens inside.
SKILL_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


@dataclass(frozen=True)
class ParsedMarkdown:
    """Front matter (a mapping) and the Markdown after it."""

    metadata: dict[str, Any]
    content: str


class MarkdownSkillParser:
    """Splits Markdown with YAML front matter."""

    FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.S)

    @classmethod
    def parse(cls, markdown: str) -> ParsedMarkdown:
        """The front matter and body of ``markdown`` (no front matter: empty metadata).

        Raises:
            ValueError: the front matter is not YAML, or not a mapping.
        """
        match = cls.FRONT_MATTER.match(markdown.lstrip("\ufeff"))
        if match is None:
            return ParsedMarkdown({}, markdown)
        try:
            data = yaml.safe_load(match.group(1))
        except yaml.YAMLError as exc:
            raise ValueError(f"the front matter is not valid YAML: {exc}") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ValueError("the front matter must be a YAML mapping (name: ..., ...)")
        return ParsedMarkdown(data, match.group(2))


class SkillParser:
    """Makes an :class:`AgentSkill` of a ``SKILL.md``."""

    @classmethod
    def parse_skill(cls, skill_md_content: str) -> AgentSkill:
        """The skill of ``SKILL.md`` text.

        Raises:
            ValueError: a missing or invalid ``name`` or ``description``, no instructions,
                a field too long (the message names it).
        """
        parsed = MarkdownSkillParser.parse(skill_md_content)
        meta = parsed.metadata
        for field in ("name", "description"):
            value = meta.get(field)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(
                    f"SKILL.md needs a front matter with '{field}' (---\\nname: my-skill\\n"
                    "description: what it does and when to use it\\n---)"
                )
        name = meta["name"].strip()
        if len(name) > 64 or not SKILL_NAME.fullmatch(name):
            raise ValueError(
                f"skill name {name!r} must be 1-64 lower-case letters, digits and single "
                "hyphens, not starting or ending with a hyphen"
            )
        if not parsed.content.strip():
            raise ValueError("SKILL.md needs instructions after its front matter")
        extra = meta.get("metadata")
        try:
            return AgentSkill(
                name=name,
                description=meta["description"].strip(),
                content=parsed.content,
                license=None if meta.get("license") is None else str(meta["license"]),
                compatibility=(
                    None if meta.get("compatibility") is None else str(meta["compatibility"])
                ),
                metadata=(
                    {str(k): str(v) for k, v in extra.items()} if isinstance(extra, dict) else None
                ),
            )
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
            )
            raise ValueError(f"invalid SKILL.md: {problems}") from None
