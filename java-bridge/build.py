"""Builds the Java side of the bridge with plain javac (no Maven: Maven Central is not
reachable here) into ``flink_agents/runtime/java/lib/flink-agents-bridge.jar``.

    python java-bridge/build.py [--out JAR] [--self-test] [--strict]

Used twice, so the jar is built one way only:

- by ``make java`` (``--strict --self-test``): warnings are errors and the self test
  (``src/test/java``, plain ``java``, no JUnit) runs;
- by the package build (``setup.py``'s ``build_py``), for every wheel, sdist-to-wheel and
  editable install, with ``apache-flink-libraries`` (PyFlink's jars, no Python code) in
  ``[build-system] requires``. There warnings are not errors: a newer JDK's new lint
  must not break a user's ``pip install``.

Compiles for Java 11 (``javac --release 11``) against PyFlink's ``lib/*`` and ``opt/*``
jars: the Flink operators (``org.flinkagents.flink``) need ``flink-dist`` and
``flink-python``. Needs a JDK 11+ (``javac`` on ``PATH`` or in ``$JAVA_HOME/bin``); without
one it stops with :class:`BuildError` saying so. The jar is written with :mod:`zipfile`
(no ``jar`` tool needed).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
JAR_PATH = "flink_agents/runtime/java/lib/flink-agents-bridge.jar"
MIN_JDK = 11
SKIP_ENV = "FLINK_AGENTS_SKIP_JAVA"
#: The self tests' main classes (``src/test/java``), run with plain ``java``.
SELF_TESTS = (
    "org.flinkagents.bridge.BridgeSelfTest",
    "org.flinkagents.flink.BeamReleaseFixSelfTest",
)
MANIFEST = "Manifest-Version: 1.0\r\nImplementation-Title: flink-agents-bridge\r\n\r\n"


class BuildError(RuntimeError):
    """The jar cannot be built here; the message says what is missing and how to fix it."""


def find_javac() -> tuple[str, int]:
    """``javac`` (``$JAVA_HOME/bin`` first, then ``PATH``) and its major version.

    Raises:
        BuildError: no javac, or one older than Java 11.
    """
    candidates = []
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidates.append(str(Path(java_home) / "bin" / "javac"))
    on_path = shutil.which("javac")
    if on_path:
        candidates.append(on_path)
    javac = next((c for c in candidates if os.access(c, os.X_OK)), None)
    if javac is None:
        raise BuildError(
            "javac not found: building flink-agents-py compiles its Java bridge jar and needs a "
            f"JDK {MIN_JDK}+ (a JRE is not enough). Install one (e.g. `apt-get install "
            "openjdk-17-jdk-headless`) and put javac on PATH or set JAVA_HOME, or set "
            f"{SKIP_ENV}=1 to build without the jar (the agents then run on PyFlink's slower "
            "operators and save durable call records only at timers)."
        )
    proc = subprocess.run([javac, "-version"], capture_output=True, text=True, check=False)
    text = (proc.stdout + proc.stderr).strip()
    match = re.search(r"javac (\d+)(?:\.(\d+))?", text)
    major = 0
    if match:
        major = int(match.group(1))
        if major == 1 and match.group(2):  # "javac 1.8.0_352"
            major = int(match.group(2))
    if major < MIN_JDK:
        raise BuildError(
            f"{javac} is {text or 'of unknown version'}: the Java bridge needs a JDK "
            f"{MIN_JDK}+ (javac --release {MIN_JDK}); point JAVA_HOME or PATH to a newer JDK"
        )
    return javac, major


def find_flink_jars() -> list[Path]:
    """PyFlink's jar folders (``pyflink/lib`` and ``pyflink/opt``) on this interpreter's path.

    ``apache-flink-libraries`` installs ``pyflink`` as a namespace package (no
    ``__init__.py``), so this looks through every folder of the namespace.

    Raises:
        BuildError: no ``pyflink/lib/flink-dist-*.jar`` is importable.
    """
    spec = importlib.util.find_spec("pyflink")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in map(Path, folders):
        if any((folder / "lib").glob("flink-dist-*.jar")):
            return [folder / "lib", folder / "opt"]
    raise BuildError(
        f"PyFlink's jars (pyflink/lib/flink-dist-*.jar) are not importable from {sys.executable}: "
        "the Java bridge compiles against them. A normal `pip install`/`pip wheel` gets them "
        "through [build-system] requires (apache-flink-libraries); with --no-build-isolation, "
        "install apache-flink-libraries==2.3.0 (or apache-flink==2.3.0) first."
    )


def _javac(javac: str, args: list[str], what: str) -> None:
    proc = subprocess.run([javac, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"javac failed compiling {what}:\n{proc.stdout}{proc.stderr}")
    if proc.stderr.strip():
        print(proc.stderr, file=sys.stderr, end="")


def _write_jar(classes: Path, out_jar: Path) -> None:
    """A jar is a zip with the manifest first; written next to the target, then moved, so
    a running job never sees half a jar."""
    out_jar.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_jar.with_name(out_jar.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", MANIFEST)
        for path in sorted(classes.rglob("*")):
            if path.is_file():
                jar.write(path, path.relative_to(classes).as_posix())
    tmp.replace(out_jar)


def build(out_jar: Path, *, strict: bool = False, self_test: bool = False) -> Path:
    """Compile ``java-bridge/src/main/java`` into ``out_jar``.

    Args:
        out_jar: where the jar goes.
        strict: warnings are errors (``-Xlint:all -Werror``), for development.
        self_test: also compile and run ``src/test/java``'s self tests (``SELF_TESTS``).

    Raises:
        BuildError: no JDK 11+, no PyFlink jars, no sources, or javac failed.
    """
    sources = sorted((HERE / "src" / "main" / "java").rglob("*.java"))
    if not sources:
        raise BuildError(f"no Java sources under {HERE / 'src' / 'main' / 'java'}")
    javac, _ = find_javac()
    classpath = os.pathsep.join(f"{folder}/*" for folder in find_flink_jars())
    # -processing: Flink's annotations (@ArgumentHint) have no annotation processor
    lint = ["-Xlint:all,-try,-path,-processing", "-Werror"] if strict else ["-nowarn"]
    with tempfile.TemporaryDirectory(prefix="flink-agents-bridge-") as tmp:
        classes, test_classes = Path(tmp) / "classes", Path(tmp) / "test-classes"
        listing = Path(tmp) / "sources.txt"
        listing.write_text("\n".join(f'"{s.as_posix()}"' for s in sources), encoding="utf-8")
        release = ["--release", str(MIN_JDK), "-encoding", "UTF-8"]
        _javac(
            javac,
            [*release, *lint, "-cp", classpath, "-d", str(classes), f"@{listing}"],
            "the bridge",
        )
        if self_test:
            tests = sorted((HERE / "src" / "test" / "java").rglob("*.java"))
            # The operators' tests need Flink's jars (the classes they load link to them).
            cp = os.pathsep.join([str(classes), classpath])
            _javac(
                javac,
                [*release, "-cp", cp, "-d", str(test_classes), *map(str, tests)],
                "the self test",
            )
            java = str(Path(javac).with_name("java"))
            cp = os.pathsep.join([str(classes), str(test_classes), classpath])
            for main in SELF_TESTS:
                proc = subprocess.run([java, "-cp", cp, main], check=False)
                if proc.returncode != 0:
                    raise BuildError(f"the self test {main} failed (output above)")
        _write_jar(classes, out_jar)
    return out_jar


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the flink-agents Java bridge jar.")
    parser.add_argument("--out", type=Path, default=ROOT / JAR_PATH, help="the jar to write")
    parser.add_argument("--strict", action="store_true", help="javac warnings are errors")
    parser.add_argument("--self-test", action="store_true", help="run the self tests")
    args = parser.parse_args(argv)
    try:
        jar = build(args.out, strict=args.strict, self_test=args.self_test)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"built {jar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
