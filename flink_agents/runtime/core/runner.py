"""The run loop: one input in, events through actions, outputs and memory changes out.

:class:`AgentRunner` is the one execution core: hosts (the local runner, the Flink function)
load state, call :meth:`AgentRunner.run`, commit the :class:`RunResult` and emit outputs. A
run is a coroutine against a snapshot of the key's memory and durable call log and never
touches host state, so the Flink host runs it off the operator thread. See
docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import difflib
import importlib
import inspect
import itertools
import logging
import time
import types
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any

from flink_agents.api._usage import USAGE_SCOPE
from flink_agents.api.core_options import (
    AgentConfigOptions,
    AgentExecutionOptions,
    ErrorHandlingStrategy,
)
from flink_agents.api.events.event import ErrorEvent, Event, InputEvent, OutputEvent
from flink_agents.api.events.listener import EventContext, EventListener
from flink_agents.api.events.memory_event import MEMORY_EVENT_TYPES
from flink_agents.api.events.run_event import AGENT_RUN_BEGIN_ACTION, AgentRunBeginEvent
from flink_agents.api.hooks import HookContext, HookPoint
from flink_agents.api.resource import ResourceType
from flink_agents.api.timeouts import TimeoutOptions, bounded, check_timeout
from flink_agents.errors import (
    ActionError,
    ConfigurationError,
    EventAttributeError,
    HookError,
    InputRecordError,
    RunLimitError,
    RuntimeFailure,
)
from flink_agents.plan.agent_plan import ActionPlan, AgentPlan
from flink_agents.plan.behaviours import run_hooks
from flink_agents.runtime.core.conditions import ConditionalActions
from flink_agents.runtime.core.context import RunContext, _Run
from flink_agents.runtime.core.failures import (
    CYCLE_WINDOW,
    DeadLettered,
    dead_letter,
    describe_cycle,
)
from flink_agents.runtime.core.memory_events import (
    MemoryEventSettings,
    ObservedRunContext,
    run_begin_event,
)
from flink_agents.runtime.core.records import DurableRecord, RunPaused, RunResult
from flink_agents.runtime.governance import ModelGovernance, commit_key_tokens
from flink_agents.runtime.long_term_memory import LongTermMemoryService
from flink_agents.runtime.memory import StoredMemoryObject
from flink_agents.runtime.metric_groups import SimpleMetricGroup
from flink_agents.runtime.observability import (
    ActionFinished,
    EventsSent,
    RunCounts,
    RunFinished,
    RunInfo,
    RunObserver,
    combine,
)
from flink_agents.runtime.observability.agent_metrics import AgentMetrics, MetricsOptions
from flink_agents.runtime.resources import ResourceCache
from flink_agents.secrets import mask_exception, registered_masker

log = logging.getLogger("flink_agents.runtime")

_CoroutineType = types.CoroutineType

#: Events the runtime makes for whoever wants them: no warning when no action listens.
_FRAMEWORK_TYPES = MEMORY_EVENT_TYPES | {AgentRunBeginEvent.EVENT_TYPE}
#: What ends a run early without failing it outright (see ``AgentRunner._ended``).
_ENDINGS = (RunPaused, DeadLettered, InputRecordError, RunLimitError)


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
        self.plan = plan
        self.config = plan.get_config()
        self.metrics = SimpleMetricGroup("agent")
        self.resources = resources or ResourceCache(plan, metrics=self.metrics)
        self.resources.metrics = self.metrics
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.config.get(AgentExecutionOptions.NUM_ASYNC_THREADS),
            thread_name_prefix="flink-agents-call",
        )
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
        #: Chat model setups as model calls use them, by name: ``(setup, its class's
        #: achat, deadline, bounded achat)`` (``plan/actions/calls.py: _model_of``).
        self.model_calls: dict[str, tuple[Any, Any, float | None, Any]] = {}
        # Run ids: a random prefix per runner and a counter (uuid4 per run costs a syscall).
        self._run_prefix = uuid.uuid4().hex[:16]
        self._run_seq = itertools.count(1)
        self.long_term_memory = LongTermMemoryService(self.config, self.resources.get)
        self._strategy = self.config.get(AgentConfigOptions.ERROR_HANDLING_STRATEGY)
        self._max_events = self.config.get(AgentExecutionOptions.MAX_EVENTS_PER_RUN)
        # From this many events on, a run notes what its events send (for the error).
        self._watch_from = max(1, self._max_events - CYCLE_WINDOW)
        self._max_seconds = self.config.get(AgentExecutionOptions.MAX_ACTION_TIME_PER_RUN) or None
        self._dead_letter_chars = self.config.get(AgentExecutionOptions.DEAD_LETTER_MAX_CHARS)
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
                    ErrorHandlingStrategy(
                        a.runtime_config.get("error-handling-strategy", self._strategy)
                    ),
                    check_timeout(
                        a.runtime_config.get("timeout", action_timeout), f"action {a.name!r}"
                    ),
                    counts.setdefault(a.name, [0]),
                )
                for a in plan.get_actions(etype)
            ]
            for etype in plan.actions_by_event
        }
        #: Actions with trigger-condition expressions and their compiled conditions (None
        #: when the plan has none: the loop then only looks exact types up).
        self._conditional: ConditionalActions | None = None
        if plan.conditional_actions():
            self._conditional = ConditionalActions(
                plan,
                lambda a: (
                    a,
                    a.function,
                    ErrorHandlingStrategy(a.config.get("error-handling-strategy", self._strategy)),
                    check_timeout(a.config.get("timeout", action_timeout), f"action {a.name!r}"),
                    counts.setdefault(a.name, [0]),
                ),
                self.config.get(AgentConfigOptions.CONDITION_EVALUATION_FAILURE_STRATEGY),
            )
        if self.config.get(MetricsOptions.ENABLED):
            self.agent_metrics = AgentMetrics(self.metrics, self.counts)
            self.observer = self.agent_metrics
        #: Open a usage scope (``api/_usage.py``) around each action execution, so the
        #: tokens embedding calls report are booked to the action: only while metrics are
        #: counted for a plan with embedding models (the scope costs a context-variable
        #: set and reset per action).
        self._usage_scoped = self.agent_metrics is not None and bool(
            plan.resource_providers.get(ResourceType.EMBEDDING_MODEL)
        )
        #: Token budgets and the response cache (None: neither is configured).
        self.governance: ModelGovernance | None = (
            ModelGovernance(self.config, self.metrics, lambda: self.resources.parallelism)
            if ModelGovernance.configured(self.config)
            else None
        )
        self._key_budget = self.governance is not None and self.governance.key_budget is not None
        #: Event listeners (None: none, and the loop skips them).
        self._listeners: tuple[EventListener, ...] | None = None
        #: Which memory operations become memory events (None: none).
        settings = MemoryEventSettings.from_config(self.config)
        self.memory_event_settings: MemoryEventSettings | None = settings if settings.any else None
        #: What the loop makes an action's context from (see :meth:`_choose_context`).
        self._context_class: type[RunContext] = RunContext
        #: Send an AgentRunBeginEvent at the start of each run (off by default, as upstream).
        self._run_begin = bool(self.config.get(AgentExecutionOptions.AGENT_RUN_BEGIN_EVENT))
        for listener in _configured_listeners(self.config.get(AgentConfigOptions.EVENT_LISTENERS)):
            self.add_listener(listener)
        self._choose_context()

    def add_listener(self, listener: EventListener) -> None:
        """Tell ``listener`` of every event the runs process, before their actions run."""
        self._listeners = (*(self._listeners or ()), listener)

    def _choose_context(self) -> None:
        """The class of every action's context: :class:`ObservedRunContext` while any
        memory operation becomes an event, else the plain :class:`RunContext`, whose memory
        path has no observation code (memory events switched off cost nothing there)."""
        observed = self.memory_event_settings is not None
        self._context_class = ObservedRunContext if observed else RunContext

    def _notify_listeners(self, run: _Run, event: Event) -> None:
        context = EventContext(
            event.type,
            datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z"),
            run.key,
        )
        for listener in self._listeners or ():
            try:
                listener.on_event_processed(context, event)
            except Exception:
                log.exception(
                    "event listener %s failed on event %s (type %r, key %r); the run goes on",
                    type(listener).__name__,
                    event.id,
                    event.type,
                    run.key,
                )

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
            self.model_calls.clear()  # their setups are closed with the resources
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
            steps = None
            if observer is not None:
                steps = observer if observer.observes_steps else None
                if steps is not None:
                    run_id = f"{self._run_prefix}{next(self._run_seq):08x}"
                    info = run.info = RunInfo(key, run_id, time.time(), time.perf_counter())
                else:  # metrics only: no id, no wall-clock time needed
                    info = run.info = RunInfo(key, "", 0.0, time.perf_counter())
                observer.run_started(info)
            try:
                # _execute's body, inline: one coroutine frame less per run.
                try:
                    if self._agent_hooks:
                        result = await self._run_with_agent_hooks(run, value, steps)
                    else:
                        await self._run_events(run, value, steps)
                        result = self._finished(run)
                except _ENDINGS as ending:
                    result = self._ended(run, value, ending)
            except BaseException as exc:
                if observer is not None:
                    observer.run_finished(
                        RunFinished(info, time.perf_counter() - info.started_perf, exc)
                    )
                raise
            if observer is not None:
                observer.run_finished(
                    RunFinished(info, time.perf_counter() - info.started_perf, run.failure)
                )
            if run.failure is not None:
                counts.runs_failed += 1
            return result
        except BaseException:
            counts.runs_failed += 1
            raise
        finally:
            counts.in_flight -= 1
            counts.runs += 1
            counts.events += run.processed

    async def _execute(self, run: _Run, value: Any, steps: RunObserver | None) -> RunResult:
        """The run's body: agent hooks, the actions, and a pause for approval (what
        :meth:`run` does inline; a sub-agent's run calls it)."""
        try:
            if self._agent_hooks:
                return await self._run_with_agent_hooks(run, value, steps)
            await self._run_events(run, value, steps)
        except _ENDINGS as ending:
            return self._ended(run, value, ending)
        return self._finished(run)

    def _finished(self, run: _Run) -> RunResult:
        """The result of a run whose actions ran to the end (or whose ignored failure let
        it end)."""
        if self._key_budget:
            commit_key_tokens(run)
        result = run.result
        result.memory_updates = run.short_term.updates
        result.memory_deletes = sorted(run.short_term.deletes)
        return result

    def _ended(self, run: _Run, value: Any, ending: BaseException) -> RunResult:
        """The result of a run ended by ``ending`` (one of ``_ENDINGS``): a pause for
        approval, a dead letter, a poison input or a runaway run under the agent's
        strategy; raises ``ending`` when the strategy is to fail."""
        result = run.result
        if isinstance(ending, RunPaused):
            # Nothing of the run is committed but its durable records: the resumed run
            # sends its outputs and memory changes again (up to the pause from the log).
            return RunResult(
                key=run.key,
                outputs=[ending.request],
                durable_records=result.durable_records,
                approval=ending.request,
                approval_call_id=ending.call_id,
            )
        if isinstance(ending, DeadLettered):
            return self._dead_lettered(run, value, ending.error, ending.action, ending.event_type)
        # The run cannot go on (a poison record, a runaway run): the agent's strategy
        # decides; retrying would fail the same way.
        poison = isinstance(ending, InputRecordError)
        if self._strategy is ErrorHandlingStrategy.DEAD_LETTER:
            event_type = InputEvent.EVENT_TYPE if poison else None
            return self._dead_lettered(run, value, ending, None, event_type)
        if self._strategy is not ErrorHandlingStrategy.IGNORE:
            raise ending
        log.error("ignored failure: %s", ending)
        run.failure = ending
        result.errors.append(
            ErrorEvent(
                key=_jsonable_key(run.key),
                action=None,
                failed_event_id=str(getattr(ending, "event_id", None) or ""),
                failed_event_type=InputEvent.EVENT_TYPE if poison else None,
                error_type=type(ending).__name__,
                error=_mask(str(ending)),
            )
        )
        # A runaway run keeps what it did so far, as an ignored failure goes on.
        return self._finished(run)

    def _dead_lettered(
        self,
        run: _Run,
        value: Any,
        error: BaseException,
        action: str | None,
        event_type: str | None,
    ) -> RunResult:
        """The result of a run set aside: nothing of it committed, one dead letter."""
        run.failure = error
        self.counts.dead_letters += 1
        log.error("run of key %r sent to the dead letters: %s", run.key, error)
        letter = dead_letter(
            run.key,
            value,
            error,
            action=action,
            event_type=event_type,
            max_chars=self._dead_letter_chars,
        )
        return RunResult(key=run.key, dead_letter=letter)

    def _run_events(
        self, run: _Run, value: Any, steps: RunObserver | None
    ) -> Coroutine[Any, Any, None]:
        """Send the input through the actions until no event is left (a plain function
        returning the coroutine that does it: one coroutine frame less per run)."""
        try:
            first = InputEvent.of_record(value)
        except (EventAttributeError, RecursionError) as exc:
            self.counts.rejected += 1
            raise InputRecordError(
                f"the input record cannot become an input event: {exc}", key=run.key
            ) from None
        queue: deque[Event] = deque([first])
        if steps is not None:
            steps.events_sent(EventsSent(run.info, list(queue), None, None))  # type: ignore[arg-type]
        if self._run_begin:
            return self._begin_run(run, queue, steps)
        return self._drive(run, queue, steps)

    async def _begin_run(self, run: _Run, queue: deque[Event], steps: RunObserver | None) -> None:
        """Run with an :class:`AgentRunBeginEvent` first, as upstream sends it: after the
        input event was taken up (listeners hear of the input first), before any action;
        its actions run before the input's. Its parent is the input event, its sender the
        virtual action ``agent_run_begin_action``."""
        begin = run_begin_event(run.key, run.short_term)
        if begin is None:
            await self._drive(run, queue, steps)
            return
        input_event = queue[0]
        if steps is not None:
            steps.events_sent(EventsSent(run.info, [begin], input_event, AGENT_RUN_BEGIN_ACTION))  # type: ignore[arg-type]
        if self._listeners is not None:
            self._notify_listeners(run, input_event)
        queue.appendleft(begin)
        await self._drive(run, queue, steps, notified=input_event)

    async def _drive(
        self,
        run: _Run,
        queue: deque[Event],
        observer: RunObserver | None,
        notified: Event | None = None,
    ) -> None:
        """Send the events of ``queue`` (and what their actions send) through the actions
        (listeners were told of ``notified`` already)."""
        result = run.result
        info = run.info
        actions_by_event = self._actions_by_event
        listeners = self._listeners
        conditional = self._conditional
        context_class = self._context_class
        observed = context_class is not RunContext
        usage_scoped = self._usage_scoped
        watch_from = self._watch_from
        deadline = None if self._max_seconds is None else time.monotonic() + self._max_seconds
        while queue:
            event = queue.popleft()
            run.processed += 1
            if run.processed >= watch_from:
                self._watch(run, event, queue)
            if deadline is not None and time.monotonic() > deadline:
                raise self._limit_error(run, event, queue, "max-action-time-per-run")
            if listeners is not None and event is not notified:
                self._notify_listeners(run, event)
            if isinstance(event, OutputEvent):
                result.outputs.append(event.output)
            actions = actions_by_event.get(event.type)
            if conditional is not None and not isinstance(event, OutputEvent):
                actions = conditional.match(event, actions, run.key)
            if not actions:
                if not isinstance(event, OutputEvent):
                    self._warn_unheard(event)
                continue
            for action, function, strategy, timeout, executed in actions:
                # The first attempt runs here, not in a coroutine of its own (one per action
                # is measurable per record); failures and retries go to _failed.
                ctx = context_class(run, action, event)
                # Restore points for a failure (MemoryStore.mark, whose None, "no changes
                # yet", is the usual case before an action: tested here, no call).
                short, sensory = run.short_term, run.sensory
                marks = (
                    short.mark() if short.updates or short.deletes else None,
                    sensory.mark() if sensory.updates or sensory.deletes else None,
                )
                perf = time.perf_counter() if observer is not None else 0.0
                error: Exception | None = None
                if usage_scoped:
                    scope: list[tuple[Any, int, int]] = []
                    scope_token = USAGE_SCOPE.set(scope)
                try:
                    returned = function(event, ctx)
                    # A coroutine (an async action) without inspect's Python-level checks.
                    if returned is not None and (
                        type(returned) is _CoroutineType or inspect.isawaitable(returned)
                    ):
                        if timeout is None:
                            await returned
                        else:
                            await _bounded_action(returned, timeout, action)
                    sent = ctx._sent
                    if observed and ctx.noted:  # type: ignore[attr-defined]
                        sent.extend(ctx.memory_events())  # type: ignore[attr-defined]
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - _failed applies the strategy
                    error = exc
                    try:
                        sent = await self._failed(
                            run, action, function, strategy, timeout, event, marks, exc
                        )
                    except BaseException as final:
                        if observer is not None:
                            self._action_ended(observer, run, action, event, perf, final, "failed")
                        raise
                finally:
                    # Counted when the execution ended (however it ended).
                    executed[0] += 1
                    if usage_scoped:
                        USAGE_SCOPE.reset(scope_token)
                        if scope:
                            self._book_usage(action.name, scope)
                if observer is not None:
                    outcome = None if error is None else run.outcome
                    self._action_ended(observer, run, action, event, perf, error, outcome)
                    # A failed execution's (possibly empty) events end it in the event log:
                    # its calls' usage must not go to the next execution's events.
                    if sent or error is not None:
                        observer.events_sent(EventsSent(info, sent, event, action.name))  # type: ignore[arg-type]
                if run.edges is not None:
                    run.edges.append((event.type, action.name, [e.type for e in sent]))
                queue.extend(sent)

    def _book_usage(self, action: str, scope: list[tuple[Any, int, int]]) -> None:
        """Book the tokens resources reported during an action execution to it."""
        metrics = self.agent_metrics
        if metrics is None:
            return
        for resource, prompt_tokens, total_tokens in scope:
            name = self.resources.name_of(resource) or getattr(resource, "model", None) or "?"
            metrics.embedding_usage(action, str(name), prompt_tokens, total_tokens)

    def _watch(self, run: _Run, event: Event, queue: deque[Event]) -> None:
        """Near ``max-events-per-run``: note what events send; past it, end the run."""
        if run.edges is None:
            run.edges = []
        if run.processed > self._max_events:
            raise self._limit_error(run, event, queue, "max-events-per-run")

    def _limit_error(
        self, run: _Run, event: Event, queue: deque[Event], option: str
    ) -> RunLimitError:
        self.counts.over_limit += 1
        edges = run.edges or []
        text, types = describe_cycle(
            edges[-CYCLE_WINDOW:],
            [event.type, *(e.type for e in queue)],
            self.plan.actions_by_event,
        )
        if option == "max-events-per-run":
            what = f"processed {self._max_events} events (max-events-per-run)"
        else:
            what = f"ran its actions for {self._max_seconds:g} s (max-action-time-per-run)"
        return RunLimitError(
            f"the run {what} and was stopped: {text}. An action that sends the event type "
            "it listens to (or two that answer each other) never ends; raise the option "
            "if the run is just long",
            event_types=types,
            key=run.key,
            event_id=str(event.id),
        )

    @staticmethod
    def _action_ended(
        observer: RunObserver,
        run: _Run,
        action: ActionPlan,
        event: Event,
        started: float,
        error: BaseException | None,
        outcome: str | None,
    ) -> None:
        observer.action_finished(
            ActionFinished(
                run.info,  # type: ignore[arg-type]
                action.name,
                event,
                started,
                time.perf_counter() - started,
                error,
                outcome,
            )
        )

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
        if self._key_budget:
            commit_key_tokens(run)
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
                if self._strategy is ErrorHandlingStrategy.DEAD_LETTER:
                    raise DeadLettered(exc, f"hook:{exc.name}", exc.point) from None
                if self._strategy is ErrorHandlingStrategy.IGNORE:
                    log.error("ignored failure: %s", exc)
                    run.result.errors.append(
                        ErrorEvent(
                            key=_jsonable_key(run.key),
                            action=f"hook:{exc.name}",
                            failed_event_id="",
                            failed_event_type=exc.point,
                            error_type=type(exc).__name__,
                            error=_mask(str(exc)),
                        )
                    )
                    return False
                raise

    def _warn_unheard(self, event: Event) -> None:
        if event.type in self._unheard:
            return
        self._unheard.add(event.type)
        if isinstance(event, ErrorEvent) or event.type in _FRAMEWORK_TYPES:
            return  # logged where it was raised; framework events need no listener
        if self._conditional is not None:
            # Expressions may select it for other attribute values: said once, at debug.
            log.debug("no action's trigger condition selected an event of type %r", event.type)
            return
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
                ctx = self._context_class(run, action, event)
                try:
                    returned = function(event, ctx)
                    if returned is not None and inspect.isawaitable(returned):
                        if timeout is None:
                            await returned
                        else:
                            await _bounded_action(returned, timeout, action)
                    run.outcome = "retried"
                    self.counts.retried += 1
                    if isinstance(ctx, ObservedRunContext) and ctx.noted:
                        ctx._sent.extend(ctx.memory_events())
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
                    error=_mask(str(exc)),
                )
                run.result.errors.append(err_event)
                run.outcome = "ignored"
                self.counts.ignored += 1
                # An error in an action handling an ErrorEvent must not loop forever.
                return [] if isinstance(event, ErrorEvent) else [err_event]
            if strategy is ErrorHandlingStrategy.DEAD_LETTER:
                raise DeadLettered(error, action.name, event.type) from mask_exception(exc)
            self.counts.failed += 1
            if error is not exc:
                raise error from mask_exception(exc)
            raise exc


