"""The ``bash`` tool: runs allow-listed commands for skills, without a shell, in a jail.

A chat model setup with ``skills`` and ``allowed_commands`` offers it (off otherwise); the
model passes ``command``, optionally ``timeout`` (seconds) and ``cwd``. What it guards:

- **allow-list**: each program is a name of ``allowed_commands`` (looked up in
  :attr:`BashTool.search_path`, not the process's ``PATH``), an absolute path listed there,
  or a script inside the jail; everything else is refused before anything runs;
- **no shell**: the command is parsed by :mod:`~flink_agents.plan.tools.bash.bash_validator`
  (pipes, ``&&``, ``||``, ``;``, quoting) and each program started with an argument list;
  redirections, substitutions, variables, wildcards, builtins are refused with the reason;
- **working-directory jail**: the jail is a private workspace directory (the default
  working directory, removed when the tool closes), the skills' directories and
  ``allowed_script_dirs``. ``cwd`` and every argument naming a path must resolve inside it,
  symbolic links followed: no escape through ``..``, links or absolute paths. Each step is
  checked right before it runs (a link made by an earlier step is seen);
- **scrubbed environment**: the programs get ``PATH`` (:attr:`BashTool.search_path`),
  ``HOME`` and ``TMPDIR`` (the workspace), ``LANG``/``LC_ALL`` and ``PWD``, plus
  :attr:`BashTool.environment`; nothing of this process's environment (API keys stay out);
- **bounded**: a whole call takes at most :attr:`BashTool.max_timeout` seconds (the model may
  ask for less), then every process it started is killed (each runs in its own process
  group); at most :attr:`BashTool.max_output_bytes` of stdout and of stderr are kept (the
  rest is counted and dropped while the programs keep running).

What it cannot guard: an allowed program's own behaviour. An interpreter (``python3``,
``sh``), ``env``, ``xargs``, ``find -exec``, ``awk``, ``sed``'s ``e`` command or ``git`` can
run other programs or read any file the TaskManager user can; ``ln`` or ``mv`` can make a
path that later leads out. Allow only what the skills need (``echo``, ``bc``...). The tool
logs a warning for such commands.

Results are text for the model: the output (or ``Success``), ``Error (exit code N): ...``,
``Error: Command timed out after N seconds`` or ``Command rejected: <reason>``.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from pydantic import Field, PrivateAttr

from flink_agents.api.tools.tool import Tool, ToolMetadata, ToolType
from flink_agents.plan.tools.bash.bash_validator import (
    AND,
    OR,
    CommandRejected,
    Step,
    check_command,
    inside,
    parse_command,
    resolve_in,
)

log = logging.getLogger(__name__)

#: Where allowed program names are looked up.
DEFAULT_SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"
#: Programs that can run other programs or reach any file: allowed only with a warning.
RISKY_COMMANDS = frozenset(
    {
        "sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3", "perl", "ruby",
        "node", "php", "lua", "env", "xargs", "find", "awk", "gawk", "mawk", "sed", "git",
        "tar", "zip", "unzip", "nohup", "timeout", "nice", "sudo", "su", "ssh", "scp",
        "curl", "wget", "nc", "ncat", "socat", "docker", "kubectl", "make", "pip", "npm",
        "npx", "busybox", "vi", "vim", "less", "more", "man", "ln", "mv", "cp", "rm",
        "chmod", "chown", "dd", "install", "rsync",
    }
)  # fmt: skip

_ARGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "description": (
                'The command to run, e.g. `echo "2 + 3" | bc`. Programs run directly, '
                "without a shell: pipes, &&, || and ; work; redirections, variables, "
                "wildcards and `cd` do not."
            ),
        },
        "timeout": {
            "type": "integer",
            "description": "Seconds the command may take (capped by the tool's limit).",
        },
        "cwd": {
            "type": "string",
            "description": (
                "The working directory (a skill's base directory, for example); use this "
                "instead of cd. Default: a private scratch directory."
            ),
        },
    },
    "required": ["command"],
}


def _default_metadata() -> ToolMetadata:
    return ToolMetadata(
        name="bash",
        description=(
            "Run a command: only allowed programs, or scripts inside the skills' "
            "directories, may run, and paths must stay inside those directories."
        ),
        args_schema=_ARGS_SCHEMA,
    )


class _Capture:
    """Reads a pipe to its end in a thread, keeping the first ``limit`` bytes."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.kept = bytearray()
        self.dropped = 0
        self._stream = stream
        self._limit = limit
        self._thread = threading.Thread(target=self._read, daemon=True, name="bash-output")
        self._thread.start()

    def _read(self) -> None:
        try:
            while chunk := self._stream.read(8192):
                room = self._limit - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
                self.dropped += max(0, len(chunk) - max(room, 0))
        except (OSError, ValueError):
            pass
        finally:
            self._stream.close()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def text(self) -> str:
        out = self.kept.decode("utf-8", errors="replace")
        if self.dropped:
            out += f"\n[output truncated: {self.dropped} more bytes]"
        return out


