"""Apache Flink Agents 0.3.1's own unit tests, taken from its sdist, run against this package.

Nothing of upstream is kept in this repository (license and drift): the sdist is downloaded
from the package index when the test runs (``pip download``; cached in
``~/.cache/flink-agents/upstream`` or ``$FLINK_AGENTS_UPSTREAM_CACHE``), the test files named
here are extracted into a temporary folder (not importable as ``flink_agents``), and pytest
runs them in a subprocess with this package importable.

:data:`FILES` are the sdist's tests that use only upstream's public API (what its docs show
users); :data:`DIFFERENCES` are the tests of these files we deliberately differ on, each with
the reason (also in docs/migrating.md); :data:`NOT_RUN` says why each other test file of the
sdist is not run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "0.3.1"
SDIST = f"flink_agents-{VERSION}.tar.gz"

#: Test files of the sdist (paths under its ``flink_agents/``) that use only public API.
FILES = [
    "runtime/tests/test_local_execution_environment.py",
    "runtime/tests/test_built_in_actions.py",
    "runtime/tests/test_runner_context_execute.py",
    "runtime/tests/test_get_resource_in_action.py",
    "api/tests/test_prompt.py",
    "api/tests/test_event.py",
    "api/tests/test_resource_name.py",
    "api/chat_models/tests/test_chat_model_base.py",
]

#: ``file::test`` -> why we deliberately behave otherwise. Each must fail here (a test that
#: starts to pass is reported, so the list stays true).
DIFFERENCES = {
    "runtime/tests/test_local_execution_environment.py::"
    "test_local_execution_environment_call_from_list_twice": (
        "a local environment here takes several inputs (each from_list(...).apply(...)"
        ".to_list() is its own pipeline, all run by execute()); upstream's takes one and "
        "raises RuntimeError at the second from_list"
    ),
    "runtime/tests/test_get_resource_in_action.py::test_get_resource_in_action": (
        "a chat model setup whose connection names no declared connection is a plan error "
        "here (PlanValidationError when the agent is applied, with the names declared); "
        "upstream fails only when the connection is first used, and this test's mock "
        "setup never uses it"
    ),
}

#: Other test files of the sdist (outside ``e2e_tests``) and why they are not run.
NOT_RUN = {
    "api/agents/tests/test_row_schema.py": "imports OutputSchema, an internal type",
    "api/chat_models/tests/test_token_metrics.py": (
        "calls the setup's private token-metric recording with its metric group classes"
    ),
    "api/tests/test_agent_add_action.py": "cross-language function descriptors (api.function)",
    "api/tests/test_decorators.py": "cross-language function descriptors (api.function)",
    "api/tests/test_core_options.py": "internal ConfigOption module (api.configuration)",
    "api/tests/test_cross_language_event_snapshots.py": (
        "reads Java snapshot fixtures that the sdist does not ship"
    ),
    "api/tests/test_skills.py": "skills (another part of this package's work)",
    "api/tests/test_tool.py": "internal schema helpers (api.tools.utils)",
    "api/tests/test_version_compatibility.py": "internal Flink version table",
    "api/tools/tests/test_utils.py": "internal schema helpers (api.tools.utils)",
    "api/yaml/tests/": "internal YAML loader modules (aliases, specs, loader fixtures)",
    "integrations/": (
        "need live provider services (Ollama, OpenAI, Tongyi...) or upstream's MCP test "
        "server; our integrations are tested against local servers in tests/integrations"
    ),
    "plan/": "upstream's plan internals (plan.function, plan.actions, plan.configuration)",
    "runtime/memory/": "upstream's mem0 internals",
    "runtime/skill/": "upstream's skill repository internals",
    "runtime/tests/test_durable_execution.py": "upstream's runtime internals",
    "runtime/tests/test_flink_runner_context_reconcilable.py": "upstream's runtime internals",
    "runtime/tests/test_local_memory_object.py": "upstream's LocalMemoryObject (internal)",
    "runtime/tests/test_local_runner_cross_language.py": "upstream's LocalRunner (internal)",
    "runtime/tests/test_local_runner_reconcilable.py": "upstream's LocalRunner (internal)",
    "runtime/tests/test_memory_reference.py": "upstream's LocalMemoryObject (internal)",
    "runtime/tests/test_memory_value_validation.py": "upstream's flink_memory_object (internal)",
    "runtime/tests/test_remote_execution_environment.py": "upstream's Java operator wiring",
}


def cache_dir() -> Path:
    return Path(
        os.environ.get("FLINK_AGENTS_UPSTREAM_CACHE")
        or Path.home() / ".cache" / "flink-agents" / "upstream"
    )


def sdist() -> Path:
    """The sdist, downloaded on first use.

    Raises:
        RuntimeError: pip could not download it (the message has pip's output).
    """
    target = cache_dir() / SDIST
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "FLINK_AGENTS_SKIP_JAR_DOWNLOAD": "1"}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"flink-agents=={VERSION}",
                "-d",
                tmp,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
        got = Path(tmp) / SDIST
        if done.returncode != 0 or not got.exists():
            raise RuntimeError(
                f"could not download flink-agents=={VERSION} from the package index "
                f"(pip exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        shutil.move(str(got), target)  # whole file or nothing: moved once complete
    return target


def extract(archive: Path, dest: Path, files: list[str]) -> list[Path]:
    """Extract ``files`` (paths under the sdist's ``flink_agents/``) into ``dest``, flat:
    ``runtime/tests/test_x.py`` becomes ``dest/runtime__tests__test_x.py``, so nothing
    there is importable as ``flink_agents``."""
    prefix = f"flink_agents-{VERSION}/flink_agents/"
    out = []
    with tarfile.open(archive) as tar:
        for name in files:
            member = tar.getmember(prefix + name)
            data = tar.extractfile(member)
            assert data is not None
            path = dest / name.replace("/", "__")
            path.write_bytes(data.read())
            out.append(path)
    return out


def test_id(path: Path, test: str) -> str:
    """``file::test`` in :data:`DIFFERENCES`' form for an extracted file."""
    return f"{path.stem.replace('__', '/')}.py::{test}"
