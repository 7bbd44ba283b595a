"""The generated reference pages are up to date with the code, and complete."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from flink_agents import errors
from flink_agents.api import core_options

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs/gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_reference"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["options.md", "errors.md", "cli.md"])
def test_committed_page_is_what_the_code_generates(gen: ModuleType, page: str) -> None:
    committed = (ROOT / "docs" / "reference" / page).read_text(encoding="utf-8")
    assert committed == gen.PAGES[page](), (
        f"docs/reference/{page} is out of date: run `make docs` (or python "
        "docs/gen_reference.py) and commit the result"
    )


def test_every_registered_option_is_in_the_options_page(gen: ModuleType) -> None:
    page = gen.options_page()
    core_options._import_option_modules()
    for key, option in core_options._OPTIONS.items():
        # Options without effect are listed apart, with why.
        assert f"| `{key}`{' |' if option.no_effect else '<br>'}" in page, key
        if option.no_effect is None and option.description:
            first_words = " ".join(option.description.split()[:3])
            assert gen._cell(gen._rst_to_md(first_words)) in page, key
    assert "event-log.type.<name>.level" in page  # the key family


def test_the_option_modules_are_found_by_reading_the_sources(gen: ModuleType) -> None:
    found = gen.option_modules()
    assert "flink_agents.api.core_options" in found
    for module in core_options._OPTION_MODULES:
        assert module in found, module


def test_every_error_class_is_in_the_errors_page(gen: ModuleType) -> None:
    page = gen.errors_page()
    for name, value in vars(errors).items():
        if isinstance(value, type) and issubclass(value, errors.FlinkAgentsError):
            assert f"### {name}\n" in page, name
    assert "    ConfigurationError  (also a ValueError)" in page
    assert "; the command exits with code 2" in page  # UsageError


def test_every_command_and_argument_is_in_the_cli_page(gen: ModuleType) -> None:
    from flink_agents.cli._parser import build_parser

    page = gen.cli_page()
    parser = build_parser()
    commands = next(a for a in parser._actions if hasattr(a, "choices") and a.choices)
    for name, sub in commands.choices.items():
        assert f"## flink-agents {name}\n" in page, name
        for action in sub._actions:
            if action.dest in ("help", "debug"):
                continue
            shown = action.option_strings[-1] if action.option_strings else gen._short(action)
            assert f"`{shown}" in page, (name, action.dest)


def test_check_mode_reports_a_stale_page(
    gen: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gen, "REFERENCE", tmp_path)
    assert gen.main(["--check"]) == 1  # nothing written yet
    assert gen.main([]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli.md", "errors.md", "options.md"]
    assert gen.main(["--check"]) == 0
    (tmp_path / "cli.md").write_text("edited by hand\n")
    assert gen.main(["--check"]) == 1
