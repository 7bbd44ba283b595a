"""Sub-agents at run time: a sub-agent runs inside its caller's run.

``ctx.call_agent(name, input)`` (and the built-in tool action, for an ``AgentTool`` a model
calls) runs the sub-agent's plan section (``plan/subagents.py``) in the caller's run:

- **a runner per section** (:class:`SubagentRunner`, made on first call, one per slot): the
  run loop of :class:`AgentRunner` over the section's actions, sharing the slot's thread
  pool, long-term memory and listeners; its resources are the section's own, the others
  come from the plans around it (:class:`ScopedResourceCache`); its metrics are counted in
  the group ``subagent`` = its name under its parent's;
- **a run per call** (:class:`SubRun`): the same key; short-term memory in a namespace of
  the caller's (``@<name>.`` paths, which the caller's ``get_fields`` does not list),
  merged into the caller's memory when the call succeeds; sensory memory of its own; its
  durable calls numbered under a call id the caller takes (``"4"`` -> ``"4.1"``, ``"4.2"``,
  ...), so a replay finds them whatever else the caller does, and recorded in the caller's
  log (the host commits them with the input);
- **one run for the observers**: its steps, calls and events go to the caller's observers
  (the event log) with the action names qualified (``researcher/chat_model_action``); its
  input event with the event the calling action handles as its parent;
- **depth**: a call deeper than ``max-subagent-depth`` raises :class:`SubagentDepthError`;
  an approval pause inside it pauses the whole run (``RunPaused`` goes through), and the
  resumed run replays down to it.

A plan without sub-agents never reaches this module: nothing of it is on the hot path.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from flink_agents.api.core_options import AgentConfigOptions
from flink_agents.api.events.event import Event
from flink_agents.api.resource import ResourceType
from flink_agents.api.timeouts import bounded
from flink_agents.api.tools.agent_tool import AgentTool
from flink_agents.errors import ResourceError, SubagentDepthError, SubagentError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.plan.subagents import section_at
from flink_agents.runtime.core.context import _Run
from flink_agents.runtime.core.records import RunPaused
from flink_agents.runtime.core.runner import AgentRunner
from flink_agents.runtime.memory import MemoryStore
from flink_agents.runtime.observability import (
    ActionFinished,
    CallFinished,
    EventsSent,
    Observers,
    RunFinished,
    RunInfo,
    RunObserver,
    combine,
)
from flink_agents.runtime.observability.agent_metrics import AgentMetrics
from flink_agents.runtime.resources import ResourceCache

if TYPE_CHECKING:
    from flink_agents.runtime.core.context import RunContext

#: A sub-agent's short-term memory lives under ``@<name>.`` in its caller's memory (a path
#: segment no object marks, so the caller's ``get_fields`` does not list it).
MEMORY_PREFIX = "@"


class ScopedResourceCache(ResourceCache):
    """The resources of a section: its own, created and closed here; the others those of
    the enclosing plan's cache (shared, never closed here)."""

    def __init__(self, plan: AgentPlan, parent: ResourceCache) -> None:
        super().__init__(plan)
        self.parent = parent
        self._borrowed: set[tuple[ResourceType, str]] = set()

    def declares(self, name: str, rtype: ResourceType) -> bool:
        """Whether this section declares resource ``name`` of type ``rtype`` (a tool may
        be one of its sub-agents)."""
        plan = self._plan
        if plan.get_resource_provider(name, rtype) is not None:
            return True
        return rtype is ResourceType.TOOL and (
            plan.get_resource_provider(name, ResourceType.AGENT) is not None
        )

    def get(self, name: str, rtype: ResourceType | str) -> Any:
        if type(rtype) is not ResourceType:
            rtype = ResourceType(rtype)
        key = (rtype, name)
        found = self._cache.get(key)
        if found is not None:
            return found
        if self.declares(name, rtype):
            return super().get(name, rtype)
        if rtype is ResourceType.TOOL and self._plan.resource_providers.get(
            ResourceType.MCP_SERVER
        ):
            try:  # a tool of one of the section's own MCP servers?
                return super().get(name, rtype)
            except ResourceError:
                pass
        found = self.parent.get(name, rtype)
        with self._lock:
            self._cache[key] = found
            self._borrowed.add(key)
        return found

    def close(self) -> None:
        with self._lock:
            for key in self._borrowed:
                self._cache.pop(key, None)
            self._borrowed.clear()
        super().close()


