"""The command language of the ``bash`` tool, and the checks a command must pass to run.

There is no shell. A command is parsed here into simple commands (a program and its
arguments), joined by ``|`` (pipes), ``&&``, ``||``, ``;`` and newlines, and each program is
started directly (``subprocess`` with an argument list). Quoting works as in a shell: ``'...'``
is literal, ``"..."`` keeps spaces (``\\"``, ``\\\\``, ``\\$`` and ``\\``` escape), ``\\`` escapes
the next character; a ``#`` that starts a word starts a comment.

Everything else a shell would interpret is refused with the reason, not passed on as text:
redirections (``>``, ``<``), background jobs (``&``), subshells and grouping (``(``, ``)``,
``{ ...; }``), variables and command substitution (``$X``, ``${X}``, ``$(...)``, backquotes),
wildcards (``*``, ``?``, ``[``), ``VAR=value`` prefixes, and shell builtins and keywords
(``cd``, ``export``, ``for``, ``if``...). Inside single quotes, or double quotes for
wildcards, these characters are plain text.

Each simple command is then checked (:func:`check_command`):

- its program is a name in the allow-list (looked up in a fixed search path, not the
  process's ``PATH``), an absolute path in the allow-list, or a file inside one of the jail's
  directories (a skill's script);
- every argument that names a path (contains ``/``, is ``..`` or ``~...``, or names an entry
  of the working directory) resolves, symbolic links followed, inside the jail: no ``..``,
  symlink or absolute path leads out of it. An option's value (``--out=/x``, ``-o/x``) is
  checked the same way.

These checks bound what the *command line* can name; they cannot bound what an allowed
program does on its own (an interpreter runs any code; ``find`` and ``awk`` can start
programs). The allow-list is the real boundary: see the documentation's Skills page.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

#: Operators between simple commands.
PIPE, AND, OR, SEQ = "|", "&&", "||", ";"
#: Longest command accepted, in characters, and most simple commands in one.
MAX_COMMAND_CHARS = 16_384
MAX_SIMPLE_COMMANDS = 32

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BUILTINS = frozenset(
    {
        "cd", "export", "source", ".", "exec", "eval", "set", "unset", "alias", "unalias",
        "read", "trap", "ulimit", "umask", "shopt", "declare", "local", "readonly",
        "typeset", "let", "builtin", "command", "hash", "jobs", "fg", "bg", "wait", "disown",
        "history", "pushd", "popd", "dirs", "enable", "exit", "return", "shift", "times",
        "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
        "esac", "select", "function", "in", "time", "coproc", "[[", "]]", "!", "{", "}",
    }
)  # fmt: skip


class CommandRejected(ValueError):
    """A command that may not run; the message says why (the model sees it)."""


@dataclass(frozen=True)
class SimpleCommand:
    """A program and its arguments (``argv[0]`` as written)."""

    argv: tuple[str, ...]


@dataclass(frozen=True)
class Step:
    """A pipeline and the operator that joins it to the previous step (None for the first:
    ``;`` runs it anyway, ``&&`` only after success, ``||`` only after failure)."""

    operator: str | None
    pipeline: tuple[SimpleCommand, ...]


# -- parsing ---------------------------------------------------------------------------------


def _refuse(what: str, fix: str) -> CommandRejected:
    return CommandRejected(f"{what} is not available: the bash tool runs no shell ({fix})")


def tokenize(command: str) -> list[tuple[str, bool]]:
    """The words and operators of ``command``: ``(text, is_operator)``.

    Raises:
        CommandRejected: a shell feature that is not available, an unterminated quote.
    """
    if len(command) > MAX_COMMAND_CHARS:
        raise CommandRejected(f"the command is longer than {MAX_COMMAND_CHARS} characters")
    tokens: list[tuple[str, bool]] = []
    word: list[str] = []
    in_word = False
    i, n = 0, len(command)

    def end_word() -> None:
        nonlocal in_word
        if in_word:
            tokens.append(("".join(word), False))
            word.clear()
            in_word = False

    def check_dollar(at: int) -> None:
        nxt = command[at + 1 : at + 2]
        if nxt == "(":
            raise _refuse("command substitution $(...)", "run the commands one after another")
        name = _NAME.match(command, at + 1)
        if nxt == "{" or name or (nxt and nxt in "?#@*!$0123456789-"):
            shown = "${...}" if nxt == "{" else "$" + (name.group(0) if name else nxt)
            raise _refuse(
                f"variable expansion ({shown})",
                "write the value itself; the environment holds no variables of yours",
            )

    while i < n:
        ch = command[i]
        if ch in " \t":
            end_word()
            i += 1
        elif ch in "\n;":
            end_word()
            tokens.append((SEQ, True))
            i += 1
        elif ch == "|":
            end_word()
            if command.startswith("||", i):
                tokens.append((OR, True))
                i += 2
            else:
                if command.startswith("|&", i):
                    raise _refuse("|& (piping stderr)", "stderr is returned separately")
                tokens.append((PIPE, True))
                i += 1
        elif ch == "&":
            end_word()
            if command.startswith("&&", i):
                tokens.append((AND, True))
                i += 2
            else:
                raise _refuse("& (background jobs and &> redirection)", "run it in the foreground")
        elif ch in "<>":
            raise _refuse(
                f"redirection '{ch}'",
                "read files by naming them as arguments; the output is returned to you",
            )
        elif ch in "()":
            raise _refuse(f"'{ch}' (subshells and grouping)", "quote it if it is text")
        elif ch == "`":
            raise _refuse("command substitution `...`", "run the commands one after another")
        elif ch == "#" and not in_word:
            newline = command.find("\n", i)
            i = n if newline < 0 else newline
        elif ch == "'":
            close = command.find("'", i + 1)
            if close < 0:
                raise CommandRejected("unterminated single quote")
            word.append(command[i + 1 : close])
            in_word = True
            i = close + 1
        elif ch == '"':
            i += 1
            in_word = True
            while True:
                if i >= n:
                    raise CommandRejected("unterminated double quote")
                c = command[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\" and i + 1 < n and command[i + 1] in '"\\$`\n':
                    if command[i + 1] != "\n":
                        word.append(command[i + 1])
                    i += 2
                    continue
                if c == "$":
                    check_dollar(i)
                if c == "`":
                    raise _refuse(
                        "command substitution `...`", "run the commands one after another"
                    )
                word.append(c)
                i += 1
        elif ch == "\\":
            if i + 1 < n and command[i + 1] != "\n":
                word.append(command[i + 1])
            in_word = True
            i += 2
        else:
            if ch == "$":
                check_dollar(i)
            if ch in "*?[":
                raise _refuse(
                    f"wildcard '{ch}'",
                    "name the files; quote the character if it is text (e.g. '2 * 3')",
                )
            if ch == "~" and not in_word:
                raise _refuse("~ (home directory)", "use paths inside the working directory")
            if ch in "{}" and not in_word and (i + 1 >= n or command[i + 1] in " \t\n;"):
                raise _refuse(f"'{ch}' (grouping)", "quote it if it is text")
            word.append(ch)
            in_word = True
            i += 1
    end_word()
    return tokens


def parse_command(command: str) -> list[Step]:
    """``command`` as steps of pipelines of simple commands.

    Raises:
        CommandRejected: an empty command, a shell feature that is not available, an
            operator without a command on one side, a ``VAR=value`` prefix, a builtin.
    """
    tokens = tokenize(command)
    steps: list[Step] = []
    pipeline: list[SimpleCommand] = []
    argv: list[str] = []
    operator: str | None = None
    count = 0

    def finish_command(op: str) -> None:
        nonlocal count
        if not argv:
            raise CommandRejected(f"'{op}' needs a command on both sides")
        first = argv[0]
        if "=" in first and _NAME.fullmatch(first.split("=", 1)[0]):
            raise CommandRejected(
                f"'{first}': setting environment variables is not allowed (no shell)"
            )
        if first in _BUILTINS:
            hint = (
                "pass the directory as the cwd argument instead"
                if first == "cd"
                else "run programs only"
            )
            raise CommandRejected(
                f"'{first}' is a shell builtin or keyword; no shell runs ({hint})"
            )
        count += 1
        if count > MAX_SIMPLE_COMMANDS:
            raise CommandRejected(f"more than {MAX_SIMPLE_COMMANDS} commands in one call")
        pipeline.append(SimpleCommand(tuple(argv)))
        argv.clear()

    for text, is_operator in tokens:
        if not is_operator:
            argv.append(text)
            continue
        if text == PIPE:
            finish_command(PIPE)
            continue
        if not argv and not pipeline:
            if text == SEQ:  # empty lines and a trailing ';' are fine
                continue
            raise CommandRejected(f"'{text}' needs a command on both sides")
        finish_command(text)
        steps.append(Step(operator, tuple(pipeline)))
        pipeline.clear()
        operator = text
    if argv or pipeline:
        finish_command(operator or ";")
        steps.append(Step(operator, tuple(pipeline)))
    elif operator in (AND, OR):
        raise CommandRejected(f"'{operator}' needs a command on both sides")
    if not steps:
        raise CommandRejected("empty command")
    return [Step(None if i == 0 else s.operator, s.pipeline) for i, s in enumerate(steps)]


# -- checks ----------------------------------------------------------------------------------


def inside(path: Path, roots: list[Path]) -> bool:
    """Whether ``path`` (resolved) is one of ``roots`` or below one."""
    return any(path == root or root in path.parents for root in roots)


def resolve_in(path: str, cwd: Path) -> Path:
    """``path`` relative to ``cwd``, absolute, symbolic links followed."""
    return Path(os.path.realpath(cwd / path))


def _looks_like_path(arg: str, cwd: Path) -> bool:
    if "/" in arg or arg in (".", "..") or arg.startswith("~"):
        return True
    try:
        return os.path.lexists(cwd / arg)  # a name in the working directory (maybe a link)
    except (OSError, ValueError):
        return False


def _path_values(arg: str) -> list[str]:
    """The parts of an argument that may name paths: the argument, an option's value
    (``--out=/x``, ``-o/x``)."""
    values = [arg]
    if arg.startswith("-"):
        if "=" in arg:
            values.append(arg.split("=", 1)[1])
        elif not arg.startswith("--") and len(arg) > 2:
            values.append(arg[2:])
    return [v for v in values if v]


def check_command(
    command: SimpleCommand,
    *,
    cwd: Path,
    roots: list[Path],
    allowed: list[str],
    search_path: str,
) -> str:
    """The executable to run for ``command`` (an absolute path), after its checks.

    Args:
        command: the command.
        cwd: the working directory (resolved, inside ``roots``).
        roots: the jail's directories (resolved).
        allowed: the allow-list: program names, or absolute paths.
        search_path: where program names are looked up (``os.pathsep``-separated).

    Raises:
        CommandRejected: the program is not allowed, or an argument leads out of the jail.
    """
    program = command.argv[0]
    if "/" in program:
        target = resolve_in(program, cwd)
        if program in allowed or str(target) in allowed:
            executable = str(target)
        elif inside(target, roots):
            if not target.is_file() or not os.access(target, os.X_OK):
                raise CommandRejected(
                    f"'{program}' is not an executable file (run a script through an allowed "
                    "interpreter, e.g. python3 path/to/script.py)"
                )
            executable = str(target)
        else:
            raise CommandRejected(
                f"'{program}' is outside the allowed directories and not an allowed command"
            )
    else:
        if program not in allowed:
            raise CommandRejected(
                f"command '{program}' is not allowed (allowed: {', '.join(allowed) or 'none'})"
            )
        found = shutil.which(program, path=search_path)
        if found is None:
            raise CommandRejected(
                f"command '{program}' is allowed but not installed here (searched {search_path})"
            )
        executable = found
    for arg in command.argv[1:]:
        for value in _path_values(arg):
            if not _looks_like_path(value, cwd):
                continue
            if value.startswith("~"):
                raise CommandRejected(f"'{arg}': ~ is not expanded; use a path in the jail")
            target = resolve_in(value, cwd)
            if not inside(target, roots):
                raise CommandRejected(
                    f"'{arg}' leads outside the allowed directories ({target}); paths must "
                    "stay inside the working directory and the skills' directories"
                )
    return executable
