"""Skill sources on disk: a directory whose subdirectories hold ``SKILL.md`` files, and the
files of each skill, read inside the skill's directory only."""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from pathlib import Path

from flink_agents.runtime.skill.agent_skill import AgentSkill
from flink_agents.runtime.skill.skill_parser import SkillParser

log = logging.getLogger(__name__)

SKILL_MD = "SKILL.md"
#: Largest file ``load_skill`` returns (bytes); a larger one is refused with its size.
MAX_RESOURCE_BYTES = 512 * 1024
#: Most files listed per skill.
MAX_LISTED_FILES = 500


class SkillRepository(ABC):
    """Where skills come from."""

    @abstractmethod
    def get_skills(self) -> list[AgentSkill]:
        """Every skill of the source."""

    def get_skill_dir(self, name: str) -> Path | None:
        """The skill's directory on disk (None: not on disk)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional
        """Release what the source holds (a temporary directory)."""


class FileSystemSkillRepository(SkillRepository):
    """Skills in the subdirectories of a directory (each with a ``SKILL.md``).

    Args:
        base_dir: the directory.
        cleanup: called by :meth:`close` (removes a temporary copy).

    Raises:
        ValueError: ``base_dir`` is not a directory.
    """

    def __init__(self, base_dir: str | os.PathLike[str], cleanup: object = None) -> None:
        path = Path(os.path.realpath(Path(base_dir).expanduser()))
        if not path.is_dir():
            raise ValueError(f"{path} is not a directory of skills")
        self.base_dir = path
        self._cleanup = cleanup
        self._dirs: dict[str, Path] = {}

    def get_skills(self) -> list[AgentSkill]:
        """The skills of the directory, by directory name.

        Raises:
            ValueError: a ``SKILL.md`` that does not parse (naming the file).
        """
        skills = []
        for entry in sorted(self.base_dir.iterdir()):
            skill_md = entry / SKILL_MD
            if not entry.is_dir() or not skill_md.is_file():
                continue
            real = Path(os.path.realpath(entry))
            if self.base_dir not in real.parents:
                log.warning(
                    "skipping skill directory %s: it links outside %s", entry, self.base_dir
                )
                continue
            try:
                skill = SkillParser.parse_skill(skill_md.read_text(encoding="utf-8"))
            except (ValueError, OSError, UnicodeDecodeError) as exc:
                raise ValueError(f"{skill_md}: {exc}") from None
            if skill.name != entry.name:
                log.warning(
                    "skill %r is in directory %r: name the directory like the skill",
                    skill.name,
                    entry.name,
                )
            self._dirs[skill.name] = real
            skills.append(skill)
        return skills

    def get_skill_dir(self, name: str) -> Path | None:
        return self._dirs.get(name)

    def close(self) -> None:
        cleanup, self._cleanup = self._cleanup, None
        if callable(cleanup):
            cleanup()


def skill_files(skill_dir: Path) -> list[str]:
    """The files of a skill (paths relative to its directory, ``SKILL.md`` excluded, links
    leading out of it left out), sorted; at most :data:`MAX_LISTED_FILES`."""
    found: list[str] = []
    for root, dirs, files in os.walk(skill_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(root) / name
            rel = path.relative_to(skill_dir).as_posix()
            if rel == SKILL_MD or name.startswith("."):
                continue
            if skill_dir not in Path(os.path.realpath(path)).parents:
                continue
            found.append(rel)
            if len(found) >= MAX_LISTED_FILES:
                return found
    return found


def read_skill_file(skill_dir: Path, relative: str) -> str:
    """The text of a file of a skill.

    Raises:
        ValueError: the path leads outside the skill's directory (``..``, an absolute path,
            a link), is not a file, is too large, or is not text (the message says which).
    """
    target = Path(os.path.realpath(skill_dir / relative))
    if skill_dir not in target.parents:
        raise ValueError(f"'{relative}' is outside the skill's directory")
    if not target.is_file():
        raise ValueError(f"'{relative}' is not a file of the skill")
    size = target.stat().st_size
    if size > MAX_RESOURCE_BYTES:
        raise ValueError(f"'{relative}' has {size} bytes, more than {MAX_RESOURCE_BYTES}")
    data = target.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(
            f"'{relative}' is a binary file ({size} bytes); it is not shown as text"
        ) from None