def declared(cache: ResourceCache, name: str, rtype: ResourceType) -> bool:
    """Whether ``cache``'s plan, or a plan around it, declares resource ``name``."""
    while True:
        if cache._plan.get_resource_provider(name, rtype) is not None:
            return True
        if not isinstance(cache, ScopedResourceCache):
            return False
        cache = cache.parent


class SubagentRunner(AgentRunner):
    """The run loop of one plan section, made by :func:`runner_for` (see the module
    docstring for what it shares with the root runner).

    Args:
        parent: the runner of the enclosing plan.
        path: the section's path (``"a"``, ``"a/b"``).
        plan: the section.
    """

    def __init__(self, parent: AgentRunner, path: str, plan: AgentPlan) -> None:
        super().__init__(plan, resources=ScopedResourceCache(plan, parent.resources))
        # The slot's pool, long-term memory and listeners are the root's.
        own_pool, self.executor = self.executor, parent.executor
        own_pool.shutdown(wait=False)
        self.long_term_memory = parent.long_term_memory
        self._listeners = parent._listeners
        self.parent = parent
        self.root: AgentRunner = parent.root if isinstance(parent, SubagentRunner) else parent
        self.path = path
        self.name = path.rpartition("/")[2]
        self.metrics = parent.metrics.get_sub_group("subagent", self.name)
        self.resources.metrics = self.metrics
        self.agent_metrics = (
            AgentMetrics(self.metrics, self.counts) if parent.agent_metrics is not None else None
        )
        self._observed: Any = _UNSET
        self.observer = None
        self.refresh_observer()

    def refresh_observer(self) -> None:
        """Follow the parent's observers (hosts add theirs after the runner was made): its
        metrics, and the parent's other observers seeing this section's steps and calls
        with qualified action names."""
        parent = self.parent
        if isinstance(parent, SubagentRunner):
            parent.refresh_observer()
        if parent.observer is self._observed:
            return
        self._observed = parent.observer
        others = _without(parent.observer, parent.agent_metrics)
        qualified = None if others is None else _Qualified(others, f"{self.name}/")
        self.observer = combine([self.agent_metrics, qualified])
        choose = getattr(self, "_choose_context", None)
        if choose is not None:  # a runner that picks its context class by its observers
            choose()

    def close(self) -> None:
        """Close the section's own resources (the pool and long-term memory are the
        root's)."""
        self.model_calls.clear()  # their setups are closed with the resources
        self.resources.close()


_UNSET = object()


def _without(observer: RunObserver | None, metrics: RunObserver | None) -> RunObserver | None:
    """``observer`` without ``metrics`` (the parent's own built-in metrics)."""
    if observer is None or observer is metrics:
        return None
    if isinstance(observer, Observers):
        return combine([o for o in observer.observers if o is not metrics])
    return observer


class _SubRunInfo(RunInfo):
    """The caller's run as a sub-agent's observers see it: the same run (its id, times and
    per-observer data), plus the event the calling action was handling."""

    __slots__ = ("caller_event",)

    def __init__(self, info: RunInfo, caller_event: Event) -> None:
        super().__init__(info.key, info.run_id, info.started, info.started_perf)
        self.data = info.data
        self.caller_event = caller_event


