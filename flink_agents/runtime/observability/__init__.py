"""What a run did, for metrics and the event log: the core's one observer seam.

:class:`RunObserver` has a no-op method per thing the run loop (``runtime/core/``) reports:
a run starting and ending, events sent, an action execution, a durable call (model, tool or
other), each as one immutable record (:class:`EventsSent`, :class:`ActionFinished`,
:class:`CallFinished`, :class:`RunFinished`). They are named tuples, not frozen dataclasses:
a frozen dataclass sets each field through ``object.__setattr__`` (3.0 vs 0.65 us per record
in a loop), and the loop makes one per run, action and call (see docs/ARCHITECTURE.md,
section 7, for what the records cost per run). The core holds one observer or None; with None
(metrics and the event log both off) the loop pays one ``is not None`` test per step.
:class:`Observers` fans out to several. Observer methods run on the thread that runs the
action (the loop or the operator thread, never two at once for one runner) and must not
raise; the core does not guard them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from flink_agents.api.events.event import Event


class RunInfo:
    """One run as observers see it.

    Attributes:
        key: the input's key.
        run_id: a unique id of the run (hex).
        started: ``time.time()`` at the start.
        started_perf: ``time.perf_counter()`` at the start (durations).
        data: per-observer scratch space, by observer.
    """

    __slots__ = ("data", "key", "run_id", "started", "started_perf")

    def __init__(self, key: Any, run_id: str, started: float, started_perf: float) -> None:
        self.key = key
        self.run_id = run_id
        self.started = started
        self.started_perf = started_perf
        self.data: dict[int, Any] = {}

    def wall_time(self, perf: float) -> float:
        """The ``time.time()`` of a ``time.perf_counter()`` value taken during the run."""
        return self.started + (perf - self.started_perf)


class RunCounts:
    """What the run loop always counts (plain integers, read by the built-in metrics).

    Attributes:
        runs, runs_failed, in_flight: runs ended, failed, and in progress.
        events: events taken from runs' queues (processed).
        by_action: executions per action name (one-item lists, so the loop keeps a cell).
        failed, retried, ignored: action failures by how they ended.
        rejected: input records that could not become an input event.
        dead_letters: runs set aside (``dead-letter`` strategy, rejected inputs).
        over_limit: runs stopped by ``max-events-per-run`` / ``max-action-time-per-run``.
    """

    __slots__ = (
        "by_action",
        "dead_letters",
        "events",
        "failed",
        "ignored",
        "in_flight",
        "over_limit",
        "rejected",
        "retried",
        "runs",
        "runs_failed",
    )

    def __init__(self) -> None:
        self.runs = self.runs_failed = self.in_flight = self.events = 0
        self.failed = self.retried = self.ignored = 0
        self.rejected = self.dead_letters = self.over_limit = 0
        self.by_action: dict[str, list[int]] = {}

    @property
    def actions(self) -> int:
        """Action executions, all actions."""
        return sum(cell[0] for cell in self.by_action.values())


class EventsSent(NamedTuple):
    """``events`` were sent by ``action`` handling ``parent`` (the input event: both None).

    Attributes:
        run: the run.
        events: the events, in the order sent.
        parent: the event the action handled (None for the input event).
        action: the action's name (None for the input event).
    """

    run: RunInfo
    events: Sequence[Event]
    parent: Event | None
    action: str | None


class ActionFinished(NamedTuple):
    """An action execution on ``event`` ended.

    Attributes:
        run: the run.
        action: the action's name.
        event: the event it handled.
        started: ``time.perf_counter()`` at its start (:meth:`RunInfo.wall_time` turns it
            into wall-clock time).
        seconds: how long it took (retries included).
        error: what it raised (the first failure when it was retried or ignored).
        outcome: None on success, else ``"retried"``, ``"ignored"`` or ``"failed"``.
    """

    run: RunInfo
    action: str
    event: Event
    started: float
    seconds: float
    error: BaseException | None
    outcome: str | None


class CallFinished(NamedTuple):
    """A durable call ended.

    Attributes:
        run: the run.
        action: the action that made it.
        kind: ``"model"``, ``"tool"`` or ``"call"`` (see :func:`call_target`).
        name: the chat model resource, the tool, or the function's signature.
        started: ``time.perf_counter()`` at its start.
        seconds: how long it took (0 when replayed).
        result: what it returned.
        error: what it raised.
        replayed: answered from the durable log (after a restore), not called.
    """

    run: RunInfo
    action: str
    kind: str
    name: str
    started: float
    seconds: float
    result: Any
    error: BaseException | None
    replayed: bool


class RunFinished(NamedTuple):
    """A run ended.

    Attributes:
        run: the run.
        seconds: how long it took.
        error: what failed it (None when it ended normally or paused).
    """

    run: RunInfo
    seconds: float
    error: BaseException | None


class RunObserver:
    """Hooks of the run loop; every method is a no-op here (override what you need).

    Each hook takes one immutable record (:class:`EventsSent`, :class:`ActionFinished`,
    :class:`CallFinished`, :class:`RunFinished`; a run's start: its :class:`RunInfo`), so a
    field added to what the loop reports touches one definition.

    Attributes:
        observes_steps: whether :meth:`events_sent` and :meth:`action_finished` are wanted
            (the loop skips them, per event and action, when no observer wants them).
    """

    observes_steps = True

    def run_started(self, run: RunInfo) -> None:
        """A run started (before its input event)."""

    def events_sent(self, sent: EventsSent) -> None:
        """Events were sent (see :class:`EventsSent`)."""

    def action_finished(self, finished: ActionFinished) -> None:
        """An action execution ended (see :class:`ActionFinished`)."""

    def call_finished(self, call: CallFinished) -> None:
        """A durable call ended (see :class:`CallFinished`)."""

    def run_finished(self, finished: RunFinished) -> None:
        """A run ended (see :class:`RunFinished`)."""


_HOOKS = ("run_started", "events_sent", "action_finished", "call_finished", "run_finished")


class Observers(RunObserver):
    """Several observers as one, called in order."""

    def __init__(self, observers: Sequence[RunObserver]) -> None:
        self.observers = list(observers)
        self.observes_steps = any(o.observes_steps for o in self.observers)
        for name in _HOOKS:
            # Only the observers that do something (a call per observer, event and action
            # is measurable on the hot path).
            base = getattr(RunObserver, name)
            hooks = [getattr(o, name) for o in self.observers if getattr(type(o), name) is not base]
            if len(hooks) == 1:  # the one observer's method itself: no call in between
                setattr(self, name, hooks[0])
            else:
                setattr(self, name, functools.partial(_fan_out, tuple(hooks)))


def _fan_out(hooks: tuple[Callable[[Any], None], ...], record: Any) -> None:
    for hook in hooks:
        hook(record)


def combine(observers: Sequence[RunObserver | None]) -> RunObserver | None:
    """One observer for the given ones (None entries skipped): None, the one, or a fan-out."""
    present = [o for o in observers if o is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else Observers(present)


def call_target(func: Any, signature: str, resources: Any) -> tuple[str, str]:
    """``(kind, name)`` of a durable call: ``("model", resource name)`` for a chat model
    setup's method, ``("tool", tool name)`` for a tool's, else ``("call", signature)``."""
    from flink_agents.api.chat_models.chat_model import BaseChatModelSetup
    from flink_agents.api.tools.tool import Tool

    owner = getattr(func, "__self__", None)
    if isinstance(owner, BaseChatModelSetup):
        name = resources.name_of(owner) if resources is not None else None
        return "model", name or owner.model
    if isinstance(owner, Tool):
        return "tool", owner.name
    return "call", signature
