"""``java-bridge/build.py``'s checks, which make a package build without a usable JDK or
without PyFlink's jars stop with a message saying what is missing (the build itself is run
by ``test_wheel.py`` and ``make java``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

BUILD_PY = Path(__file__).resolve().parents[2] / "java-bridge" / "build.py"


@pytest.fixture(scope="module")
def build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bridge_build", BUILD_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_javac(folder: Path, version: str) -> Path:
    """A ``javac`` that only answers ``-version`` (no old JDK is installed here)."""
    folder.mkdir(parents=True, exist_ok=True)
    javac = folder / "javac"
    javac.write_text(f"#!/bin/sh\necho '{version}' >&2\n", encoding="utf-8")
    javac.chmod(0o755)
    return javac


def test_no_javac_names_the_missing_jdk(build, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(build.BuildError) as info:
        build.find_javac()
    message = str(info.value)
    assert message.startswith("javac not found")
    assert "JDK 11+" in message and "JAVA_HOME" in message
    assert "FLINK_AGENTS_SKIP_JAVA=1" in message


def test_a_jdk_older_than_11_is_refused(build, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(fake_javac(tmp_path / "bin", "javac 1.8.0_352").parent))
    with pytest.raises(
        build.BuildError, match=r"javac 1\.8\.0_352: the Java bridge needs a JDK 11\+"
    ):
        build.find_javac()


def test_java_home_comes_before_path(build, tmp_path, monkeypatch) -> None:
    home_javac = fake_javac(tmp_path / "jdk" / "bin", "javac 21.0.2")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("PATH", str(fake_javac(tmp_path / "old", "javac 1.8.0_352").parent))
    assert build.find_javac() == (str(home_javac), 21)


def test_pyflink_jars_are_found_in_the_namespace_package(build) -> None:
    lib, opt = build.find_flink_jars()
    assert any(lib.glob("flink-dist-*.jar")) and any(opt.glob("flink-python-*.jar"))


def test_no_pyflink_jars_says_where_they_come_from(tmp_path) -> None:
    """An interpreter without site-packages (-S) has no pyflink."""
    code = (
        "import runpy, sys\n"
        f"ns = runpy.run_path({str(BUILD_PY)!r})\n"
        "try:\n    ns['find_flink_jars']()\n"
        "except ns['BuildError'] as exc:\n    print(exc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "PyFlink's jars (pyflink/lib/flink-dist-*.jar) are not importable" in proc.stdout
    assert "apache-flink-libraries" in proc.stdout
