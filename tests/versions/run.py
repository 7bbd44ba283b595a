"""Runs the test suites against one supported PyFlink version, in a venv of its own made
from the built wheel (the way a user installs the package next to their cluster's PyFlink).

    python tests/versions/run.py --flink 1.20.5 [--suites fast,thread,process] [--wheel W]
                                 [--venvs DIR] [--reuse] [-- PYTEST_ARGS...]

``PYTEST_ARGS`` (after ``--``) go to every pytest run of the suites, e.g. test paths to run
only those of a suite.

Suites (comma separated):

- ``fast``: ``pytest -m "not flink"`` (everything without a Flink job);
- ``thread``: ``pytest -m flink`` in thread mode (``make test-flink-thread``); ``thread:K/N``
  runs the K-th of N parts of it (the test files that use the flink marker, sorted, every
  N-th from the K-th): CI runs one part per commit so that consecutive commits cover it all;
- ``process``: ``pytest tests/flink -m flink`` in process mode (``make test-flink-process``);
- ``smoke``: :data:`SMOKE`, in both modes: a job per mode with memory and every fast path
  engaged, a durable call and a restore after an injected failure, the version checks, and
  one SQL ``agent_run`` script (thread mode);
- ``upgrade`` (1.20 only): tests/versions/test_upgrade.py, run by *this* interpreter (the
  newest PyFlink, ``.venv``) with the 1.20 venv's interpreter as the one that takes the
  savepoint.

The default is ``fast,thread,process``, plus ``upgrade`` for a 1.20 release.

Before the suites, the Java bridge is compiled against this version's jars and compared
with the wheel's jar class by class: the wheel ships one jar for every supported version
(identical bytecode against each), and a difference fails here with what to do.

Tests import the wheel's ``flink_agents`` (pytest runs with ``--import-mode=append`` from the
venv's own ``pytest`` script, so the repository's source folder comes after site-packages).
Tests that need the ``chroma`` / ``mem0`` / ``otel`` extras or matplotlib are left out
(:data:`NEEDS_EXTRAS`): those extras' pins cannot be installed together with apache-flink
1.20's (pip backtracks into building an old apache-beam); they run in the main suites, and
do not depend on Flink's version. So are the tests that make venvs of their own
(:data:`OWN_VENVS`). Prints one line per step with its time; exits non-zero when any step
failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JAR = "flink_agents/runtime/java/lib/flink-agents-bridge.jar"

#: The smoke set (node ids), run in both modes unless named in :data:`THREAD_ONLY`.
SMOKE = (
    "tests/flink/test_datastream.py::test_keyed_outputs_equal_local_environment_with_every_fast_path",
    "tests/flink/test_recovery.py::test_call_completed_before_a_checkpoint_is_not_repeated_after_a_restore",
    "tests/versions/test_flink_versions.py",
    "tests/sql/test_agent_run_flink.py",
)
#: Smoke tests that run in thread mode only (SQL agent_run is mode-independent).
THREAD_ONLY = ("tests/sql/test_agent_run_flink.py",)
#: Tests that need the chroma / mem0 extras (see the module docstring).
NEEDS_EXTRAS = (
    "tests/runtime/test_long_term_memory.py",
    "tests/integrations/test_vector_stores.py",
    # the RAG agent's Flink tests keep their documents in Chroma
    "tests/api/test_rag_flink.py",
    "tests/examples/test_rag_pipeline.py",
    # the otel extra (its protobuf pins and 1.20's differ) and matplotlib (the dev extra)
    "tests/observability/test_otel.py",
    "tests/observability/test_otel_flink.py",
    "tests/docs/test_plots.py",
)
#: Tests that install packages into venvs of their own, whatever PyFlink runs them (the
#: wheel with apache-flink 2.3.0, with 1.19.3): the main suites run them once.
OWN_VENVS = ("tests/packaging/test_wheel.py", "tests/versions/test_unsupported_pyflink.py")


def log(text: str) -> None:
    print(f"[versions] {text}", flush=True)


def run(command: list[str], *, env: dict[str, str] | None = None, quiet: bool = False) -> int:
    if quiet:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            out = "\n".join(
                line
                for line in (proc.stdout + proc.stderr).splitlines()
                if "is ignored: it is neither a file nor a directory" not in line
            )
            print(out[-6000:], flush=True)
        return proc.returncode
    return subprocess.run(command, env=env, check=False).returncode


def build_wheel(out: Path) -> Path:
    """The package's wheel (the bridge jar compiled in), built into ``out``."""
    started = time.monotonic()
    code = run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)], quiet=True
    )
    if code != 0:
        raise SystemExit("[versions] building the wheel failed (output above)")
    (wheel,) = out.glob("flink_agents_py-*.whl")
    log(f"wheel built in {time.monotonic() - started:.0f} s: {wheel.name}")
    return wheel


