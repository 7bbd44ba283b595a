"""Loading skills: ``SKILL.md`` parsing, directory / zip / package / URL sources (a real
HTTP server on 127.0.0.1), the discovery prompt, ``load_skill`` and its path checks."""

from __future__ import annotations

import http.server
import io
import logging
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from flink_agents.api.skills import Skills, SkillSourceSpec
from flink_agents.errors import ResourceError
from flink_agents.runtime.skill.skill_manager import SkillManager
from flink_agents.runtime.skill.skill_parser import SkillParser
from flink_agents.runtime.skill.skill_tools import LoadSkillTool

RESOURCES = Path(__file__).parent / "resources" / "skills"


def skill_md(name: str, description: str = "does things", body: str = "Do it.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}"


def write_skill(root: Path, name: str, **kwargs: str) -> Path:
    (root / name).mkdir(parents=True, exist_ok=True)
    (root / name / "SKILL.md").write_text(skill_md(name, **kwargs))
    return root / name


def manager(*sources: Skills) -> SkillManager:
    return SkillManager(sources=[s for skills in sources for s in skills.sources])


# -- the API (upstream's tests of the public Skills resource) ---------------------------------


def test_skills_factories_and_specs() -> None:
    assert Skills.from_local_dir("/a", "/b.zip").sources == [
        SkillSourceSpec(scheme="local", params={"path": "/a"}),
        SkillSourceSpec(scheme="local", params={"path": "/b.zip"}),
    ]
    assert Skills.from_url("https://example.com/x.zip").sources == [
        SkillSourceSpec(scheme="url", params={"url": "https://example.com/x.zip"})
    ]
    assert Skills.from_package(("pkg_a", "skills"), ("pkg_b", "other")).sources == [
        SkillSourceSpec(scheme="package", params={"package": "pkg_a", "resource": "skills"}),
        SkillSourceSpec(scheme="package", params={"package": "pkg_b", "resource": "other"}),
    ]
    both = Skills(sources=[*Skills.from_local_dir("/a").sources, *Skills.from_url("u").sources])
    assert Skills.model_validate(both.model_dump()).sources == both.sources
    upper = SkillSourceSpec(scheme="LOCAL", params={"path": "/x"})
    lower = SkillSourceSpec(scheme="local", params={"path": "/x"})
    assert upper == lower and hash(upper) == hash(lower) and len({upper, lower}) == 1
    future = SkillSourceSpec.model_validate({"scheme": "future-scheme", "params": {"k": "v"}})
    assert future.scheme == "future-scheme"


# -- SKILL.md -----------------------------------------------------------------------------------


def test_skill_md_parsing() -> None:
    skill = SkillParser.parse_skill((RESOURCES / "math-calculator" / "SKILL.md").read_text())
    assert skill.name == "math-calculator"
    assert skill.description.startswith("Evaluates arithmetic")
    assert skill.license == "Apache-2.0" and skill.compatibility == "needs echo and bc"
    assert skill.content.lstrip().startswith("# Math calculator")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter at all", "front matter with 'name'"),
        ("---\nname: x\n---\nbody", "'description'"),
        ("---\nname: Bad_Name\ndescription: d\n---\nbody", "lower-case letters"),
        ("---\nname: -x\ndescription: d\n---\nbody", "lower-case letters"),
        ("---\nname: " + "a" * 65 + "\ndescription: d\n---\nbody", "1-64"),
        ("---\nname: x\ndescription: d\n---\n  \n", "needs instructions"),
        ("---\nname: [x\n---\nbody", "not valid YAML"),
        ("---\n- a\n- b\n---\nbody", "must be a YAML mapping"),
        ("---\nname: x\ndescription: " + "d" * 1025 + "\n---\nbody", "description"),
    ],
)
def test_bad_skill_md_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SkillParser.parse_skill(text)


# -- sources ------------------------------------------------------------------------------------


def test_directory_source_and_discovery_prompt() -> None:
    skills = manager(Skills.from_local_dir(str(RESOURCES)))
    try:
        assert skills.get_all_skill_names() == ["joke-generator", "math-calculator"]
        prompt = skills.generate_discovery_prompt("math-calculator")
        assert prompt.startswith("## Available Skills")
        assert "<available_skills>\n<skill>\n<name>math-calculator</name>" in prompt
        assert "joke-generator" not in prompt
        assert prompt.endswith("</available_skills>\n")
        assert skills.get_skill_dirs("math-calculator") == [str(RESOURCES / "math-calculator")]
        with pytest.raises(ResourceError, match="unknown skill 'nope'.*joke-generator"):
            skills.generate_discovery_prompt("nope")
    finally:
        skills.close()


def test_package_source_is_a_private_copy() -> None:
    skills = manager(Skills.from_package(("tests.skills", "resources/skills")))
    try:
        directory = Path(skills.get_skill_dirs("joke-generator")[0])
        assert directory.name == "joke-generator" and directory.parent != RESOURCES
        assert (directory / "scripts" / "gen_joke.py").is_file()
    finally:
        skills.close()
    assert not directory.exists()
    with pytest.raises(ResourceError, match="package 'no_such_pkg_xyz' is not installed"):
        manager(Skills.from_package(("no_such_pkg_xyz", "skills"))).size


