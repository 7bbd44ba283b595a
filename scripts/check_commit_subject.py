"""Reject a commit whose subject line is longer than 72 characters (a ``commit-msg`` hook).

Installed by ``pre-commit install`` (``.pre-commit-config.yaml`` installs the commit-msg
hook type too); git passes the message file. The subject is the first line that is not
blank and not a comment (``#``, what git strips); everything below git's scissors line
(``git commit -v``) is ignored, and so are the body and the trailers, whatever their length.
Subjects that git writes itself (``Merge ...``, ``Revert "..."``) and the prefixes of
``git commit --fixup`` / ``--squash`` (``fixup! ``...) are not counted against the limit.

Usage::

    python scripts/check_commit_subject.py .git/COMMIT_EDITMSG
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The longest subject accepted, in characters.
LIMIT = 72
_SCISSORS = "# ------------------------ >8 ------------------------"
_AUTOSQUASH = ("fixup! ", "squash! ", "amend! ")
_GENERATED = ("Merge ", 'Revert "')


def subject(message: str) -> str | None:
    """The subject line of a commit message (None when the message is empty)."""
    for line in message.splitlines():
        if line.startswith(_SCISSORS):
            break
        if line.startswith("#") or not line.strip():
            continue
        return line.rstrip()
    return None


def problem(message: str, limit: int = LIMIT) -> str | None:
    """Why the message's subject is refused, or None when it is fine."""
    line = subject(message)
    if line is None or line.startswith(_GENERATED):
        return None  # an empty message: git aborts the commit itself
    counted = line
    while counted.startswith(_AUTOSQUASH):
        counted = counted.split(" ", 1)[1]
    if len(counted) <= limit:
        return None
    return (
        f"the commit subject has {len(counted)} characters; at most {limit}:\n"
        f"  {counted}\n  past the limit: {counted[limit:]!r}\n"
        "Say what changed in one short line and put details, figures and reasons in the body "
        "(after a blank line). The message is kept in .git/COMMIT_EDITMSG: "
        "`git commit -e -F .git/COMMIT_EDITMSG` edits it again."
    )


def main(argv: list[str] | None = None) -> int:
    """Check the message file given as the first argument; exit code 1 when refused."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: check_commit_subject.py COMMIT_MESSAGE_FILE", file=sys.stderr)
        return 2
    found = problem(Path(args[0]).read_text(encoding="utf-8", errors="replace"))
    if found:
        print(found, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
