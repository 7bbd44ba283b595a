"""The discovery message: the skills a model may use, and how to load one."""

from __future__ import annotations

from xml.sax.saxutils import escape


class SkillPromptProvider:
    """Templates of the discovery message (the format of Apache Flink Agents' docs)."""

    SKILL_DISCOVERY_PROMPT = """## Available Skills

<usage>
Skills are instructions (and sometimes scripts and reference files) for specific tasks.
When one of them matches your task, load it first with `load_skill(name="<skill-name>")`
and follow its instructions. Load a file of a skill with `load_skill(name=..., path=...)`.
Loaded instructions name the skill's base directory: pass it as `cwd` to the bash tool, if
you have one, to run the skill's scripts.
</usage>

<available_skills>
"""

    AVAILABLE_SKILL_TEMPLATE = """<skill>
<name>{name}</name>
<description>{description}</description>
</skill>
"""

    AVAILABLE_SKILLS_TAG_END = "</available_skills>\n"

    @classmethod
    def discovery_prompt(cls, skills: list[tuple[str, str]]) -> str:
        """The message for ``(name, description)`` pairs (text escaped for the tags)."""
        entries = "".join(
            cls.AVAILABLE_SKILL_TEMPLATE.format(name=escape(n), description=escape(d))
            for n, d in skills
        )
        return cls.SKILL_DISCOVERY_PROMPT + entries + cls.AVAILABLE_SKILLS_TAG_END
