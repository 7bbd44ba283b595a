"""Headless chromium for the tests that look at a page as a person would (the trace
timeline, the docs site): Debian's package, installed when missing like `make browser`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

#: Flags of every headless run: no sandbox (root in CI), no GPU, no network of its own
#: (no updates, sync or background requests), no first-run UI.
HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chromium() -> str:
    """Debian's chromium, installed when missing (as root with apt-get, like `make browser`);
    the test is skipped, saying why, where it cannot be installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if shutil.which("apt-get") and hasattr(os, "geteuid") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
        subprocess.run(
            ["apt-get", "install", "-y", "-q", "chromium"],
            env=env,
            capture_output=True,
            timeout=900,
        )
        found = shutil.which("chromium")
        if found:
            return found
    pytest.skip("chromium is not installed and cannot be installed here (run `make browser`)")


def run_headless(
    url: str, profile: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run chromium headless on ``url`` with a fresh ``profile`` directory and ``args``
    (``--dump-dom``, ``--screenshot=PATH``, ``--window-size=W,H``...)."""
    return subprocess.run(
        [chromium(), *HEADLESS_FLAGS, f"--user-data-dir={profile}", *args, url],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
