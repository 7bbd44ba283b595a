"""How a run ends that cannot go on: dead letters, and the description of a runaway run.

Private to the core (``runner.py`` applies the error strategy): a failure under the
``dead-letter`` strategy travels up the loop as :class:`DeadLettered` and ends the run with
a :class:`~flink_agents.api.dead_letter.DeadLetter`; a run past ``max-events-per-run`` is
described by the cycle its last events form (:func:`describe_cycle`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from flink_agents.api.dead_letter import DeadLetter, bounded, safe_repr
from flink_agents.secrets import registered_masker

#: Events of a run whose edges (event type -> action -> sent types) are kept before its
#: limit: enough to show a cycle, nothing kept before (no cost while a run is short).
CYCLE_WINDOW = 64


class DeadLettered(Exception):
    """A failure under the ``dead-letter`` strategy, on its way from the failing action to
    the end of the run.

    Attributes:
        error: the failure (an ActionError, or the RuntimeFailure the action raised).
        action: the action that failed.
        event_type: the type of the event it handled.
    """

    def __init__(self, error: BaseException, action: str | None, event_type: str | None):
        super().__init__(str(error))
        self.error = error
        self.action = action
        self.event_type = event_type


def _jsonable(key: Any) -> Any:
    return key if isinstance(key, (str, int, float, bool, type(None))) else repr(key)


def dead_letter(
    key: Any,
    value: Any,
    error: BaseException,
    *,
    action: str | None,
    event_type: str | None,
    max_chars: int,
) -> DeadLetter:
    """The dead letter of a failed run: the key, the reason and the record's repr, masked
    and bounded."""
    masker = registered_masker()
    reason = masker.mask(f"{type(error).__name__}: {error}")
    return DeadLetter(
        key=_jsonable(key) if not isinstance(key, str) else masker.mask(key),
        reason=bounded(reason, max_chars),
        record=bounded(masker.mask(safe_repr(value, max_chars * 2)), max_chars),
        error_type=type(error).__name__,
        action=action,
        event_type=event_type,
    )


def describe_cycle(
    edges: Sequence[tuple[str, str, list[str]]],
    queued: Iterable[str],
    listeners: Mapping[str, Sequence[str]] | None = None,
) -> tuple[str, list[str]]:
    """``(text, event types)`` of what a runaway run's last events did: the cycle of event
    types through the actions that send them (``ping -> [bounce] -> pong -> [back] ->
    ping``), else the most frequent types and the actions listening to them. ``edges``:
    ``(event type, action, types it sent)`` of the last events; ``queued``: the type being
    handled and those still queued; ``listeners``: action names by event type."""
    counts = Counter(etype for etype, _, _ in edges)
    counts.update(queued)
    by_type: dict[str, list[tuple[str, str]]] = {}
    for etype, action, sent in edges:
        for target in sent:
            pair = (action, target)
            if pair not in by_type.setdefault(etype, []):
                by_type[etype].append(pair)
    cycle = _find_cycle(by_type, [t for t, _ in counts.most_common()])
    types = [t for t, _ in counts.most_common()]
    listeners = listeners or {}

    def described(etype: str, n: int) -> str:
        actions = listeners.get(etype)
        return f"{etype} ({n}, actions {'/'.join(actions)})" if actions else f"{etype} ({n})"

    shown = ", ".join(described(t, n) for t, n in counts.most_common(5))
    if cycle:
        # Shown from its first type by name, so the same cycle reads the same every time.
        steps = cycle
        first = min(range(len(steps)), key=lambda i: steps[i][0])
        cycle = steps[first:] + steps[:first]
        path = " -> ".join(f"{etype} -> [{action}]" for etype, action in cycle)
        types = list(dict.fromkeys(etype for etype, _ in cycle))
        text = f"its actions keep sending each other events: {path} -> {cycle[0][0]}"
        return f"{text} (last events: {shown})", types
    return f"the last events were of types {shown}", types


def _find_cycle(
    graph: dict[str, list[tuple[str, str]]], starts: list[str]
) -> list[tuple[str, str]] | None:
    """A cycle of ``(event type, action)`` steps in ``graph``, found from the most frequent
    types first (depth-first, each type visited once per start)."""
    for start in starts:
        found = _cycle_from(graph, start, [], {}, set())
        if found:
            return found
    return None


def _cycle_from(
    graph: dict[str, list[tuple[str, str]]],
    node: str,
    path: list[tuple[str, str]],
    on_path: dict[str, int],
    done: set[str],
) -> list[tuple[str, str]] | None:
    on_path[node] = len(path)
    for action, target in graph.get(node, []):
        path.append((node, action))
        if target in on_path:
            return path[on_path[target] :]
        if target not in done:
            found = _cycle_from(graph, target, path, on_path, done)
            if found:
                return found
        path.pop()
    del on_path[node]
    done.add(node)
    return None