def test_requirements() -> list[str]:
    """The ``dev`` extra's test runners (``pytest*``, not the linters), jsonschema and
    hypothesis (property tests import it at module level)."""
    text = (REPO / "pyproject.toml").read_text()
    return re.findall(r'"(pytest[^"]*)"', text) + ["jsonschema>=4", "hypothesis>=6.100"]


def make_venv(venv: Path, wheel: Path, version: str, *, reuse: bool) -> Path:
    """A venv with the wheel, ``apache-flink==version`` and the test runners."""
    python = venv / "bin" / "python"
    marker = venv / ".flink-agents-wheel"
    stamp = f"{wheel.name} {wheel.stat().st_size} {wheel.stat().st_mtime_ns} {version}"
    if reuse and marker.exists() and marker.read_text() == stamp:
        log(f"venv {venv} reused")
        return python
    started = time.monotonic()
    shutil.rmtree(venv, ignore_errors=True)
    if run([sys.executable, "-m", "venv", str(venv)], quiet=True) != 0:
        raise SystemExit(f"[versions] could not create the venv {venv}")
    pip = [str(python), "-m", "pip", "install", "-q", "--no-compile"]
    packages = [str(wheel), f"apache-flink=={version}", *test_requirements()]
    if run([*pip, *packages], quiet=True) != 0:
        raise SystemExit(f"[versions] pip could not install {packages} (output above)")
    # The repository after site-packages (as an editable install has it): jobs the tests
    # submit import ``tests`` and ``examples`` from it, ``flink_agents`` from the wheel.
    site = next((venv / "lib").glob("python3.*/site-packages"))
    (site / "flink_agents_repository.pth").write_text(f"{REPO}\n")
    marker.write_text(stamp)
    log(f"venv with apache-flink {version} made in {time.monotonic() - started:.0f} s")
    return python


