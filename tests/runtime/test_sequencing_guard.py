"""Only the per-key protocol (``runtime/sequencing.py``) decides sequencing; the hosts
execute its decisions. These checks read the hosts' source (``runtime/local``,
``runtime/flink``) and fail on what re-deciding would take:

- a queue of inputs of their own (``collections.deque``), or an attribute named like the
  per-key fields the protocol replaced (``queue``, ``halted``, ``unplaced``, ``early``...);
- a look at the protocol's private state (a private name of ``KeySequencer.__slots__`` on
  anything but ``self``);
- matching approval responses themselves (a comparison of a ``request_id``, or a call of
  the helpers the protocol uses for it: ``response_problem``, ``expired_response``,
  ``decision_call_id``, ``PausedRun``);
- a decision type of the protocol that a host does not handle (a new outcome, say a dead
  letter, must get a branch in each host).

Each rule is shown to catch a planted violation.
"""

from __future__ import annotations

import ast
import pathlib
import typing

import pytest

from flink_agents.runtime import sequencing

PACKAGE = pathlib.Path(sequencing.__file__).parent
HOSTS = sorted([*PACKAGE.glob("local/*.py"), *PACKAGE.glob("flink/*.py")])
#: The host modules that drive the protocol (each must handle every decision).
DRIVERS = [PACKAGE / "local" / "runner.py", PACKAGE / "flink" / "function.py"]

#: Per-key fields the Flink host's KeyWork and the local runner had before the protocol.
RETIRED = {"queue", "results", "running", "failed", "halted", "unplaced", "early", "restored"}
PRIVATE = {name for name in sequencing.KeySequencer.__slots__ if name.startswith("_")}
MATCHING = {"response_problem", "expired_response", "decision_call_id", "PausedRun"}
DECISIONS = set(typing.get_args(sequencing.Decision))


def violations(source: str) -> list[str]:
    """What in ``source`` (a host module) re-decides sequencing."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "collections":
            found += [f"imports {a.name}" for a in node.names if a.name == "deque"]
        elif isinstance(node, ast.Attribute):
            if node.attr == "deque":
                found.append("uses collections.deque")
            elif node.attr in RETIRED or (
                node.attr.lstrip("_") in RETIRED and not _is_self(node.value)
            ):
                found.append(f"has a per-key field .{node.attr}")
            elif node.attr in PRIVATE and not _is_self(node.value):
                found.append(f"reads the protocol's .{node.attr}")
        elif isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Attribute) and side.attr == "request_id":
                    found.append("compares a request_id")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "of":
                func = func.value  # PausedRun.of(...)
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in MATCHING:
                found.append(f"calls {name}")
    return found


def _is_self(node: ast.expr) -> bool:
    """``self`` or ``cls``: a host's own attribute, whatever its name."""
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


@pytest.mark.parametrize("path", HOSTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_hosts_do_not_decide_sequencing(path: pathlib.Path) -> None:
    assert violations(path.read_text()) == []


@pytest.mark.parametrize("path", DRIVERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_host_handles_every_decision(path: pathlib.Path) -> None:
    names = {
        node.id for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Name)
    }
    assert {d.__name__ for d in DECISIONS} - names == set()


@pytest.mark.parametrize(
    ("planted", "caught"),
    [
        ("from collections import deque", "imports deque"),
        ("import collections\nq = collections.deque()", "uses collections.deque"),
        ("work.queue.append(item)", "has a per-key field .queue"),
        ("if work.halted:\n    pass", "has a per-key field .halted"),
        ("work._unplaced += 1", "has a per-key field ._unplaced"),
        ("self.unplaced = 0", "has a per-key field .unplaced"),
        ("if work.seq._mode == 'paused':\n    pass", "reads the protocol's ._mode"),
        ("item = seq._runnable.popleft()", "reads the protocol's ._runnable"),
        ("work.seq._approval.held.append(item)", "reads the protocol's ._approval"),
        ("ok = request.request_id == response.request_id", "compares a request_id"),
        ("problem = response_problem(None, key, response)", "calls response_problem"),
        ("resume = approval.expired_response(request)", "calls expired_response"),
        ("paused = PausedRun.of(item, log, result)", "calls PausedRun"),
    ],
)
def test_the_check_catches_a_planted_violation(planted: str, caught: str) -> None:
    assert caught in violations(planted)


def test_a_host_missing_a_decision_is_caught() -> None:
    """A decision type added to the protocol and not handled by a host fails the test
    above: its name is missing from the host's source."""
    source = (PACKAGE / "flink" / "function.py").read_text().replace("SaveDecision", "Other")
    names = {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}
    assert {d.__name__ for d in DECISIONS} - names == {"SaveDecision"}
