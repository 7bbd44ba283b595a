"""The bash tool: what runs (upstream's public examples), and escapes that must fail: out of
the jail through ``..``, links and absolute paths, shell features, the allow-list, secrets
in the environment, time and output limits."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flink_agents.plan.tools.bash.bash_tool import BashTool
from flink_agents.plan.tools.bash.bash_validator import CommandRejected, parse_command

TOOLS = ["echo", "bc", "cat", "ls", "head", "sleep", "yes", "env", "wc", "true", "false"]


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    root = tmp_path / "skills" / "demo"
    (root / "scripts").mkdir(parents=True)
    (root / "notes.txt").write_text("inside the jail\n")
    script = root / "scripts" / "hello.sh"
    script.write_text("#!/bin/sh\necho hello from the script\n")
    script.chmod(0o755)
    (root / "scripts" / "hello.py").write_text("print('ok')\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP SECRET\n")
    return secret


@pytest.fixture
def tool(skill_dir: Path) -> BashTool:
    bash = BashTool(allowed_commands=TOOLS, allowed_script_dirs=[str(skill_dir)])
    yield bash
    bash.close()


# -- what runs ---------------------------------------------------------------------------------


def test_upstreams_examples_run(tool: BashTool) -> None:
    # the math-calculator skill's commands (upstream's docs and quickstart)
    assert tool.call(command='echo "(2 + 3) * 4" | bc') == "20"
    assert tool.call(command='echo "2 ^ 10" | bc') == "1024"
    assert tool.call(command='echo "scale=2; 10 / 3" | bc') == "3.33"
    assert tool.call(command="echo hello", timeout=10) == "hello"


def test_operators_quoting_and_comments(tool: BashTool) -> None:
    assert tool.call(command="echo a && echo b; false || echo c") == "a\nb\nc"
    assert tool.call(command="false && echo never").startswith("Error (exit code 1)")
    assert tool.call(command="echo 'a|b' \"c && d\" e\\;f # a comment") == "a|b c && d e;f"
    assert tool.call(command="echo '$HOME' \"x*y\"") == "$HOME x*y"
    assert tool.call(command="true") == "Success"
    assert tool.call("echo positional") == "positional"


def test_scripts_and_files_inside_the_jail(tool: BashTool, skill_dir: Path) -> None:
    assert tool.call(command="scripts/hello.sh", cwd=str(skill_dir)) == "hello from the script"
    assert tool.call(command=f"{skill_dir}/scripts/hello.sh") == "hello from the script"
    assert tool.call(command="cat notes.txt", cwd=str(skill_dir)) == "inside the jail"
    assert tool.call(command=f"cat {skill_dir}/notes.txt") == "inside the jail"
    assert tool.call(command="cat ./scripts/../notes.txt", cwd=str(skill_dir)) == "inside the jail"
    python = BashTool(allowed_commands=[sys.executable], allowed_script_dirs=[str(skill_dir)])
    assert python.call(command=f"{sys.executable} scripts/hello.py", cwd=str(skill_dir)) == "ok"


def test_failures_and_missing_programs(tool: BashTool) -> None:
    assert "No such file" in tool.call(command="cat nothere.txt")
    missing = BashTool(allowed_commands=["no-such-program-xyz"])
    assert "not installed here" in missing.call(command="no-such-program-xyz")


# -- escapes that must fail --------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "cat {outside}",
        "cat ../outside/secret.txt",
        "cat ../../outside/secret.txt",
        "cat {skill}/../../outside/secret.txt",
        "cat /etc/passwd",
        "head --lines=1 /etc/passwd",
        "wc --files0-from={outside}",
        "ls /",
        "ls ..",
        "cat ~/secret.txt",
    ],
)
def test_paths_out_of_the_jail_are_refused(
    tool: BashTool, skill_dir: Path, outside: Path, command: str
) -> None:
    text = command.format(outside=outside, skill=skill_dir)
    result = tool.call(command=text, cwd=str(skill_dir))
    assert result.startswith("Command rejected:"), result
    assert "TOP SECRET" not in result


def test_links_out_of_the_jail_are_refused(tool: BashTool, skill_dir: Path, outside: Path) -> None:
    (skill_dir / "link.txt").symlink_to(outside)
    (skill_dir / "dirlink").symlink_to(outside.parent)
    for command in ("cat link.txt", "cat dirlink/secret.txt", "ls dirlink", "cat ./link.txt"):
        result = tool.call(command=command, cwd=str(skill_dir))
        assert result.startswith("Command rejected:") and "leads outside" in result, result
    assert tool.call(command="ls", cwd=str(skill_dir / "dirlink")).startswith(
        "Command rejected: cwd"
    )


def test_cwd_must_be_inside(tool: BashTool, skill_dir: Path, outside: Path) -> None:
    for cwd in (str(outside.parent), "/", "..", str(skill_dir / ".." / "..")):
        result = tool.call(command="ls", cwd=cwd)
        assert result.startswith("Command rejected: cwd"), (cwd, result)


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("rm -rf /", "command 'rm' is not allowed"),
        ("echo hi | sh", "command 'sh' is not allowed"),
        ("echo $(cat /etc/passwd)", "command substitution"),
        ("echo `id`", "command substitution"),
        ('echo "$(id)"', "command substitution"),
        ("echo $HOME", "variable expansion ($HOME)"),
        ("echo ${PATH}", "variable expansion"),
        ("echo hi > out.txt", "redirection '>'"),
        ("cat < notes.txt", "redirection '<'"),
        ("sleep 100 &", "background"),
        ("(echo hi)", "subshells"),
        ("{ echo hi; }", "grouping"),
        ("cat *.txt", "wildcard '*'"),
        ("PATH=/tmp echo hi", "setting environment variables"),
        ("cd / && ls", "'cd' is a shell builtin"),
        ("for f in a; do echo x; done", "'for' is a shell builtin"),
        ("echo hi |", "needs a command on both sides"),
        ("&& echo hi", "needs a command on both sides"),
        ("echo 'unterminated", "unterminated single quote"),
        ("", "empty command"),
        ("../../bin/sh -c id", "outside the allowed directories"),
        ("/bin/sh -c id", "outside the allowed directories"),
    ],
)
def test_shell_features_and_other_programs_are_refused(
    tool: BashTool, command: str, reason: str
) -> None:
    result = tool.call(command=command)
    assert result.startswith("Command rejected:"), result
    assert reason in result, result


def test_nothing_runs_when_a_later_step_is_refused(tool: BashTool, skill_dir: Path) -> None:
    marker = tool.workspace() / "made"
    result = tool.call(command=f"echo first > {marker}; rm -rf /")
    assert result.startswith("Command rejected:")
    result = tool.call(command="echo first && rm x")
    assert (
        result
        == "Command rejected: command 'rm' is not allowed (allowed: " + ", ".join(TOOLS) + ")"
    )
    assert not marker.exists()


def test_the_model_cannot_widen_its_allow_list(tool: BashTool) -> None:
    result = tool.call(command="rm -rf /", allowed_commands=["rm"], allowed_script_dirs=["/"])
    assert result.startswith("Command rejected: unknown argument(s)")
    assert "allowed_commands" not in tool.metadata.args_schema["properties"]


def test_off_without_an_allow_list() -> None:
    bare = BashTool()
    try:
        assert bare.call(command="echo hi") == (
            "Command rejected: no commands are allowed (the setup's allowed_commands)"
        )
    finally:
        bare.close()


def test_environment_is_scrubbed(tool: BashTool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak-4242")
    monkeypatch.setenv("MY_TOKEN", "tok-must-not-leak")
    env = tool.call(command="env")
    assert "sk-must-not-leak" not in env and "tok-must-not-leak" not in env
    names = {line.split("=", 1)[0] for line in env.splitlines()}
    assert names == {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "PWD"}
    assert f"HOME={tool.workspace()}" in env
    extra = BashTool(allowed_commands=["env"], environment={"SKILL_MODE": "test"})
    try:
        assert "SKILL_MODE=test" in extra.call(command="env")
    finally:
        extra.close()


def test_time_is_bounded_and_processes_are_killed(skill_dir: Path) -> None:
    bash = BashTool(allowed_commands=["sleep", "echo"], max_timeout=1.0)
    try:
        assert bash.call(command="sleep 37.25") == "Error: Command timed out after 1 seconds"
        # the model may ask for less, never for more
        assert bash.call(command="sleep 37.25", timeout=3600).startswith("Error: Command timed out")
        assert bash.call(command="echo done") == "done"
        assert bash.call(command="echo x", timeout=-1) == (
            "Command rejected: timeout must be positive"
        )
    finally:
        bash.close()
    # no sleep left behind (each pipeline ran in its own process group, killed)
    leftovers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _is_our_sleep(p)]
    assert leftovers == []


def _is_our_sleep(proc: Path) -> bool:
    try:
        argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return False
    return len(argv) > 1 and argv[0].endswith("sleep") and argv[1] == "37.25"


def test_output_is_bounded(skill_dir: Path) -> None:
    bash = BashTool(allowed_commands=["yes", "head"], max_output_bytes=2048)
    try:
        result = bash.call(command="yes | head -c 100000")
        kept, note = result.rsplit("\n", 1)
        assert len(kept) <= 2048
        assert note == f"[output truncated: {100000 - 2048} more bytes]"
        endless = bash.call(command="yes", timeout=1)  # never ends: cut by time, not memory
        assert endless.startswith("Error: Command timed out")
        assert len(endless) < 4096
    finally:
        bash.close()


def test_workspace_is_private_and_removed(skill_dir: Path) -> None:
    bash = BashTool(allowed_commands=["ls"])
    workspace = bash.workspace()
    assert workspace.is_dir() and bash.call(command="ls") == "Success"
    bash.close()
    assert not workspace.exists()


def test_parser_steps() -> None:
    steps = parse_command("echo a | bc && echo b\necho c || echo d")
    assert [(s.operator, [c.argv for c in s.pipeline]) for s in steps] == [
        (None, [("echo", "a"), ("bc",)]),
        ("&&", [("echo", "b")]),
        (";", [("echo", "c")]),
        ("||", [("echo", "d")]),
    ]
    with pytest.raises(CommandRejected, match="longer than"):
        parse_command("echo " + "x" * 20_000)
    with pytest.raises(CommandRejected, match="more than 32 commands"):
        parse_command(" | ".join(["echo"] * 40))