def check_bridge(python: Path, wheel: Path, version: str) -> bool:
    """Whether the bridge compiled against this version's jars equals the wheel's jar."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="flink-agents-bridge-") as tmp:
        jar = Path(tmp) / "bridge.jar"
        code = run(
            [str(python), str(REPO / "java-bridge" / "build.py"), "--out", str(jar)], quiet=True
        )
        if code != 0:
            log(f"FAILED: the Java bridge does not compile against apache-flink {version}")
            return False
        with zipfile.ZipFile(jar) as built, zipfile.ZipFile(wheel) as whl:
            shipped = zipfile.ZipFile(whl.open(JAR))
            mine = {n: built.read(n) for n in built.namelist() if n.endswith(".class")}
            theirs = {n: shipped.read(n) for n in shipped.namelist() if n.endswith(".class")}
    differ = sorted(n for n in mine.keys() | theirs.keys() if mine.get(n) != theirs.get(n))
    if differ:
        log(
            f"FAILED: the bridge compiled against apache-flink {version} differs from the "
            f"wheel's jar in {', '.join(differ[:5])}: the jar must then be built per Flink "
            "minor version and picked at run time (see java-bridge/README.md)"
        )
        return False
    log(f"bridge jar: same bytecode against {version} ({time.monotonic() - started:.0f} s)")
    return True


def flink_test_files() -> list[str]:
    """The test files that use the ``flink`` marker, sorted (repository-relative)."""
    files = []
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        if "mark.flink" in path.read_text(encoding="utf-8"):
            files.append(path.relative_to(REPO).as_posix())
    return files


def thread_part(spec: str) -> list[str]:
    """The files of part ``K/N`` of the thread suite (every N-th file from the K-th)."""
    match = re.fullmatch(r"(\d+)/(\d+)", spec)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise SystemExit(f"[versions] thread:{spec}: expected thread:K/N with 1 <= K <= N")
    k, n = int(match[1]), int(match[2])
    left_out = (*NEEDS_EXTRAS, *OWN_VENVS)
    files = [f for f in flink_test_files() if not f.startswith(left_out)]
    return files[k - 1 :: n]


def pytest_runs(suite: str) -> list[tuple[str, list[str]]]:
    """``(mode, pytest arguments)`` of a suite."""
    ignore = [f"--ignore={t}" for t in (*NEEDS_EXTRAS, *OWN_VENVS)]
    if suite == "fast":
        return [("thread", ["-m", "not flink", *ignore])]
    if suite == "thread":
        return [("thread", ["-m", "flink", *ignore])]
    if suite.startswith("thread:"):
        part = thread_part(suite.removeprefix("thread:"))
        log(f"{suite}: {', '.join(part)}")
        return [("thread", ["-m", "flink", *part])]
    if suite == "process":
        return [("process", ["tests/flink", "-m", "flink"])]
    if suite == "smoke":
        both = [t for t in SMOKE if t not in THREAD_ONLY]
        return [("thread", list(SMOKE)), ("process", both)]
    raise SystemExit(f"[versions] unknown suite {suite!r}: fast, thread, process or smoke")


def run_suites(venv: Path, wheel: Path, suites: list[str], version: str, extra: list[str]) -> bool:
    ok = True
    pytest = str(venv / "bin" / "pytest")
    for suite in suites:
        runs = pytest_runs(suite) if suite != "upgrade" else [("thread", [])]
        for mode, args in runs:
            started = time.monotonic()
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
            env["FLINK_AGENTS_TEST_MODE"] = mode
            env["FLINK_AGENTS_WHEEL"] = str(wheel)
            if suite == "upgrade":
                # The newest PyFlink is this interpreter's; the savepoint is taken by the
                # version's venv.
                env["FLINK_AGENTS_UPGRADE_FROM"] = str(venv / "bin" / "python")
                command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
                command += ["tests/versions/test_upgrade.py"]
            else:
                env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
                command = [pytest, "--import-mode=append", "-p", "no:cacheprovider", "-q", *args]
            command += extra
            code = subprocess.run(command, cwd=REPO, env=env, check=False).returncode
            seconds = time.monotonic() - started
            log(f"{version} {suite} ({mode}): exit {code} in {seconds:.0f} s")
            ok = ok and code == 0
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flink", required=True, help="apache-flink version, e.g. 1.20.5")
    parser.add_argument("--suites", help="comma separated (default: see above)")
    parser.add_argument("--wheel", type=Path, help="the built wheel (default: build it)")
    parser.add_argument(
        "--venvs", type=Path, default=REPO / ".versions", help="where the venvs are made"
    )
    parser.add_argument("--reuse", action="store_true", help="reuse a venv of the same wheel")
    parser.add_argument(
        "--prepare",
        action="store_true",
        help="only make the venv and check the bridge (a later --reuse run skips both)",
    )
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    suites = args.suites or "fast,thread,process" + (
        ",upgrade" if args.flink.startswith("1.20.") else ""
    )
    if "upgrade" in suites.split(",") and not args.flink.startswith("1.20."):
        raise SystemExit("[versions] the upgrade suite starts from a 1.20 release")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="flink-agents-wheel-") as tmp:
        wheel = args.wheel or build_wheel(Path(tmp))
        python = make_venv(args.venvs / f"flink-{args.flink}", wheel, args.flink, reuse=args.reuse)
        venv = python.parent.parent
        checked = venv / ".flink-agents-bridge-checked"
        stamp = (venv / ".flink-agents-wheel").read_text()
        if args.reuse and checked.exists() and checked.read_text() == stamp:
            ok = True  # checked when the venv was made for this wheel (--prepare)
        else:
            ok = check_bridge(python, wheel, args.flink)
            if ok:
                checked.write_text(stamp)
        if not args.prepare:
            ok = run_suites(venv, wheel, suites.split(","), args.flink, args.pytest_args) and ok
    seconds = time.monotonic() - started
    log(f"apache-flink {args.flink}: {'passed' if ok else 'FAILED'} in {seconds:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
