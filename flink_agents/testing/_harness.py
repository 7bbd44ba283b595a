"""How the kit watches an agent run without changing it: a view of the agent with two hooks.

:class:`AgentView` is an :class:`Agent` that presents another agent's actions, hooks,
interceptors and resources (the resources possibly replaced, e.g. by cassette wrappers)
and adds the kit's hooks around them:

- ``before_agent`` (first of all): the kit feeds each input as :class:`Fed` (its position
  and key travel with it, so the key selector and the capture need nothing from the user);
  the hook hands the agent the plain value and remembers the position for the run;
- ``after_agent`` (last of all): replaces the run's outputs with one :class:`RunCapture`:
  the key, the input's position, the outputs and the key's short-term memory after the run.

So every run yields exactly one record through the job's (exactly-once) sink, and outputs,
per-key order and memory can be checked from what was committed. The hooks are module-level
functions (plans reference hooks by name) and need no configuration: what they need travels
in the input record. In the worker they also route log records to the run's log directory
(see :func:`capture_worker_logs`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flink_agents.api.agents.agent import (
    ActionDefinition,
    Agent,
    HookDefinition,
    InterceptorDefinition,
)
from flink_agents.api.hooks import HookContext, HookPoint
from flink_agents.api.resource import ResourceType

#: Names of the kit's hooks in the plan (unlikely to clash with a user's).
BEFORE_HOOK = "__flink_agents_testing_feed__"
AFTER_HOOK = "__flink_agents_testing_capture__"
#: Attribute of the run's memory object holding the input's position between the hooks
#: (both hooks of a run get the same memory object).
_SEQ_ATTR = "_flink_agents_testing_seq"


#: Maps an agent's resources (by type and name) to the ones to use.
ResourceMapper = Callable[[dict[ResourceType, dict[str, Any]]], dict[ResourceType, dict[str, Any]]]


@dataclass(frozen=True)
class Fed:
    """An input as the kit feeds it.

    Attributes:
        seq: the input's position in the list given to ``run_agent`` (from 0).
        key: its key.
        value: the input itself (what the agent sees).
        log_dir: where the worker writes its log records (None: not captured).
    """

    seq: int
    key: Any
    value: Any
    log_dir: str | None = None


@dataclass(frozen=True)
class RunCapture:
    """What one run produced, as the kit's ``after_agent`` hook captured it.

    Attributes:
        key: the input's key.
        seq: the input's position (None when the input did not come from the kit).
        outputs: the run's outputs, in order.
        memory: the key's short-term memory after the run (nested dicts).
    """

    key: Any
    seq: int | None
    outputs: list[Any] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)


def fed_key(fed: Any) -> Any:
    """The key selector of kit-fed inputs."""
    return fed.key if isinstance(fed, Fed) else getattr(fed, "key", None)


def feed_hook(hc: HookContext) -> None:
    """``before_agent``: unwrap a :class:`Fed` input, remember its position."""
    fed = hc.input
    if not isinstance(fed, Fed):
        return
    if fed.log_dir:
        capture_worker_logs(fed.log_dir)
    hc.input = fed.value
    try:
        setattr(hc.memory, _SEQ_ATTR, fed.seq)
    except AttributeError:  # a memory object without a __dict__: the position is unknown
        pass


def capture_hook(hc: HookContext) -> None:
    """``after_agent``: the run's outputs become one :class:`RunCapture`."""
    seq = getattr(hc.memory, _SEQ_ATTR, None)
    capture = RunCapture(
        key=hc.key, seq=seq, outputs=list(hc.outputs), memory=hc.memory.get_fields()
    )
    hc.outputs[:] = [capture]


class AgentView(Agent):
    """An agent seen through the kit: ``inner``'s definitions, resources changed by
    ``resources`` (a function of the resource dict), the kit's hooks added with ``capture``.

    Args:
        inner: the user's agent.
        resources: maps the inner agent's resources (by type and name) to the ones to use.
        capture: add the kit's ``before_agent`` / ``after_agent`` hooks.
    """

    def __init__(
        self,
        inner: Agent,
        *,
        resources: Callable[
            [dict[ResourceType, dict[str, Any]]], dict[ResourceType, dict[str, Any]]
        ]
        | None = None,
        capture: bool = False,
    ) -> None:
        if isinstance(inner, AgentView):
            raise TypeError("this agent is already wrapped by the testing kit")
        if not isinstance(inner, Agent):
            raise TypeError(f"expected an Agent, got {type(inner).__name__}")
        self.inner = inner
        self._map_resources = resources
        self._capture = capture
        self.name = inner.name if isinstance(inner.name, str) else None
        self.description = inner.description if isinstance(inner.description, str) else None

    @property
    def actions(self) -> dict[str, ActionDefinition]:
        return self.inner.actions

    @property
    def interceptors(self) -> list[InterceptorDefinition]:
        return self.inner.interceptors

    @property
    def hooks(self) -> dict[str, HookDefinition]:
        hooks = self.inner.hooks
        if not self._capture:
            return hooks
        before = HookDefinition(BEFORE_HOOK, HookPoint.BEFORE_AGENT.value, feed_hook)
        after = HookDefinition(AFTER_HOOK, HookPoint.AFTER_AGENT.value, capture_hook)
        return {BEFORE_HOOK: before, **hooks, AFTER_HOOK: after}

    @property
    def resources(self) -> dict[ResourceType, dict[str, Any]]:
        found = self.inner.resources
        return self._map_resources(found) if self._map_resources is not None else found

    @property
    def declaration_problems(self) -> list[str]:
        return self.inner.declaration_problems


# --- worker logs ------------------------------------------------------------------------------

_LOG_LOCK = threading.Lock()
#: The directory this process logs to and its handler (one at a time: a Flink worker that
#: outlives a job, as thread mode's interpreter in a MiniCluster does, moves to the next).
_LOG_TARGET: list[Any] = [None, None]
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def capture_worker_logs(log_dir: str) -> None:
    """Send this process's log records of level INFO and up (``flink_agents``' INFO too)
    to ``<log_dir>/worker-<pid>.log``: a Flink worker's logs are otherwise out of the
    test's reach. Called by the kit's hook in the worker, once per run directory."""
    if _LOG_TARGET[0] == log_dir:
        return
    with _LOG_LOCK:
        if _LOG_TARGET[0] == log_dir:
            return
        os.makedirs(log_dir, exist_ok=True)
        handler = logging.FileHandler(
            os.path.join(log_dir, f"worker-{os.getpid()}.log"), encoding="utf-8"
        )
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        handler.setLevel(logging.INFO)
        root = logging.getLogger()
        previous = _LOG_TARGET[1]
        if previous is not None:
            root.removeHandler(previous)
            previous.close()
        root.addHandler(handler)
        ours = logging.getLogger("flink_agents")
        if ours.getEffectiveLevel() > logging.INFO:
            ours.setLevel(logging.INFO)
        _LOG_TARGET[:] = [log_dir, handler]
