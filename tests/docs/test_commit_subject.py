"""The commit-msg hook: a subject over 72 characters is refused, through a real git commit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.check_commit_subject import LIMIT, main, problem, subject

ROOT = Path(__file__).resolve().parents[2]
SHORT = "Flink host: register queued timers before the snapshot"
LONG = "Flink host: register the queued processing-time timers of every key before the snapshot"


def test_the_subject_is_the_first_line_that_is_not_a_comment_or_blank() -> None:
    message = f"# Please enter the commit message\n\n{SHORT}\n\nbody\n"
    assert subject(message) == SHORT
    assert subject("# only comments\n\n") is None


def test_a_long_subject_is_refused_with_its_length_and_what_to_do() -> None:
    assert len(LONG) > LIMIT >= len(SHORT)
    found = problem(f"{LONG}\n\nwhy\n")
    assert found is not None
    assert f"{len(LONG)} characters; at most 72" in found
    assert "in the body" in found
    assert problem(f"{SHORT}\n") is None
    assert problem("x" * 72) is None and problem("x" * 73) is not None


def test_comments_body_trailers_and_the_diff_of_commit_v_are_not_counted() -> None:
    long_line = "y" * 120
    message = (
        f"# {long_line}\n{SHORT}\n\n{long_line}\n\n"
        f"Co-authored-by: {long_line} <a@example.org>\nSigned-off-by: {long_line}\n"
        "# ------------------------ >8 ------------------------\n"
        f"diff --git a/x b/x\n+{long_line}\n"
    )
    assert problem(message) is None
    # Above the scissors only comments: no subject (git aborts an empty message itself).
    assert problem(f"# ------------------------ >8 ------------------------\n{LONG}\n") is None


def test_fixup_prefixes_and_git_generated_subjects_are_not_counted() -> None:
    assert problem(f"fixup! {SHORT}") is None
    assert problem(f"squash! fixup! {SHORT}") is None
    assert problem(f"fixup! {LONG}") is not None
    assert problem(f"Merge branch '{'b' * 80}' into main") is None
    assert problem(f'Revert "{"r" * 70}"') is None


def test_main_reads_the_message_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(f"{LONG}\n")
    assert main([str(path)]) == 1
    assert "at most 72" in capsys.readouterr().err
    path.write_text(f"{SHORT}\n")
    assert main([str(path)]) == 0
    assert main([]) == 2


def _git(repo: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_pre_commit_config_installs_the_hook_and_git_refuses_a_long_subject(
    tmp_path: Path,
) -> None:
    """The repository's own .pre-commit-config.yaml, installed with a plain
    ``pre-commit install`` in a scratch repository: git runs the hook on each commit."""
    if shutil.which("git") is None:
        pytest.fail("git is needed for this test")
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / ".pre-commit-config.yaml", repo)
    shutil.copy(ROOT / "scripts" / "check_commit_subject.py", repo / "scripts")
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    assert _git(repo, "init", "-q", env=env).returncode == 0
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    assert (repo / ".git" / "hooks" / "commit-msg").exists()
    (repo / "notes.txt").write_text("a file that no Python hook looks at\n")
    assert _git(repo, "add", "-A", env=env).returncode == 0

    refused = _git(repo, "commit", "-q", "-m", LONG, "-m", "body", env=env)
    assert refused.returncode != 0
    assert "at most 72" in refused.stdout + refused.stderr
    assert _git(repo, "rev-parse", "HEAD", env=env).returncode != 0  # nothing committed

    accepted = _git(repo, "commit", "-q", "-m", SHORT, "-m", "x" * 200, env=env)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    log = _git(repo, "log", "--format=%s", env=env)
    assert log.stdout.strip() == SHORT
