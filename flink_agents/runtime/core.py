"""The run loop: one input in, events through actions, outputs and memory changes out.

This is the one execution core: hosts (the local runner, the Flink function) load state, call
:meth:`AgentRunner.run`, commit the :class:`RunResult` and emit outputs. A run is a coroutine
against a snapshot of the key's memory and durable call log and never touches host state, so
the Flink host runs it off the operator thread. See docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import difflib
import inspect
import itertools
import logging
import pickle
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from flink_agents.api.approval import ApprovalOptions, ApprovalRequest, ApprovalResponse
from flink_agents.api.core_options import (
    AgentConfigOptions,
    AgentConfiguration,
    ErrorHandlingStrategy,
)
from flink_agents.api.events.event import (
    ErrorEvent,
    Event,
    InputEvent,
    OutputEvent,
    event_class_for,
)
from flink_agents.api.events.event_type import EventType
from flink_agents.api.hooks import HookContext, HookPoint
from flink_agents.api.memory.long_term_memory import BaseLongTermMemory
from flink_agents.api.memory_object import MemoryObject
from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.timeouts import TimeoutOptions, bounded, check_timeout
from flink_agents.errors import ActionError, HookError, RuntimeFailure
from flink_agents.plan.agent_plan import ActionPlan, AgentPlan
from flink_agents.plan.behaviours import run_hooks
from flink_agents.runtime.long_term_memory import LongTermMemoryService
from flink_agents.runtime.memory import MemoryStore, StoredMemoryObject
from flink_agents.runtime.metrics import SimpleMetricGroup
from flink_agents.runtime.observability import (
    RunCounts,
    RunInfo,
    RunObserver,
    call_target,
    combine,
)
from flink_agents.runtime.observability.metrics import AgentMetrics, MetricsOptions
from flink_agents.runtime.resources import ResourceCache

log = logging.getLogger("flink_agents.runtime")
T = TypeVar("T")


@dataclass
class DurableRecord:
    """A durable call: what was called and what it gave (or raised).

    Attributes:
        signature: ``module.qualname`` of the function called.
        result: what it returned.
        error: what it raised, if it failed.
        pending: the call was started and has not finished: written before a call that has
            a reconciler, so that a restore can tell "maybe happened" from "never started".
    """

    signature: str
    result: Any = None
    error: BaseException | None = None
    pending: bool = False


#: Signatures of the two durable records of an approval step.
APPROVAL_REQUEST = "flink_agents.approval.request"
APPROVAL_DECISION = "flink_agents.approval.decision"


def decision_call_id(request_call_id: str) -> str:
    """The durable call id of the decision that follows the approval request recorded under
    ``request_call_id`` (``request_approval`` takes the two ids in a row; call ids count up)."""
    return str(int(request_call_id) + 1)


class RunPaused(BaseException):
    """Raised through the actions when a run waits for a human decision; a BaseException so
    that no action's ``except Exception`` swallows it. :meth:`AgentRunner.run` turns it into
    a paused :class:`RunResult`."""

    def __init__(self, request: ApprovalRequest, call_id: str) -> None:
        super().__init__(request.request_id)
        self.request = request
        self.call_id = call_id


@dataclass
class RunResult:
    """What a run produced, for the host to commit.

    Attributes:
        key: the input's key.
        outputs: ``OutputEvent.output`` values, in the order they were sent.
        memory_updates: short-term memory paths set (flattened) and their values.
        memory_deletes: short-term memory paths removed.
        durable_records: durable calls completed in this run, by call id.
        errors: error events of failures the IGNORE strategy let pass.
        approval: set when the run paused for a human decision: the request (also the one
            output). The host keeps the input and ``durable_records`` uncommitted and runs
            the input again once the decision is recorded at ``approval_call_id``.
        approval_call_id: the durable call id the decision is recorded under.
    """

    key: Any
    outputs: list[Any] = field(default_factory=list)
    memory_updates: dict[str, Any] = field(default_factory=dict)
    memory_deletes: list[str] = field(default_factory=list)
    durable_records: dict[str, DurableRecord] = field(default_factory=dict)
    errors: list[ErrorEvent] = field(default_factory=list)
    approval: ApprovalRequest | None = None
    approval_call_id: str | None = None

    def applied_to(self, memory: dict[str, Any]) -> dict[str, Any]:
        """``memory`` (flattened) after this run's changes: a new dict, or ``memory``
        itself when the run changed nothing."""
        if not self.memory_updates and not self.memory_deletes:
            return memory
        updated = dict(memory)
        for path in self.memory_deletes:
            updated.pop(path, None)
        updated.update(self.memory_updates)
        return updated


class _Run:
    """State of one run (private to the core)."""

    def __init__(
        self,
        runner: AgentRunner,
        key: Any,
        memory: Mapping[str, Any] | None,
        durable: Mapping[str, DurableRecord] | None,
        on_record: Callable[[str, DurableRecord], None] | None,
        on_suspend: Callable[[], None] | None,
    ) -> None:
        self.runner = runner
        self.key = key
        self.short_term = MemoryStore(memory)
        self.sensory = MemoryStore()
        self.durable = dict(durable or {})
        self.on_record = on_record
        self.on_suspend = on_suspend
        self.call_seq = 0
        self.result = RunResult(key=key)
        #: Events taken from the queue (for RunCounts).
        self.processed = 0
        #: For observers (None while the runner has none).
        self.info: RunInfo | None = None
        #: How the last failure handled by ``AgentRunner._failed`` ended.
        self.outcome = "retried"

    def next_call_id(self) -> str:
        self.call_seq += 1
        return str(self.call_seq)

    def record(self, call_id: str, rec: DurableRecord) -> None:
        self.durable[call_id] = rec
        self.result.durable_records[call_id] = rec
        if self.on_record is not None:
            self.on_record(call_id, rec)


def _signature(func: Callable[..., Any]) -> str:
    func = getattr(func, "__func__", func)
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', repr(func))}"


#: ``(signature, is a coroutine function)`` by code object: a durable call looks both up
#: per call (a bound method is a new object each time; its code is not, and the number of
#: code objects is bounded by the loaded code, unlike closures or partials).
_CALL_INFO: dict[Any, tuple[str, bool]] = {}


def _call_info(func: Callable[..., Any]) -> tuple[str, bool]:
    raw = getattr(func, "__func__", func)
    code = getattr(raw, "__code__", None)
    if code is None:
        return _signature(raw), inspect.iscoroutinefunction(raw)
    info = _CALL_INFO.get(code)
    if info is None:
        info = (_signature(raw), inspect.iscoroutinefunction(raw))
        # A wrapper (functools.wraps) shares its code with every function it wraps (e.g. a
        # call bounded by a timeout): named after the wrapped one each time, never cached.
        if not hasattr(raw, "__wrapped__"):
            _CALL_INFO[code] = info
    return info


_PLAIN = (type(None), bool, int, float, str, bytes, BaseModel)


#: Type strings of the built-in events.
_BUILTIN_TYPES = frozenset(v for k, v in vars(EventType).items() if not k.startswith("_"))


def _check_reconciler(reconciler: Any) -> None:
    """A reconciler is called with no arguments (as upstream checks it)."""
    if not callable(reconciler):
        raise TypeError(f"reconciler must be callable, got {type(reconciler).__name__}")
    try:
        inspect.signature(reconciler).bind()
    except TypeError:
        raise TypeError(
            f"reconciler {_signature(reconciler)} must be callable with no arguments (it "
            "is called after a restore to find out the outcome of the interrupted call)"
        ) from None
    except ValueError:
        pass  # no signature to inspect (some builtins): trust it


def _check_picklable(value: Any, signature: str) -> None:
    if isinstance(value, _PLAIN):
        return  # pickles (pydantic models of importable classes do); skip the cost
    try:
        pickle.dumps(value)
    except Exception as exc:  # noqa: BLE001 - any pickling failure means the same
        raise TypeError(
            f"durable call {signature} returned {type(value).__name__}, which cannot be "
            f"recorded (not picklable: {exc}); return plain data"
        ) from None


class RunContext(RunnerContext):
    """The :class:`RunnerContext` of one action execution."""

    def __init__(self, run: _Run, action: ActionPlan, event: Event) -> None:
        self._run = run
        self._action = action
        self._event = event
        self._sent: list[Event] = []

    # -- events ----------------------------------------------------------------------------
    def send_event(self, event: Event) -> None:
        if type(event) is Event and event.type in _BUILTIN_TYPES:
            # A unified event of a built-in type (Event(type="_output_event", attributes=
            # {"output": ...})) travels as its class, so the built-in actions and the output
            # collection see it as they see the class's own events. Types of user classes
            # stay generic: a type string may be claimed by classes of unrelated modules,
            # and actions read them with `MyEvent.from_event(event)` (as upstream).
            cls = event_class_for(event.type, import_module=False)
            if cls is not None and cls is not Event:
                event = cls.from_event(event)
        elif not isinstance(event, Event):
            raise TypeError(f"send_event takes an Event, got {type(event).__name__}")
        self._sent.append(event)

    # -- resources ---------------------------------------------------------------------------
    def get_resource(self, name: str, type: ResourceType) -> Resource:  # noqa: A002
        resource: Resource = self._run.runner.resources.get(name, type)
        return resource

    # -- memory --------------------------------------------------------------------------------
    @property
    def short_term_memory(self) -> MemoryObject:
        return StoredMemoryObject(self._run.short_term)

    @property
    def sensory_memory(self) -> MemoryObject:
        return StoredMemoryObject(self._run.sensory)

    @property
    def long_term_memory(self) -> BaseLongTermMemory:
        return self._run.runner.long_term_memory.for_key(self._run.key)

    # -- config --------------------------------------------------------------------------------
    @property
    def config(self) -> AgentConfiguration:
        return self._run.runner.config

    @property
    def action_config(self) -> dict[str, Any]:
        return self._action.config

    @property
    def key(self) -> Any:
        return self._run.key

    @property
    def event(self) -> Event:
        """The event the action is processing."""
        return self._event

    @property
    def agent_plan(self) -> AgentPlan:
        """The plan being run (the built-in actions read interceptors and hooks from it)."""
        return self._run.runner.plan

    # -- durable calls -------------------------------------------------------------------------
    def _replay(self, signature: str) -> tuple[str, DurableRecord | None]:
        call_id = self._run.next_call_id()
        rec = self._run.durable.get(call_id)
        if rec is not None and rec.signature != signature:
            log.warning(
                "durable call %s of key %r was %s before the restore and is %s now; calling again",
                call_id,
                self._run.key,
                rec.signature,
                signature,
            )
            rec = None
        return call_id, rec

    @staticmethod
    def _replayed(rec: DurableRecord) -> Any:
        if rec.error is not None:
            raise rec.error
        return rec.result

    def _begin(
        self, signature: str, reconciler: Callable[[], Any] | None
    ) -> tuple[str, DurableRecord | None, bool]:
        """Look the call up in the log: ``(call id, finished record or None, whether to
        call the reconciler instead of the function)``. With a reconciler, a call that is
        not in the log is marked pending first (see :class:`DurableRecord`)."""
        call_id, rec = self._replay(signature)
        if rec is not None and not rec.pending:
            return call_id, rec, False
        if reconciler is None:
            return call_id, None, False
        _check_reconciler(reconciler)
        if rec is not None:
            # Started before the restore, outcome unknown: the reconciler finds it out.
            log.info(
                "durable call %s (%s) of key %r was started before the restore and not "
                "recorded; asking its reconciler",
                call_id,
                signature,
                self._run.key,
            )
            return call_id, None, True
        self._run.record(call_id, DurableRecord(signature, pending=True))
        return call_id, None, False

    def durable_execute(
        self,
        func: Callable[..., T],
        *args: Any,
        reconciler: Callable[[], T] | None = None,
        **kwargs: Any,
    ) -> T:
        signature = _call_info(func)[0]
        call_id, rec, reconcile = self._begin(signature, reconciler)
        info = self._run.info
        if rec is not None:
            if info is not None:
                now = time.perf_counter()
                self._observe(info, func, signature, now, 0.0, rec.result, rec.error, True)
            return self._replayed(rec)
        perf = time.perf_counter() if info is not None else 0.0
        try:
            result = reconciler() if reconcile else func(*args, **kwargs)  # type: ignore[misc]
        except Exception as exc:
            self._settle(call_id, signature, func, perf, None, exc)
            raise
        if inspect.isawaitable(result):
            raise TypeError(
                f"{signature} is async; use `await ctx.durable_execute_async(...)` for it"
            )
        self._settle(call_id, signature, func, perf, result, None)
        return result

    async def durable_execute_async(
        self,
        func: Callable[..., Awaitable[T] | T],
        *args: Any,
        reconciler: Callable[[], Awaitable[T] | T] | None = None,
        **kwargs: Any,
    ) -> T:
        signature, is_coroutine = _call_info(func)
        call_id, rec, reconcile = self._begin(signature, reconciler)
        info = self._run.info
        if rec is not None:
            if info is not None:
                now = time.perf_counter()
                self._observe(info, func, signature, now, 0.0, rec.result, rec.error, True)
            return self._replayed(rec)
        perf = time.perf_counter() if info is not None else 0.0
        if reconcile:
            target: Callable[..., Any] = reconciler  # type: ignore[assignment]
            args, kwargs = (), {}
            is_coroutine = inspect.iscoroutinefunction(target)
        else:
            target = func
        if self._run.on_suspend is not None:
            self._run.on_suspend()
        try:
            if is_coroutine:
                result = await target(*args, **kwargs)
            else:
                loop = asyncio.get_running_loop()
                result = await loop.run_in_executor(
                    self._run.runner.executor, lambda: target(*args, **kwargs)
                )
                if inspect.isawaitable(result):
                    result = await result
        except Exception as exc:
            self._settle(call_id, signature, func, perf, None, exc)
            raise
        self._settle(call_id, signature, func, perf, result, None)
        return result

    def _settle(
        self,
        call_id: str,
        signature: str,
        func: Callable[..., Any],
        started: float,
        result: Any,
        error: Exception | None,
    ) -> None:
        """Tell the observer (if any) how a live durable call ended and record its outcome
        (a result must be picklable: it goes into keyed state)."""
        info = self._run.info
        if info is not None:
            seconds = time.perf_counter() - started
            self._observe(info, func, signature, started, seconds, result, error, False)
        if error is not None:
            self._run.record(call_id, DurableRecord(signature, error=error))
            return
        _check_picklable(result, signature)
        self._run.record(call_id, DurableRecord(signature, result=result))

    # -- approval ---------------------------------------------------------------------------------
    async def request_approval(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        tool_call_id: str | None = None,
    ) -> ApprovalResponse:
        # Two durable records: the request (its id and times stay those of the first run)
        # and the decision, which the host records when the response (or the timeout) comes.
        call_id, rec = self._replay(APPROVAL_REQUEST)
        if rec is not None:
            request: ApprovalRequest = rec.result
        else:
            request = ApprovalRequest.new(
                self._run.key,
                tool_name,
                arguments,
                tool_call_id,
                self.config.get(ApprovalOptions.APPROVAL_TIMEOUT),
            )
            self._run.record(call_id, DurableRecord(APPROVAL_REQUEST, result=request))
        call_id, rec = self._replay(APPROVAL_DECISION)
        if rec is not None:
            decision: ApprovalResponse = rec.result
            return decision
        raise RunPaused(request, call_id)

    def _observe(
        self,
        info: RunInfo,
        func: Callable[..., Any],
        signature: str,
        started: float,
        seconds: float,
        result: Any,
        error: BaseException | None,
        replayed: bool,
    ) -> None:
        runner = self._run.runner
        owner = getattr(func, "__self__", None)
        # Resources live as long as the runner, so their ids are stable keys.
        cache_key = id(owner) if owner is not None else signature
        target = runner._call_targets.get(cache_key)
        if target is None:
            target = runner._call_targets[cache_key] = call_target(
                func, signature, runner.resources
            )
        kind, name = target
        runner.observer.call_finished(  # type: ignore[union-attr]
            info, self._action.name, kind, name, started, seconds, result, error, replayed
        )

    # -- metrics ---------------------------------------------------------------------------------
    @property
    def agent_metric_group(self) -> SimpleMetricGroup:
        return self._run.runner.metrics

    @property
    def action_metric_group(self) -> SimpleMetricGroup:
        return self._run.runner.metrics.get_sub_group("action", self._action.name)


class AgentRunner:
    """Runs inputs through a plan. One instance per host instance (task slot).

    The runner owns the thread pool for blocking calls (:attr:`executor`, sized by
    ``num-async-threads``): ``durable_execute_async`` of a plain function runs on it, and
    hosts install it as their event loop's default executor so that ``asyncio.to_thread``
    (used by resources) shares it. It is the only pool; :meth:`close` shuts it down.

    Args:
        plan: the compiled agent.
        resources: the resource cache (one is made from the plan if not given).

    Attributes:
        executor: the thread pool for blocking calls (threads named ``flink-agents-call``).
    """

    def __init__(self, plan: AgentPlan, *, resources: ResourceCache | None = None) -> None:
        from flink_agents.api.core_options import AgentExecutionOptions

        self.plan = plan
        self.config = plan.get_config()
        self.resources = resources or ResourceCache(plan)
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.config.get(AgentExecutionOptions.NUM_ASYNC_THREADS),
            thread_name_prefix="flink-agents-call",
        )
        self.metrics = SimpleMetricGroup("agent")
        self.resources.metrics = self.metrics
        #: Plain counts of runs, events and actions (always kept: an integer addition per
        #: event and action); the built-in metrics read them.
        self.counts = RunCounts()
        #: What sees the runs (None: nothing, and the loop skips every hook; see
        #: runtime/observability). Hosts add theirs with :meth:`add_observer`.
        self.observer: RunObserver | None = None
        #: The built-in metrics (None when ``metrics.enabled`` is false).
        self.agent_metrics: AgentMetrics | None = None
        self._closables: list[Callable[[], None]] = []
        self._call_targets: dict[Any, tuple[str, str]] = {}
        # Run ids: a random prefix per runner and a counter (uuid4 per run costs a syscall).
        self._run_prefix = uuid.uuid4().hex[:16]
        self._run_seq = itertools.count(1)
        self.long_term_memory = LongTermMemoryService(self.config, self.resources.get)
        self._strategy = self.config.get(AgentConfigOptions.ERROR_HANDLING_STRATEGY)
        self._max_retries = self.config.get(AgentConfigOptions.MAX_RETRIES)
        self._retry_wait = self.config.get(AgentConfigOptions.RETRY_WAIT_INTERVAL)
        self._unheard: set[str] = set()
        self._agent_hooks = bool(
            plan.hooks_at(HookPoint.BEFORE_AGENT.value)
            or plan.hooks_at(HookPoint.AFTER_AGENT.value)
        )
        action_timeout = self.config.get(TimeoutOptions.ACTION_TIMEOUT)
        # Resolved once: the per-event lookups are on the hot path.
        # Resolved once: the per-event lookups are on the hot path. The last item counts
        # the action's executions (a cell per action name, in counts.by_action).
        counts = self.counts.by_action
        self._actions_by_event: dict[
            str, list[tuple[ActionPlan, Callable[..., Any], Any, float | None, list[int]]]
        ] = {
            etype: [
                (
                    a,
                    a.function,
                    ErrorHandlingStrategy(a.config.get("error-handling-strategy", self._strategy)),
                    check_timeout(a.config.get("timeout", action_timeout), f"action {a.name!r}"),
                    counts.setdefault(a.name, [0]),
                )
                for a in plan.get_actions(etype)
            ]
            for etype in plan.actions_by_event
        }
        if self.config.get(MetricsOptions.ENABLED):
            self.agent_metrics = AgentMetrics(self.metrics, self.counts)
            self.observer = self.agent_metrics

    def add_observer(self, observer: RunObserver, close: Callable[[], None] | None = None) -> None:
        """Let ``observer`` see the runs too; ``close`` is called by :meth:`close`."""
        self.observer = combine([self.observer, observer])
        if close is not None:
            self._closables.append(close)

    def close(self) -> None:
        """Close long-term memory and resources, then shut the executor down (without
        waiting for calls still running: a host closes when no run needs it any more)."""
        try:
            for close in self._closables:
                close()
            self._closables = []
            self.long_term_memory.close()
            self.resources.close()
        finally:
            self.executor.shutdown(wait=False, cancel_futures=True)

    async def run(
        self,
        key: Any,
        value: Any,
        *,
        memory: Mapping[str, Any] | None = None,
        durable: Mapping[str, DurableRecord] | None = None,
        on_record: Callable[[str, DurableRecord], None] | None = None,
        on_suspend: Callable[[], None] | None = None,
    ) -> RunResult:
        """Run one input.

        Args:
            key: the input's key.
            value: the input record (becomes ``InputEvent.input``).
            memory: snapshot of the key's short-term memory (flattened paths).
            durable: durable calls recorded by an earlier attempt of this same run (after a
                restore); they are answered from the log instead of being called.
            on_record: called (on the loop thread) whenever a durable call completes, so a
                host can persist progress before the run ends.
            on_suspend: called when the run starts waiting on an external call.

        Raises:
            RuntimeFailure: an action failed and the strategy is FAIL (or RETRY ran out).
        """
        run = _Run(self, key, memory, durable, on_record, on_suspend)
        observer = self.observer
        counts = self.counts
        counts.in_flight += 1
        try:
            if observer is None:
                return await self._execute(run, value, None)
            steps = observer if observer.observes_steps else None
            if steps is not None:
                run_id = f"{self._run_prefix}{next(self._run_seq):08x}"
                info = run.info = RunInfo(key, run_id, time.time(), time.perf_counter())
            else:  # metrics only: no id, no wall-clock time needed
                info = run.info = RunInfo(key, "", 0.0, time.perf_counter())
            observer.run_started(info)
            try:
                result = await self._execute(run, value, steps)
            except BaseException as exc:
                observer.run_finished(info, time.perf_counter() - info.started_perf, exc)
                raise
            observer.run_finished(info, time.perf_counter() - info.started_perf, None)
            return result
        except BaseException:
            counts.runs_failed += 1
            raise
        finally:
            counts.in_flight -= 1
            counts.runs += 1
            counts.events += run.processed

    async def _execute(self, run: _Run, value: Any, steps: RunObserver | None) -> RunResult:
        """The run's body: agent hooks, the actions, and a pause for approval."""
        result = run.result
        try:
            if self._agent_hooks:
                return await self._run_with_agent_hooks(run, value, steps)
            await self._run_events(run, value, steps)
        except RunPaused as pause:
            # Nothing of the run is committed but its durable records: the resumed run
            # sends its outputs and memory changes again (up to the pause from the log).
            return RunResult(
                key=run.key,
                outputs=[pause.request],
                durable_records=result.durable_records,
                approval=pause.request,
                approval_call_id=pause.call_id,
            )
        run.result.memory_updates = run.short_term.updates
        run.result.memory_deletes = sorted(run.short_term.deletes)
        return result

    async def _run_events(self, run: _Run, value: Any, steps: RunObserver | None) -> None:
        """Send the input through the actions until no event is left."""
        queue: deque[Event] = deque([InputEvent(input=value)])
        if steps is not None:
            steps.events_sent(run.info, list(queue), None, None)  # type: ignore[arg-type]
        await self._drive(run, queue, steps)

    async def _drive(self, run: _Run, queue: deque[Event], observer: RunObserver | None) -> None:
        """Send the events of ``queue`` (and what their actions send) through the actions."""
        result = run.result
        info = run.info
        actions_by_event = self._actions_by_event
        while queue:
            event = queue.popleft()
            run.processed += 1
            if isinstance(event, OutputEvent):
                result.outputs.append(event.output)
            actions = actions_by_event.get(event.type)
            if not actions:
                if not isinstance(event, OutputEvent):
                    self._warn_unheard(event)
                continue
            for action, function, strategy, timeout, executed in actions:
                # The first attempt runs here, not in a coroutine of its own (one per action
                # is measurable per record); failures and retries go to _failed.
                ctx = RunContext(run, action, event)
                marks = run.short_term.mark(), run.sensory.mark()
                if observer is not None:
                    perf = time.perf_counter()
                try:
                    returned = function(event, ctx)
                    if returned is not None and inspect.isawaitable(returned):
                        if timeout is None:
                            await returned
                        else:
                            await _bounded_action(returned, timeout, action)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - _failed applies the strategy
                    if observer is None:
                        queue.extend(
                            await self._failed(
                                run, action, function, strategy, timeout, event, marks, exc
                            )
                        )
                        continue
                    try:
                        sent = await self._failed(
                            run, action, function, strategy, timeout, event, marks, exc
                        )
                    except BaseException as final:
                        observer.action_finished(
                            info,  # type: ignore[arg-type]
                            action.name,
                            event,
                            perf,
                            time.perf_counter() - perf,
                            final,
                            "failed",
                        )
                        raise
                    observer.action_finished(
                        info,  # type: ignore[arg-type]
                        action.name,
                        event,
                        perf,
                        time.perf_counter() - perf,
                        exc,
                        run.outcome,
                    )
                    observer.events_sent(info, sent, event, action.name)  # type: ignore[arg-type]
                    queue.extend(sent)
                else:
                    queue.extend(ctx._sent)
                    if observer is not None:
                        observer.action_finished(
                            info,  # type: ignore[arg-type]
                            action.name,
                            event,
                            perf,
                            time.perf_counter() - perf,
                            None,
                            None,
                        )
                        if ctx._sent:
                            observer.events_sent(info, ctx._sent, event, action.name)  # type: ignore[arg-type]
                finally:
                    # Counted when the execution ended (however it ended).
                    executed[0] += 1

    async def _run_with_agent_hooks(
        self, run: _Run, value: Any, steps: RunObserver | None
    ) -> RunResult:
        """:meth:`run` with the ``before_agent`` / ``after_agent`` hooks around the actions.

        A failing hook follows the agent's error strategy: RETRY runs the hook again, IGNORE
        records an error event and goes on without it, FAIL raises its HookError.
        """
        memory = StoredMemoryObject(run.short_term)
        before = HookContext(point=HookPoint.BEFORE_AGENT, key=run.key, memory=memory, input=value)
        ran = await self._agent_hook(run, self.plan.hooks_at(HookPoint.BEFORE_AGENT.value), before)
        if ran and before.stopped:
            run.result.outputs.append(before.answer)
        else:  # an ignored failure goes on with the input as it came
            await self._run_events(run, before.input if ran else value, steps)
        after = HookContext(
            point=HookPoint.AFTER_AGENT,
            key=run.key,
            memory=memory,
            input=before.input,
            outputs=list(run.result.outputs),
        )
        if await self._agent_hook(run, self.plan.hooks_at(HookPoint.AFTER_AGENT.value), after):
            run.result.outputs = list(after.outputs)
        run.result.memory_updates = run.short_term.updates
        run.result.memory_deletes = sorted(run.short_term.deletes)
        return run.result

    async def _agent_hook(
        self, run: _Run, hooks: list[tuple[str, Callable[..., Any]]], hc: HookContext
    ) -> bool:
        """Run agent hooks under the agent's error strategy; False when IGNORE skipped them."""
        if not hooks:
            return True
        attempt = 0
        mark = run.short_term.mark()
        while True:
            try:
                await run_hooks(hooks, hc)
                return True
            except HookError as exc:
                run.short_term.reset(mark)
                exc.with_location(key=run.key)
                if self._strategy is ErrorHandlingStrategy.RETRY and attempt < self._max_retries:
                    attempt += 1
                    wait = self._retry_wait * (2 ** (attempt - 1))
                    log.warning(
                        "retrying (%d/%d in %.2fs): %s", attempt, self._max_retries, wait, exc
                    )
                    await asyncio.sleep(wait)
                    continue
                if self._strategy is ErrorHandlingStrategy.IGNORE:
                    log.error("ignored failure: %s", exc)
                    run.result.errors.append(
                        ErrorEvent(
                            key=_jsonable_key(run.key),
                            action=f"hook:{exc.name}",
                            failed_event_id="",
                            failed_event_type=exc.point,
                            error_type=type(exc).__name__,
                            error=str(exc),
                        )
                    )
                    return False
                raise

    def _warn_unheard(self, event: Event) -> None:
        if event.type in self._unheard:
            return
        self._unheard.add(event.type)
        if isinstance(event, ErrorEvent):
            return  # logged where it was raised
        listened = sorted(self.plan.actions_by_event)
        close = difflib.get_close_matches(event.type, listened, n=1)
        log.warning(
            "no action listens to events of type %r (sent as %s); they are dropped.%s "
            "Listened types: %s",
            event.type,
            type(event).__name__,
            f" Did you mean {close[0]!r}?" if close else "",
            listened,
        )

    def run_sync(self, key: Any, value: Any, **kwargs: Any) -> RunResult:
        """:meth:`run` on a fresh event loop (for scripts and tests)."""
        return asyncio.run(self.run(key, value, **kwargs))

    async def _failed(
        self,
        run: _Run,
        action: ActionPlan,
        function: Callable[..., Any],
        strategy: ErrorHandlingStrategy,
        timeout: float | None,
        event: Event,
        marks: tuple[Any, Any],
        exc: Exception,
    ) -> list[Event]:
        """Handle the failure ``exc`` of ``action`` on ``event`` by its strategy: retry it,
        ignore it (an :class:`ErrorEvent` goes on) or raise. Returns the events sent by a
        successful retry, or the error event."""
        attempt = 0
        while True:
            run.short_term.reset(marks[0])
            run.sensory.reset(marks[1])
            error = _as_action_error(exc, run.key, action, event)
            if (
                strategy is ErrorHandlingStrategy.RETRY
                and attempt < self._max_retries
                and getattr(exc, "retryable", True)
            ):
                attempt += 1
                wait = self._retry_wait * (2 ** (attempt - 1))
                log.warning(
                    "retrying (%d/%d in %.2fs): %s", attempt, self._max_retries, wait, error
                )
                await asyncio.sleep(wait)
                ctx = RunContext(run, action, event)
                try:
                    returned = function(event, ctx)
                    if returned is not None and inspect.isawaitable(returned):
                        if timeout is None:
                            await returned
                        else:
                            await _bounded_action(returned, timeout, action)
                    run.outcome = "retried"
                    self.counts.retried += 1
                    return ctx._sent
                except asyncio.CancelledError:
                    raise
                except Exception as again:  # noqa: BLE001 - handled by the next round
                    exc = again
                    continue
            if strategy is ErrorHandlingStrategy.IGNORE:
                log.error("ignored failure: %s", error)
                err_event = ErrorEvent(
                    key=_jsonable_key(run.key),
                    action=action.name,
                    failed_event_id=str(event.id),
                    failed_event_type=event.type,
                    error_type=type(exc).__name__,
                    error=str(exc),
                )
                run.result.errors.append(err_event)
                run.outcome = "ignored"
                self.counts.ignored += 1
                # An error in an action handling an ErrorEvent must not loop forever.
                return [] if isinstance(event, ErrorEvent) else [err_event]
            self.counts.failed += 1
            if error is not exc:
                raise error from exc
            raise exc


async def _bounded_action(returned: Awaitable[Any], timeout: float, action: ActionPlan) -> None:
    """Await an async action's coroutine for at most ``timeout`` seconds (a synchronous
    action has finished before its timeout could apply)."""

    async def awaited() -> Any:
        return await returned

    await bounded(awaited, timeout, "action", action.name)()


def _jsonable_key(key: Any) -> Any:
    return key if isinstance(key, (str, int, float, bool, type(None))) else repr(key)


def _as_action_error(exc: Exception, key: Any, action: ActionPlan, event: Event) -> Exception:
    where = {"key": key, "action": action.name, "event_id": str(event.id)}
    if isinstance(exc, RuntimeFailure):
        return exc.with_location(**where)
    return ActionError(
        f"action {action.name!r} failed on {event.type}: {type(exc).__name__}: {exc}",
        **where,
    )
