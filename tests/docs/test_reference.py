"""The generated reference pages are up to date with the code, and complete.

The generator runs in a process of its own, as `make lint` runs it: this test process's
option registry also holds options that other tests declare."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from flink_agents import errors

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "docs" / "gen_reference.py"
PAGES = ("options.md", "errors.md", "cli.md")


def _gen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GEN), *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("reference")
    done = _gen("--out", str(out))
    assert done.returncode == 0, done.stderr
    return {page: (out / page).read_text(encoding="utf-8") for page in PAGES}


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    """The generator's module, for its helpers (reading sources, formatting)."""
    spec = importlib.util.spec_from_file_location("gen_reference", GEN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_reference"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", PAGES)
def test_committed_page_is_what_the_code_generates(generated: dict[str, str], page: str) -> None:
    committed = (ROOT / "docs" / "reference" / page).read_text(encoding="utf-8")
    assert committed == generated[page], (
        f"docs/reference/{page} is out of date: run `make docs` (or python "
        "docs/gen_reference.py) and commit the result"
    )


def test_every_declared_option_is_in_the_options_page(
    generated: dict[str, str], gen: ModuleType
) -> None:
    page = generated["options.md"]
    modules = gen.option_modules()
    assert "flink_agents.api.core_options" in modules
    declared = [
        option for name in modules for _, option in gen._holders(importlib.import_module(name))
    ]
    assert len(declared) > 30
    for option in declared:
        # Options without effect are listed apart, with why.
        assert f"| `{option.key}`{' |' if option.no_effect else '<br>'}" in page, option.key
        if option.no_effect is None and option.description:
            first_words = " ".join(option.description.split()[:3])
            assert gen._cell(gen._rst_to_md(first_words)) in page, option.key
    assert "`event-log.type.<name>.level`" in page  # the key family
    assert "| `max-retries`<br>int | `3` |" in page


def test_the_option_modules_known_to_the_registry_are_found_by_reading_the_sources(
    gen: ModuleType,
) -> None:
    from flink_agents.api import core_options

    found = gen.option_modules()
    for module in core_options.option_modules():
        assert module in found, module


def test_every_error_class_is_in_the_errors_page(generated: dict[str, str]) -> None:
    page = generated["errors.md"]
    for name, value in vars(errors).items():
        if isinstance(value, type) and issubclass(value, errors.FlinkAgentsError):
            assert f"### {name}\n" in page, name
    assert "    ConfigurationError  (also a ValueError)" in page
    assert "; the command exits with code 2" in page  # UsageError


def test_every_command_and_argument_is_in_the_cli_page(
    generated: dict[str, str], gen: ModuleType
) -> None:
    from flink_agents.cli._parser import build_parser

    page = generated["cli.md"]
    parser = build_parser()
    commands = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    for name, sub in commands.choices.items():
        assert f"## flink-agents {name}\n" in page, name
        for action in sub._actions:
            if action.dest in ("help", "debug"):
                continue
            shown = action.option_strings[-1] if action.option_strings else gen._short(action)
            assert f"`{shown}" in page, (name, action.dest)


def test_check_mode_reports_a_page_edited_by_hand(
    generated: dict[str, str], tmp_path: Path
) -> None:
    for page, text in generated.items():
        (tmp_path / page).write_text(text, encoding="utf-8")
    (tmp_path / "cli.md").write_text("edited by hand\n")
    stale = _gen("--check", "--out", str(tmp_path))
    assert stale.returncode == 1
    assert "out of date" in stale.stderr and "cli.md" in stale.stderr
    assert "options.md" not in stale.stderr  # the pages as generated pass
