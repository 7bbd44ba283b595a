"""The supported PyFlink versions: one range, declared in pyproject, checked when the Flink
host is imported (outside it: a clear error naming the range; inside it: not a word)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

pytest.importorskip("pyflink")

from flink_agents.errors import UnsupportedFlinkVersionError  # noqa: E402
from flink_agents.runtime.flink import _pyflink_internals as internals  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("version", "minor"),
    [
        ("1.20.0", (1, 20)),
        ("1.20.5", (1, 20)),
        ("2.0.2", (2, 0)),
        ("2.1.3", (2, 1)),
        ("2.2.1", (2, 2)),
        ("2.3.0", (2, 3)),
        ("2.3.7", (2, 3)),  # a later patch release of a supported line
    ],
)
def test_every_release_of_a_supported_minor_line_passes(version, minor, caplog) -> None:
    with caplog.at_level(logging.DEBUG, logger="flink_agents"):
        assert internals.check_supported(version) == minor
    assert caplog.records == []  # inside the range: no warning, no note


@pytest.mark.parametrize("version", ["1.19.3", "1.18.1", "2.4.0", "3.0.0", "1.2", "dev"])
def test_a_version_outside_the_range_is_a_clear_error(version) -> None:
    with pytest.raises(UnsupportedFlinkVersionError) as info:
        internals.check_supported(version)
    message = str(info.value)
    assert f"this Python has apache-flink {version}" in message
    assert "1.20.x, 2.0.x, 2.1.x, 2.2.x, 2.3.x (apache-flink>=1.20,<2.4)" in message
    assert 'pip install "apache-flink==1.20.5"' in message
    assert "docs/flink-versions.md" in message
    assert info.value.version == version
    assert isinstance(info.value, ImportError)


def test_the_installed_pyflink_is_supported() -> None:
    assert internals.check_version() is True
    assert internals.minor_version() in internals.SUPPORTED_MINORS
    assert internals.VERIFIED_VERSIONS[internals.minor_version()].startswith(
        ".".join(map(str, internals.minor_version())) + "."
    )


def test_pyproject_declares_the_checked_range() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["flink"] == [f"apache-flink{internals.SUPPORTED_RANGE}"]
    # The range and the minor lines say the same thing.
    low, high = internals.SUPPORTED_MINORS[0], internals.SUPPORTED_MINORS[-1]
    assert internals.SUPPORTED_RANGE == f">={low[0]}.{low[1]},<{high[0]}.{high[1] + 1}"
    assert list(internals.VERIFIED_VERSIONS) == list(internals.SUPPORTED_MINORS)


def test_the_ci_and_make_targets_name_the_verified_versions() -> None:
    """What CI installs is what the docs call verified (one list, not three)."""
    ci = (REPO / ".ci" / "run").read_text()
    docs = (REPO / "docs" / "flink-versions.md").read_text()
    for version in internals.VERIFIED_VERSIONS.values():
        assert version in docs, version
    for minor, version in internals.VERIFIED_VERSIONS.items():
        if minor != internals.SUPPORTED_MINORS[-1]:  # the newest runs in the main venv
            assert version in ci, version


def test_importing_the_flink_host_with_an_unsupported_pyflink_fails_naming_the_range(
    tmp_path: Path,
) -> None:
    """The import itself fails (in a fresh interpreter whose PyFlink says 1.19.3): the
    check runs before any other module of the host is loaded."""
    fake = tmp_path / "sitecustomize.py"
    fake.write_text("import pyflink.version\npyflink.version.__version__ = '1.19.3'\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    proc = subprocess.run(
        [sys.executable, "-c", "import flink_agents.runtime.flink.environment"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("flink_agents.errors.UnsupportedFlinkVersionError: flink-agents")
    assert "apache-flink 1.19.3" in last and "apache-flink>=1.20,<2.4" in last