async def _bounded_action(returned: Awaitable[Any], timeout: float, action: ActionPlan) -> None:
    """Await an async action's coroutine for at most ``timeout`` seconds (a synchronous
    action has finished before its timeout could apply)."""

    async def awaited() -> Any:
        return await returned

    await bounded(awaited, timeout, "action", action.name)()


def _mask(text: str) -> str:
    """``text`` masked by the secret rule and the registered secrets (the plan's)."""
    return registered_masker().mask(text)


def _configured_listeners(paths: list[str] | None) -> list[EventListener]:
    """Instances of the ``event-listeners`` classes (``module.ClassName``, no arguments)."""
    listeners: list[EventListener] = []
    for path in paths or []:
        module, _, name = str(path).strip().rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), name) if module else None
        except ImportError as exc:
            raise ConfigurationError(
                f"event-listeners: cannot import {path!r} ({exc}); name a class as "
                "'package.module.ClassName' importable on the workers"
            ) from exc
        if not (isinstance(cls, type) and issubclass(cls, EventListener)):
            raise ConfigurationError(
                f"event-listeners: {path!r} is not an EventListener class; subclass "
                "flink_agents.api.events.listener.EventListener and name it as "
                "'package.module.ClassName'"
            )
        try:
            listeners.append(cls())
        except TypeError as exc:
            raise ConfigurationError(
                f"event-listeners: {path} needs a constructor without arguments ({exc})"
            ) from exc
    return listeners


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
