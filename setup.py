"""Build hook: every wheel (and editable install) gets the Java bridge jar compiled in.

The metadata lives in pyproject.toml; this file only adds a ``build_py`` step that runs
``java-bridge/build.py`` (javac against PyFlink's jars, which ``[build-system] requires``
brings as ``apache-flink-libraries``). Without a JDK 11+ the build stops with a message
saying so; ``FLINK_AGENTS_SKIP_JAVA=1`` builds without the jar on purpose.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _bridge_builder():
    path = ROOT / "java-bridge" / "build.py"
    if not path.is_file():
        raise SystemExit(
            f"error: {path} is missing: the Java bridge sources (java-bridge/) must be part of "
            "the source tree or sdist this package is built from"
        )
    spec = importlib.util.spec_from_file_location("_flink_agents_bridge_build", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithBridgeJar(build_py):
    """``build_py`` plus the bridge jar, into the build tree (into the source tree for an
    editable install, whose package is the source tree)."""

    def run(self) -> None:
        super().run()
        builder = _bridge_builder()
        if os.environ.get(builder.SKIP_ENV) == "1":
            print(
                f"warning: {builder.SKIP_ENV}=1: building without the Java bridge jar",
                file=sys.stderr,
            )
            return
        if getattr(self, "editable_mode", False):
            target = ROOT / builder.JAR_PATH
        else:
            target = Path(self.build_lib) / builder.JAR_PATH
        try:
            builder.build(target)
        except builder.BuildError as exc:
            raise SystemExit(f"error: {exc}") from None
        print(f"built {target}", file=sys.stderr)


setup(cmdclass={"build_py": BuildPyWithBridgeJar})