class _Qualified(RunObserver):
    """A sub-agent's steps and calls for its caller's observers: action names qualified
    with the sub-agent's name; its input event with the event the calling action handles
    as its parent (and no action: the calling action is still running, and its execution
    is described by the events it sends when it ends). Runs start and end with the
    caller's."""

    def __init__(self, inner: RunObserver, prefix: str) -> None:
        self.inner = inner
        self.prefix = prefix
        self.observes_steps = inner.observes_steps

    def events_sent(self, sent: EventsSent) -> None:
        run = sent.run
        if sent.action is None and isinstance(run, _SubRunInfo):
            # The sub-agent's input event: caused by the event the caller handles.
            self.inner.events_sent(EventsSent(run, sent.events, run.caller_event, None))
            return
        self.inner.events_sent(sent._replace(action=f"{self.prefix}{sent.action}"))

    def action_finished(self, finished: ActionFinished) -> None:
        self.inner.action_finished(finished._replace(action=f"{self.prefix}{finished.action}"))

    def call_finished(self, call: CallFinished) -> None:
        self.inner.call_finished(call._replace(action=f"{self.prefix}{call.action}"))


class SubRun(_Run):
    """One call of a sub-agent: the caller's key and durable log, call ids numbered under
    ``call_id``, short-term memory from the caller's ``@<name>.`` namespace."""

    def __init__(
        self,
        caller: _Run,
        runner: SubagentRunner,
        call_id: str,
        depth: int,
        caller_event: Event,
    ) -> None:
        prefix = f"{MEMORY_PREFIX}{runner.name}."
        snapshot = {
            path[len(prefix) :]: value
            for path, value in caller.short_term.snapshot().items()
            if path.startswith(prefix)
        }
        super().__init__(runner, caller.key, snapshot, None, None, caller.on_suspend)
        self.caller = caller
        self.memory_prefix = prefix
        self.durable = caller.durable
        self.call_prefix = f"{call_id}."
        self.depth = depth
        if caller.info is not None:
            self.info = _SubRunInfo(caller.info, caller_event)

    def next_call_id(self) -> str:
        self.call_seq += 1
        return f"{self.call_prefix}{self.call_seq}"

    def record(self, call_id: str, rec: Any) -> None:
        # Into the caller's log and result: the host commits them with the input.
        self.caller.record(call_id, rec)

    def merge_memory(self, updates: dict[str, Any], deletes: list[str]) -> None:
        """Apply the sub-agent's memory changes to the caller's memory."""
        store: MemoryStore = self.caller.short_term
        prefix = self.memory_prefix
        for path in deletes:
            full = prefix + path
            store.updates.pop(full, None)
            if full in store._base:
                store.deletes.add(full)
        for path, value in updates.items():
            store._put(prefix + path, value)


def runner_for(root: AgentRunner, path: str) -> SubagentRunner:
    """The runner of section ``path`` of ``root``'s plan (made on first use; the root
    closes it)."""
    runners: dict[str, SubagentRunner] | None = root.__dict__.get("_subagent_runners")
    if runners is None:
        runners = root.__dict__["_subagent_runners"] = {}
        root._closables.append(lambda: _close_all(runners))
    runner = runners.get(path)
    if runner is None:
        parent_path, _, _ = path.rpartition("/")
        parent = runner_for(root, parent_path) if parent_path else root
        runner = runners[path] = SubagentRunner(parent, path, section_at(root.plan, path))
    return runner


def _close_all(runners: dict[str, SubagentRunner]) -> None:
    for runner in reversed(list(runners.values())):
        runner.close()
    runners.clear()


def find_tool(caller: AgentRunner, name: str) -> AgentTool:
    """The sub-agent ``name`` as the caller's resources know it: an ``AGENT`` resource, else
    an ``AgentTool`` tool.

    Raises:
        SubagentError: no such sub-agent.
    """
    resources = caller.resources
    for rtype in (ResourceType.AGENT, ResourceType.TOOL):
        if declared(resources, name, rtype):
            found = resources.get(name, rtype)
            if isinstance(found, AgentTool):
                return found
    known = sorted(_known(resources))
    raise SubagentError(
        f"no sub-agent named {name!r} (sub-agents: {known or 'none'}); add one with "
        "add_resource(name, ResourceType.AGENT, agent) or as an AgentTool",
        subagent=name,
    )