class BashTool(Tool):
    """Runs allow-listed commands without a shell inside a directory jail (see the module
    docstring). The chat model setup binds it to its ``allowed_commands`` and skills
    (:meth:`bind_to`); unbound, it allows nothing.

    Attributes:
        allowed_commands: program names (or absolute paths) that may run.
        allowed_script_dirs: the jail's directories besides the workspace (the skills'
            directories and the setup's ``allowed_script_dirs``).
        working_dir: the workspace (default: a private temporary directory per tool,
            removed on close).
        max_timeout: seconds a call may take at most (default 60).
        max_output_bytes: bytes of stdout, and of stderr, kept per call (default 32 KiB).
        search_path: where program names are looked up.
        environment: variables given to the programs besides the fixed ones.
    """

    metadata: ToolMetadata = Field(default_factory=_default_metadata)
    allowed_commands: list[str] = Field(default_factory=list)
    allowed_script_dirs: list[str] = Field(default_factory=list)
    working_dir: str | None = None
    max_timeout: float = Field(default=60.0, gt=0)
    max_output_bytes: int = Field(default=32_768, ge=1024)
    search_path: str = DEFAULT_SEARCH_PATH
    environment: dict[str, str] = Field(default_factory=dict)

    _workspace: Path | None = PrivateAttr(default=None)
    #: Removes the workspace the tool made (None: none made, or ``working_dir`` given).
    _remove: Callable[[], None] | None = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.FUNCTION

    def bind_to(self, setup: Any) -> BashTool:
        """This tool for a chat model setup: its ``allowed_commands``, and its skills'
        directories plus its ``allowed_script_dirs`` as the jail."""
        dirs = list(setup.resource_context.get_skill_dirs(*(setup.skills or [])))
        bound = self.model_copy(
            update={
                "allowed_commands": list(setup.allowed_commands),
                "allowed_script_dirs": [*dirs, *setup.allowed_script_dirs],
            }
        )
        bound._workspace = None
        bound._remove = None
        bound._lock = threading.Lock()
        risky = sorted(set(bound.allowed_commands) & RISKY_COMMANDS)
        if risky:
            log.warning(
                "bash tool: allowed command(s) %s can run other programs or reach files "
                "outside the skills' directories; the directory jail cannot constrain them",
                risky,
            )
        return bound

    # -- the jail --------------------------------------------------------------------------------
    def workspace(self) -> Path:
        """The workspace directory (made on first use)."""
        with self._lock:
            if self._workspace is None:
                if self.working_dir:
                    path = Path(self.working_dir).expanduser()
                    path.mkdir(parents=True, exist_ok=True)
                    self._workspace = Path(os.path.realpath(path))
                else:
                    workspace = Path(tempfile.mkdtemp(prefix="flink-agents-bash-"))

                    def remove() -> None:
                        shutil.rmtree(workspace, ignore_errors=True)

                    atexit.register(remove)  # if the tool is never closed
                    self._workspace, self._remove = workspace, remove
            return self._workspace

    def roots(self) -> list[Path]:
        """The jail's directories, resolved (the workspace first)."""
        roots = [self.workspace()]
        for d in self.allowed_script_dirs:
            resolved = Path(os.path.realpath(Path(d).expanduser()))
            if resolved.is_dir() and resolved not in roots:
                roots.append(resolved)
        return roots

    def close(self) -> None:
        """Remove the workspace if the tool made it."""
        with self._lock:
            self._workspace = None
            remove, self._remove = self._remove, None
        if remove is not None:
            atexit.unregister(remove)
            remove()

    # -- calls -----------------------------------------------------------------------------------
    def call(self, *args: Any, **kwargs: Any) -> str:
        """Run a command (``command``, ``timeout``, ``cwd``); returns text for the model."""
        if args:
            kwargs = {"command": args[0], **kwargs}
        unknown = sorted(set(kwargs) - {"command", "timeout", "cwd"})
        if unknown:
            return f"Command rejected: unknown argument(s) {unknown} (command, timeout, cwd)"
        command = kwargs.get("command")
        if not isinstance(command, str):
            return "Command rejected: 'command' must be a string"
        try:
            limit = self._timeout(kwargs.get("timeout"))
            roots = self.roots()
            cwd = self._cwd(kwargs.get("cwd"), roots)
            if not self.allowed_commands:
                raise CommandRejected("no commands are allowed (the setup's allowed_commands)")
            steps = parse_command(command)
        except CommandRejected as exc:
            return f"Command rejected: {exc}"
        return self._run(steps, cwd, roots, limit)

    def _timeout(self, requested: Any) -> float:
        if requested is None:
            return self.max_timeout
        try:
            seconds = float(requested)
        except (TypeError, ValueError):
            raise CommandRejected(f"timeout {requested!r} is not a number of seconds") from None
        if seconds <= 0:
            raise CommandRejected("timeout must be positive")
        return min(seconds, self.max_timeout)

    def _cwd(self, requested: Any, roots: list[Path]) -> Path:
        if requested in (None, ""):
            return roots[0]
        if not isinstance(requested, str):
            raise CommandRejected("cwd must be a string")
        target = resolve_in(requested, roots[0])
        if not inside(target, roots) or not target.is_dir():
            raise CommandRejected(
                f"cwd '{requested}' is not a directory inside the allowed directories "
                f"({', '.join(str(r) for r in roots)})"
            )
        return target

    def _environment(self, cwd: Path) -> dict[str, str]:
        home = str(self.workspace())
        env = {
            "PATH": self.search_path,
            "HOME": home,
            "TMPDIR": home,
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PWD": str(cwd),
        }
        env.update(self.environment)
        return env

    def _check(self, step: Step, cwd: Path, roots: list[Path]) -> list[str]:
        return [
            check_command(
                c,
                cwd=cwd,
                roots=roots,
                allowed=self.allowed_commands,
                search_path=self.search_path,
            )
            for c in step.pipeline
        ]

    def _run(self, steps: list[Step], cwd: Path, roots: list[Path], limit: float) -> str:
        try:  # every step before anything runs, then each again right before it runs
            for step in steps:
                self._check(step, cwd, roots)
        except CommandRejected as exc:
            return f"Command rejected: {exc}"
        deadline = time.monotonic() + limit
        env = self._environment(cwd)
        outputs: list[str] = []
        errors: list[str] = []
        status = 0
        for step in steps:
            if step.operator == AND and status != 0:
                continue
            if step.operator == OR and status == 0:
                continue
            try:
                executables = self._check(step, cwd, roots)
            except CommandRejected as exc:  # an earlier step changed the file system
                done = "".join(outputs).strip()
                return f"Command rejected: {exc}" + (f"\n(output so far: {done})" if done else "")
            status, out, err, timed_out = self._pipeline(step, executables, cwd, env, deadline)
            outputs.append(out)
            errors.append(err)
            if timed_out:
                partial = "".join(outputs).strip()
                return f"Error: Command timed out after {limit:g} seconds" + (
                    f"\n{partial}" if partial else ""
                )
        stdout, stderr = "".join(outputs).strip(), "".join(errors).strip()
        if status == 0:
            return stdout or "Success"
        return f"Error (exit code {status}): {stderr or stdout}"

    def _pipeline(
        self,
        step: Step,
        executables: list[str],
        cwd: Path,
        env: dict[str, str],
        deadline: float,
    ) -> tuple[int, str, str, bool]:
        """Start the pipeline's programs, connected; returns (status, stdout, stderr,
        timed out)."""
        processes: list[subprocess.Popen[bytes]] = []
        captures: list[_Capture] = []
        previous: IO[bytes] | None = None
        try:
            for i, (command, executable) in enumerate(zip(step.pipeline, executables, strict=True)):
                last = i == len(step.pipeline) - 1
                proc = subprocess.Popen(
                    [executable, *command.argv[1:]],
                    stdin=previous if previous is not None else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=cwd,
                    env=env,
                    shell=False,
                    start_new_session=True,
                    close_fds=True,
                )
                if previous is not None:
                    previous.close()  # the next program holds it now
                assert proc.stdout is not None and proc.stderr is not None
                captures.append(_Capture(proc.stderr, self.max_output_bytes))
                previous = None if last else proc.stdout
                if last:
                    captures.append(_Capture(proc.stdout, self.max_output_bytes))
                processes.append(proc)
        except OSError as exc:
            self._kill(processes)
            return 126, "", f"cannot start {command.argv[0]}: {exc.strerror or exc}\n", False
        timed_out = False
        for proc in processes:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
                break
        if timed_out:
            self._kill(processes)
        for capture in captures:
            capture.join(max(0.1, deadline - time.monotonic()) if not timed_out else 1.0)
        stdout = captures[-1].text()
        stderr = "".join(c.text() for c in captures[:-1])
        return processes[-1].returncode or 0, stdout, stderr, timed_out

    @staticmethod
    def _kill(processes: list[subprocess.Popen[bytes]]) -> None:
        for proc in processes:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for proc in processes:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                log.warning("bash tool: process %s did not exit after SIGKILL", proc.pid)
