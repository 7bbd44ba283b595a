"""Durable calls and what an action sees: one run's state and its :class:`RunContext`.

``durable_execute`` / ``durable_execute_async`` look each call up in the run's durable log by
its call id (call ids count up within a run), answer a recorded call from the log and record a
new one through the host's ``on_record`` callback; ``request_approval`` is a pair of such
records (see docs/ARCHITECTURE.md, "Approval: paused runs").
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import pickle
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from flink_agents.api._usage import USAGE_SCOPE
from flink_agents.api.approval import ApprovalOptions, ApprovalRequest, ApprovalResponse
from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.event import Event, event_class_for
from flink_agents.api.events.event_type import EventType
from flink_agents.api.memory.long_term_memory import BaseLongTermMemory
from flink_agents.api.memory_object import MemoryObject
from flink_agents.api.resource import Resource, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.timeouts import BOUNDED_CODE
from flink_agents.plan.agent_plan import ActionPlan, AgentPlan
from flink_agents.runtime.core.records import (
    APPROVAL_DECISION,
    APPROVAL_REQUEST,
    DurableRecord,
    RunPaused,
    RunResult,
)
from flink_agents.runtime.memory import MemoryStore, StoredMemoryObject
from flink_agents.runtime.metric_groups import SimpleMetricGroup
from flink_agents.runtime.observability import CallFinished, RunInfo, call_target
from flink_agents.secrets import mask_exception

if TYPE_CHECKING:
    from flink_agents.runtime.core.runner import AgentRunner
    from flink_agents.runtime.governance import RunGuard

log = logging.getLogger("flink_agents.runtime")
T = TypeVar("T")


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
        #: Tokens of the run's model calls (live or replayed), for the key's budget.
        self.model_tokens = 0
        #: What ended the run without raising (a dead letter, an ignored run limit).
        self.failure: BaseException | None = None
        #: Near max-events-per-run: ``(event type, action, sent types)`` of each execution.
        self.edges: list[tuple[str, str, list[str]]] | None = None

    def next_call_id(self) -> str:
        self.call_seq += 1
        return str(self.call_seq)

    def next_call_recorded(self) -> bool:
        """Whether the next durable call will be answered from the log (a replay)."""
        rec = self.durable.get(str(self.call_seq + 1))
        return rec is not None and not rec.pending

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
        if code is BOUNDED_CODE:
            # A call bounded by a deadline (api/timeouts.bounded): a coroutine function
            # named after the function it wraps, whose own information is cached.
            return _call_info(raw.__wrapped__)[0], True  # type: ignore[union-attr]
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
        # ObservedRunContext.__init__ (memory_events.py) sets the same attributes itself.
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
        return self._action.runtime_config

    @property
    def key(self) -> Any:
        return self._run.key

    @property
    def event(self) -> Event:
        """The event the action is processing."""
        return self._event

    @property
    def model_guard(self) -> RunGuard | None:
        """Budgets and cache around this execution's model calls (None: neither is
        configured); ``plan/actions/calls.py: call_model`` asks it."""
        governance = self._run.runner.governance
        return None if governance is None else governance.guard(self._run, self._action.name)

    @property
    def model_calls(self) -> dict[str, tuple[Any, Any, float | None, Any]]:
        """The runner's chat model setups as model calls use them, by name (see
        ``plan/actions/calls.py: _model_of``)."""
        return self._run.runner.model_calls

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
                if USAGE_SCOPE.get() is None:
                    call = functools.partial(target, *args, **kwargs)
                else:  # the worker thread books usage to this action too
                    call = functools.partial(
                        contextvars.copy_context().run, target, *args, **kwargs
                    )
                result = await loop.run_in_executor(self._run.runner.executor, call)
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
            # Kept in keyed state (pickled): no secret of the plan in its message.
            self._run.record(call_id, DurableRecord(signature, error=mask_exception(error)))
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

    # -- sub-agents ------------------------------------------------------------------------------
    async def call_agent(self, name: Any, input: Any) -> Any:  # noqa: A002
        # The module is imported on first use: a plan without sub-agents never loads it.
        from flink_agents.runtime.core.subagents import call_agent

        return await call_agent(self, name, input)

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
        if owner is None:  # a wrapper (a timeout) of a resource's method
            owner = getattr(getattr(func, "__wrapped__", None), "__self__", None)
        # Resources live as long as the runner, so their ids are stable keys.
        cache_key = id(owner) if owner is not None else signature
        target = runner._call_targets.get(cache_key)
        if target is None:
            target = runner._call_targets[cache_key] = call_target(
                func, signature, runner.resources
            )
        kind, name = target
        runner.observer.call_finished(  # type: ignore[union-attr]
            CallFinished(
                info, self._action.name, kind, name, started, seconds, result, error, replayed
            )
        )

    # -- metrics ---------------------------------------------------------------------------------
    @property
    def agent_metric_group(self) -> SimpleMetricGroup:
        return self._run.runner.metrics

    @property
    def action_metric_group(self) -> SimpleMetricGroup:
        return self._run.runner.metrics.get_sub_group("action", self._action.name)
