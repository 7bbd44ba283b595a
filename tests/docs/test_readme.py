"""The README is the front page: its links lead to pages that exist, and a newcomer finds
from it the five things they need first."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_the_readme_links_to_files_that_exist() -> None:
    links = [link for link in _links(ROOT / "README.md") if "://" not in link]
    assert len(links) >= 20
    for link in links:
        target = link.split("#", 1)[0]
        assert (ROOT / target).is_file(), link


def test_a_newcomer_finds_install_first_agent_flink_job_configuration_troubleshooting() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    started = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    assert "make demo" in readme and "make test" in readme
    assert "(docs/getting-started.md)" in readme
    for heading in ("## Install in your own project", "## A first agent", "## A first Flink job"):
        assert heading in started, heading
    assert "(docs/user-guide/configuration.md)" in readme
    assert "(docs/user-guide/troubleshooting.md)" in readme
    assert len(readme.splitlines()) < 150  # a front page, not the manual


def test_contributing_has_no_relative_links() -> None:
    """CONTRIBUTING.md is also the site's Contributing page (included as is), where a link
    relative to the repository root would point elsewhere."""
    relative = [link for link in _links(ROOT / "CONTRIBUTING.md") if "://" not in link]
    assert relative == []
