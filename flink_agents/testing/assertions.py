"""Assertions for agent runs: per-key order, exactly-once, no repeated call, memory, secrets.

They take the :class:`~flink_agents.testing.run.AgentRun` of ``run_agent`` and raise
``AssertionError`` with a message that says what differs (and, for secrets, where; never
the secret itself)::

    run = run_agent(agent, inputs, key="id", mode="thread", fail_after=5)
    assert_exactly_once(run)
    assert_per_key_order(run)
    assert_no_repeated_calls(run)
    assert_memory(run, "r1", {"id": "r1"})
    assert_secret_absent("sk-live-...", run)
"""

from __future__ import annotations

import json
import os
import pprint
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from flink_agents.testing.run import AgentRun

__all__ = [
    "assert_exactly_once",
    "assert_memory",
    "assert_no_repeated_calls",
    "assert_per_key_order",
    "assert_secret_absent",
]

_MISSING = object()


def assert_per_key_order(run: AgentRun) -> None:
    """Each key's runs were committed in the order of its inputs (semantics 1 of the
    design: one input of a key at a time, in arrival order)."""
    by_key: dict[Any, list[int]] = defaultdict(list)
    for capture in run.captures:
        if capture.seq is not None:
            by_key[capture.key].append(capture.seq)
    wrong = {key: seqs for key, seqs in by_key.items() if seqs != sorted(seqs)}
    if wrong:
        raise AssertionError(
            "runs of a key were committed out of input order (input positions in commit "
            f"order): {_short(wrong)}"
        )


def assert_exactly_once(run: AgentRun, expected: Mapping[Any, list[Any]] | None = None) -> None:
    """Every input was run and committed exactly once: none lost, none repeated (after a
    failure and restart too); with ``expected``, the outputs per key equal it.

    Args:
        run: the run.
        expected: the outputs of each key in input order (``run.outputs`` must equal it).
    """
    seqs = Counter(c.seq for c in run.captures if c.seq is not None)
    fed = [i for i, value in enumerate(run.inputs) if not _is_approval(value)]
    missing = [i for i in fed if seqs[i] == 0]
    repeated = {i: n for i, n in seqs.items() if n > 1}
    problems = []
    if missing:
        problems.append(
            f"{len(missing)} input(s) lost (no committed run): positions {missing[:20]}"
        )
    if repeated:
        problems.append(f"input(s) committed more than once (position: times): {repeated}")
    if expected is not None:
        actual = run.outputs
        expected = dict(expected)
        if actual != expected:
            differing = {
                key: {"expected": expected.get(key, _MISSING), "actual": actual.get(key, _MISSING)}
                for key in dict.fromkeys([*expected, *actual])
                if expected.get(key, _MISSING) != actual.get(key, _MISSING)
            }
            problems.append(f"outputs differ for {len(differing)} key(s): {_short(differing)}")
    if problems:
        raise AssertionError("; ".join(problems))


def assert_no_repeated_calls(run: AgentRun, kind: str | None = "model") -> None:
    """No model call (``kind="tool"``: tool call, ``"call"``: other durable call; None:
    any) was really made twice for the same input: calls a restart answered from Flink
    state are ``replayed`` in the event log and do not count. Two equal inputs of one key
    may each make their calls once.
    """
    records = run.event_log.records
    identity: dict[str, tuple[str, str]] = {}
    for r in records:
        if r.get("record") == "event" and r.get("eventType") == "_input_event":
            payload = (r.get("payload") or {}).get("input")
            identity[r["runId"]] = (_text(r.get("key")), _canonical(payload))
    allowed = Counter(
        (_text(k), _canonical(json.loads(to_json(v, fallback=str))))
        for k, v in zip(run.keys, run.inputs, strict=True)
    )
    ordinals: Counter[tuple[Any, ...]] = Counter()
    made: Counter[tuple[Any, ...]] = Counter()
    for r in records:
        if r.get("record") != "call" or (kind is not None and r.get("kind") != kind):
            continue
        run_id, name = r.get("runId"), r.get("name")
        ordinal = ordinals[(run_id, r.get("kind"), name)]
        ordinals[(run_id, r.get("kind"), name)] += 1
        if r.get("replayed"):
            continue
        key, payload = identity.get(str(run_id), (_text(r.get("key")), f"<run {run_id}>"))
        made[(key, payload, r.get("kind"), name, ordinal)] += 1
    repeated = {
        call: times
        for call, times in made.items()
        if times > max(1, allowed.get((call[0], call[1]), 1))
    }
    if repeated:
        lines = [
            f"key {key}, {call_kind} {name!r} (call {ordinal + 1} of its run) made {times} "
            f"times for input {payload[:120]}"
            for (key, payload, call_kind, name, ordinal), times in repeated.items()
        ]
        raise AssertionError("calls made again for the same input:\n" + "\n".join(lines[:20]))