def _zip(entries: dict[str, str], links: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o120777 << 16  # a symbolic link
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_zip_source_and_unsafe_zips(tmp_path: Path) -> None:
    good = tmp_path / "good.zip"
    good.write_bytes(_zip({"hello/SKILL.md": skill_md("hello"), "hello/a.txt": "A"}))
    skills = manager(Skills.from_local_dir(str(good)))
    try:
        assert skills.get_all_skill_names() == ["hello"]
        assert skills.read_file("hello", "a.txt") == "A"
    finally:
        skills.close()
    for name, entries, links, message in [
        ("slip.zip", {"../evil/SKILL.md": skill_md("evil")}, (), "unsafe zip entry"),
        ("abs.zip", {"/tmp/evil/SKILL.md": skill_md("evil")}, (), "unsafe zip entry"),
        ("link.zip", {"x/SKILL.md": skill_md("x")}, ("x/passwd",), "is a link"),
    ]:
        path = tmp_path / name
        path.write_bytes(_zip(entries, links))
        with pytest.raises(ResourceError, match=message):
            manager(Skills.from_local_dir(str(path))).size
    assert not (tmp_path / "evil").exists()
    (tmp_path / "not.zip").write_text("plain text")
    with pytest.raises(ResourceError, match="not a zip file"):
        manager(Skills.from_local_dir(str(tmp_path / "not.zip"))).size


@pytest.fixture
def zip_server(tmp_path: Path) -> Iterator[str]:
    payload = _zip({"remote/SKILL.md": skill_md("remote", body="From far away.\n")})

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server name
            if self.path.startswith("/skills.zip"):
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            else:
                self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_url_source(zip_server: str, caplog: pytest.LogCaptureFixture) -> None:
    skills = manager(Skills.from_url(f"{zip_server}/skills.zip?token=hide-me"))
    try:
        assert "\n\nFrom far away.\n" in skills.load("remote")
        assert skills.get_skill("remote").origin is not None
        assert "hide-me" not in str(skills.get_skill("remote").origin)
    finally:
        skills.close()
    with pytest.raises(ResourceError, match="cannot load skills from url"):
        manager(Skills.from_url(f"{zip_server}/missing.zip")).size
    with pytest.raises(ResourceError, match="must be http or https"):
        manager(Skills.from_url("file:///etc/passwd")).size


def test_missing_sources_unknown_schemes_and_overrides(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ResourceError, match="does not exist"):
        manager(Skills.from_local_dir(str(tmp_path / "nowhere"))).size
    with pytest.raises(ResourceError, match="unknown skill source scheme 'classpath'"):
        SkillManager(sources=[SkillSourceSpec(scheme="classpath", params={})]).size
    bad = tmp_path / "bad"
    (bad / "broken").mkdir(parents=True)
    (bad / "broken" / "SKILL.md").write_text("---\nname: broken\n---\nno description\n")
    with pytest.raises(ResourceError, match=r"broken/SKILL.md.*'description'"):
        manager(Skills.from_local_dir(str(bad))).size
    first, second = tmp_path / "first", tmp_path / "second"
    write_skill(first, "same", description="first one")
    write_skill(second, "same", description="second one")
    caplog.set_level(logging.WARNING)
    skills = manager(Skills.from_local_dir(str(first), str(second)))
    assert skills.get_skill("same").description == "second one"
    assert "overrides" in caplog.text


# -- load_skill ---------------------------------------------------------------------------------


@pytest.fixture
def load_skill(tmp_path: Path) -> Iterator[LoadSkillTool]:
    skills = manager(Skills.from_local_dir(str(RESOURCES)))

    def lookup(name: str, rtype: object) -> SkillManager:
        return skills

    yield LoadSkillTool(get_resource=lookup)
    skills.close()


def test_load_skill_gives_instructions_base_directory_and_files(
    load_skill: LoadSkillTool,
) -> None:
    text = load_skill.call(name="math-calculator")
    base = RESOURCES / "math-calculator"
    assert text.startswith('<skill_content name="math-calculator">\n# Skill: math-calculator')
    assert "Let `bc` do it" in text or "let `bc` do it" in text
    assert f"Base directory for this skill: {base}" in text
    assert f"<file>{base / 'references' / 'examples.md'}</file>" in text
    assert load_skill.call(name="math-calculator", path="references/examples.md").startswith(
        "# Examples"
    )
    assert load_skill.call(name="nope") == (
        "Skill 'nope' not found. Available skills: joke-generator, math-calculator"
    )


def test_load_skill_paths_stay_inside_the_skill(load_skill: LoadSkillTool, tmp_path: Path) -> None:
    for path in ("../joke-generator/SKILL.md", "/etc/passwd", "../../../../etc/passwd"):
        result = load_skill.call(name="math-calculator", path=path)
        assert "outside the skill's directory" in result, result
    assert "is not a file of the skill" in load_skill.call(name="math-calculator", path="nope")


def test_load_skill_bound_to_a_setups_skills(load_skill: LoadSkillTool) -> None:
    class Setup:
        skills = ["joke-generator"]

    bound = load_skill.bind_to(Setup())
    assert bound.call(name="math-calculator") == (
        "Skill 'math-calculator' not found. Available skills: joke-generator"
    )
    assert "python3 scripts/gen_joke.py" in bound.call(name="joke-generator")
    assert bound.call(name="joke-generator", other=1).startswith("Unknown argument")