def _known(cache: ResourceCache) -> set[str]:
    names: set[str] = set()
    while True:
        plan = cache._plan
        names.update(plan.resource_providers.get(ResourceType.AGENT, {}))
        names.update(
            n
            for n, p in plan.resource_providers.get(ResourceType.TOOL, {}).items()
            if p.clazz.endswith(".AgentTool")
        )
        if not isinstance(cache, ScopedResourceCache):
            return names
        cache = cache.parent


def _root_of(runner: AgentRunner) -> AgentRunner:
    return runner.root if isinstance(runner, SubagentRunner) else runner


async def call_agent(ctx: RunContext, name: str | AgentTool, value: Any) -> Any:
    """Run sub-agent ``name`` (or the ``AgentTool`` itself) on ``value`` inside ``ctx``'s
    run; its output (one as it is, several as a list, none: None).

    Raises:
        SubagentError: it failed, or there is no such sub-agent.
        SubagentDepthError: past ``max-subagent-depth``.
    """
    caller_run = ctx._run
    caller = caller_run.runner
    tool = name if isinstance(name, AgentTool) else find_tool(caller, name)
    name = tool.name
    path = tool.section
    if not path:
        raise SubagentError(f"tool {name!r} is an AgentTool of no plan section", subagent=name)
    depth = getattr(caller_run, "depth", 0) + 1
    max_depth = caller.config.get(AgentConfigOptions.MAX_SUBAGENT_DEPTH)
    if depth > max_depth:
        raise SubagentDepthError(
            f"calling sub-agent {path!r} would nest {depth} deep, more than "
            f"max-subagent-depth ({max_depth}); raise AgentConfigOptions.MAX_SUBAGENT_DEPTH "
            "or stop the agents from calling each other deeper",
            subagent=path,
        )
    runner = runner_for(_root_of(caller), path)
    runner.refresh_observer()
    # The call id the sub-agent's durable calls are numbered under: taken in call order,
    # like any durable call of the caller, so a replay finds the same ids.
    call_id = caller_run.next_call_id()
    run = SubRun(caller_run, runner, call_id, depth, ctx._event)
    execute = bounded(_execute, tool.timeout, "sub-agent", path)
    return await execute(run, runner, value)


async def _execute(run: SubRun, runner: SubagentRunner, value: Any) -> Any:
    observer = runner.observer
    steps = observer if observer is not None and observer.observes_steps else None
    counts = runner.counts
    counts.in_flight += 1
    started = time.perf_counter()
    error: BaseException | None = None
    try:
        result = await runner._execute(run, value, steps)
    except RunPaused as pause:
        error = pause
        raise
    except SubagentDepthError as exc:
        error = exc
        raise
    except Exception as exc:
        error = exc
        counts.runs_failed += 1
        raise SubagentError(
            f"sub-agent {runner.path!r} failed: {type(exc).__name__}: {exc}",
            subagent=runner.path,
        ) from exc
    finally:
        counts.in_flight -= 1
        counts.runs += 1
        counts.events += run.processed
        if runner.agent_metrics is not None and run.info is not None:
            seconds = time.perf_counter() - started
            runner.agent_metrics.run_finished(
                RunFinished(run.info, seconds, None if isinstance(error, RunPaused) else error)
            )
    if result.approval is not None:  # paused inside: the whole run pauses
        assert result.approval_call_id is not None
        raise RunPaused(result.approval, result.approval_call_id)
    run.merge_memory(result.memory_updates, result.memory_deletes)
    run.caller.result.errors.extend(result.errors)
    outputs = result.outputs
    if not outputs:
        return None
    return outputs[0] if len(outputs) == 1 else list(outputs)