def assert_memory(
    run: AgentRun, key: Any, expected: Mapping[str, Any], *, exact: bool = False
) -> None:
    """The short-term memory of ``key`` after the run holds ``expected``.

    Args:
        run: the run.
        key: the key.
        expected: values by path (``{"stats.count": 3, "id": "r1"}``); nested dicts compare
            as wholes.
        exact: the whole memory equals ``expected`` (nested, paths not allowed).
    """
    memory = run.memory.get(key, _MISSING)
    if memory is _MISSING:
        raise AssertionError(f"no committed run of key {key!r} (keys: {_short(list(run.memory))})")
    assert isinstance(memory, dict)
    if exact:
        if memory != dict(expected):
            raise AssertionError(
                f"memory of key {key!r} differs:\nexpected {_short(dict(expected))}\n"
                f"actual   {_short(memory)}"
            )
        return
    wrong = {}
    for path, want in expected.items():
        got = _at(memory, path)
        if got != want:
            wrong[path] = {"expected": want, "actual": "<missing>" if got is _MISSING else got}
    if wrong:
        raise AssertionError(f"memory of key {key!r} differs at {_short(wrong)}")


def assert_secret_absent(secret: str, *where: Any) -> None:
    """``secret`` appears nowhere in ``where``: an :class:`AgentRun` (its plan JSON,
    outputs, memory, log lines and event log), text, a file or a directory (every file
    under it), or any object (by its ``repr`` and JSON form).

    The message names where it was found, with the secret masked.
    """
    if not isinstance(secret, str) or len(secret) < 4:
        raise ValueError("secret must be a string of at least 4 characters")
    found: list[str] = []
    for item in where:
        for name, text in _texts(item):
            at = text.find(secret)
            if at >= 0:
                context = text[max(0, at - 60) : at + len(secret) + 60].replace(secret, "***")
                found.append(f"{name}: ...{context}...")
    if found:
        hint = f"{secret[:3]}... ({len(secret)} characters)"
        raise AssertionError(f"the secret {hint} appears in:\n" + "\n".join(found[:20]))


# --- helpers ------------------------------------------------------------------------------------


def _texts(item: Any) -> list[tuple[str, str]]:
    if isinstance(item, AgentRun):
        outputs = [
            (f"output of key {k!r}", _any_text(o)) for k, v in item.outputs.items() for o in v
        ]
        return [
            ("plan JSON", item.plan_json),
            *outputs,
            ("memory", _any_text(item.memory)),
            ("logs", item.log_text),
            ("event log", item.event_log.text()),
        ]
    if isinstance(item, str):
        return [("text", item)]
    if isinstance(item, (Path, os.PathLike)):
        path = Path(item)
        files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
        return [(str(p), p.read_text(encoding="utf-8", errors="replace")) for p in files]
    return [(type(item).__name__, _any_text(item))]


def _any_text(value: Any) -> str:
    try:
        as_json = to_json(value, fallback=str).decode()
    except Exception:  # noqa: BLE001 - repr below says enough
        as_json = ""
    return f"{value!r}\n{as_json}"


def _at(memory: Mapping[str, Any], path: str) -> Any:
    node: Any = memory
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _text(key: Any) -> str:
    return str(key)


def _is_approval(value: Any) -> bool:
    from flink_agents.api.approval import ApprovalResponse

    return isinstance(value, ApprovalResponse)


def _short(value: Any, limit: int = 2000) -> str:
    text = pprint.pformat(value, width=100, compact=True)
    return text if len(text) <= limit else text[:limit] + " ..."
