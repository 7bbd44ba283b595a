"""Runs as OpenTelemetry spans (GenAI semantic conventions), exported with the OTel SDK.

One trace per run: a root span ``invoke_agent`` (the run: key, run id, job, subtask, token
totals), a child per action execution, and under each its model calls (``chat {model}``,
kind CLIENT: ``gen_ai.provider.name`` / ``gen_ai.system``, ``gen_ai.request.model``,
``gen_ai.response.model``, ``gen_ai.usage.input_tokens`` / ``output_tokens``, finish
reason) and tool calls (``execute_tool {tool}``: ``gen_ai.tool.name``), other durable calls
as spans of their own. The trace id is derived from the run id (so a run exported live and
again from its event log has one trace id) and decides sampling as the SDK's
``TraceIdRatioBased`` sampler does.

Two sources, one mapping (:func:`run_spans`, over ``trace.Run``):

- **live** (:class:`OtelObserver`, added by ``otel_options.attach_otel`` per subtask or
  local runner): the hooks on the run thread only append plain values to the run's list;
  when the run ends, the list is queued. A thread of the observer's own takes the queue
  every ``otel.flush-ms``, builds the spans and hands them to the exporter in batches of
  ``otel.batch-size``. Best effort: a full queue drops runs, a failing export drops its
  spans; both are counted (``otelSpansDropped``, ``otelExportErrors``) and warned about
  once, and the job goes on. An unsampled run costs one hash at its start.
- **an event log** (:func:`export_event_log`, ``flink-agents trace --otlp``).

Spans are built as the SDK's ``ReadableSpan`` records (what its exporters take) rather than
through a ``Tracer``: their times and ids come from what was recorded, not from a clock.
Secrets: every text attribute and status text is masked by the one secret rule
(:class:`flink_agents.secrets.Masker`: the plan's secret values, URL passwords, secret
parameters and assignments, bearer tokens); no attribute is named after or holds a
configuration value.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import threading
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flink_agents.integrations._extras import require
from flink_agents.runtime.observability import (
    ActionFinished,
    CallFinished,
    RunFinished,
    RunInfo,
    RunObserver,
)
from flink_agents.runtime.observability.genai import (
    ModelIdentity,
    model_identity,
    reply_details,
)
from flink_agents.runtime.observability.otel_options import OtelOptions
from flink_agents.runtime.observability.trace import ActionRun, Call, Run
from flink_agents.secrets import Masker

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = ["OtelObserver", "export_event_log", "make_exporter", "run_spans", "trace_id_of"]

log = logging.getLogger("flink_agents.otel")

_SCOPE = "flink_agents"
_ID64 = (1 << 64) - 1


# -- ids and sampling -----------------------------------------------------------------------------
def trace_id_of(run_id: str) -> int:
    """The trace id of a run: 128 bits of BLAKE2b over its run id (never 0)."""
    value = int.from_bytes(hashlib.blake2b(run_id.encode(), digest_size=16).digest(), "big")
    return value or 1


def _span_id(run_id: str, index: int) -> int:
    digest = hashlib.blake2b(f"{run_id}/{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") or 1


def sampled(trace_id: int, ratio: float) -> bool:
    """Whether a trace is kept at ``ratio``: its low 64 bits below ``ratio * 2**64``, as the
    SDK's ``TraceIdRatioBased`` decides."""
    if ratio >= 1.0:
        return True
    return (trace_id & _ID64) < round(ratio * (_ID64 + 1))


def _error_type(error: str) -> str:
    head = error.split(":", 1)[0].strip()
    return head if head.isidentifier() else "Error"


# -- the mapping ----------------------------------------------------------------------------------
def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


class _Sdk:
    """The OpenTelemetry names the mapping uses (imported on first use, not with the module)."""

    def __init__(self) -> None:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        from flink_agents import __version__

        self.trace = trace
        self.ReadableSpan = ReadableSpan
        self.scope = InstrumentationScope(_SCOPE, __version__)
        self.flags = trace.TraceFlags(trace.TraceFlags.SAMPLED)
        self.unset = trace.Status(trace.StatusCode.UNSET)
        self.client = trace.SpanKind.CLIENT
        self.internal = trace.SpanKind.INTERNAL


_SDK: _Sdk | None = None


def _sdk() -> _Sdk:
    global _SDK
    if _SDK is None:
        _SDK = _Sdk()
    return _SDK


class _Spans:
    """Collects one run's spans (``ReadableSpan``), their ids derived from the run id."""

    def __init__(self, run: Run, resource: Resource, mask: Masker) -> None:
        self.run_id = run.run_id
        self.trace_id = trace_id_of(run.run_id)
        self.resource = resource
        self.mask = mask.mask
        self.sdk = _sdk()
        self.spans: list[ReadableSpan] = []

    def add(
        self,
        name: str,
        kind: Any,
        start: float,
        end: float,
        attributes: dict[str, Any],
        parent: Any,
        error: str | None,
    ) -> Any:
        """Add a span; returns its context (the parent of its children)."""
        sdk = self.sdk
        context = sdk.trace.SpanContext(
            self.trace_id,
            _span_id(self.run_id, len(self.spans)),
            is_remote=False,
            trace_flags=sdk.flags,
        )
        mask = self.mask
        clean = {
            k: mask(v) if isinstance(v, str) else v for k, v in attributes.items() if v is not None
        }
        if error:
            clean["error.type"] = _error_type(error)
            status = sdk.trace.Status(sdk.trace.StatusCode.ERROR, mask(error)[:1000])
        else:
            status = sdk.unset
        self.spans.append(
            sdk.ReadableSpan(
                name=mask(name),
                context=context,
                parent=parent,
                resource=self.resource,
                attributes=clean,
                kind=kind,
                status=status,
                start_time=_ns(start),
                end_time=_ns(max(end, start)),
                instrumentation_scope=sdk.scope,
            )
        )
        return context


def _usage(call: Call) -> tuple[int | None, int | None]:
    if call.replayed or not call.usage:
        return None, None  # a replayed call spent no tokens
    prompt = call.usage.get("prompt_tokens")
    completion = call.usage.get("completion_tokens")
    return (
        int(prompt) if prompt is not None else None,
        int(completion) if completion is not None else None,
    )


def _call_span(spans: _Spans, call: Call, parent: Any) -> None:
    sdk = spans.sdk
    start = call.start
    end = start + call.duration_ms / 1000.0
    common = {"flink_agents.call.replayed": call.replayed}
    if call.kind == "model":
        model = call.model or call.response_model
        prompt, completion = _usage(call)
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": call.provider,
            "gen_ai.system": call.provider,
            "gen_ai.request.model": call.model,
            "gen_ai.response.model": call.response_model,
            "gen_ai.response.id": call.response_id,
            "gen_ai.response.finish_reasons": [call.finish_reason] if call.finish_reason else None,
            "gen_ai.usage.input_tokens": prompt,
            "gen_ai.usage.output_tokens": completion,
            "flink_agents.resource.name": call.name,
            **common,
        }
        name = f"chat {model}" if model else "chat"
        spans.add(name, sdk.client, start, end, attributes, parent, call.error)
    elif call.kind == "tool":
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.type": "function",
            **common,
        }
        spans.add(
            f"execute_tool {call.name}",
            sdk.internal,
            start,
            end,
            attributes,
            parent,
            call.error,
        )
    else:
        attributes = {"flink_agents.call.name": call.name, **common}
        spans.add(call.name, sdk.internal, start, end, attributes, parent, call.error)


def run_spans(
    run: Run,
    *,
    resource: Resource,
    agent_name: str | None = None,
    mask: Masker | None = None,
) -> list[ReadableSpan]:
    """The spans of one run: the run, its action executions, their calls (see the module
    docstring for names and attributes)."""
    spans = _Spans(run, resource, mask or Masker())
    internal = spans.sdk.internal
    ends = [a.start + a.duration_ms / 1000.0 for a in run.actions]
    ends += [c.start + c.duration_ms / 1000.0 for c in run.calls]
    if run.duration_ms is not None:
        end = run.start + run.duration_ms / 1000.0
    else:  # still running when the log was read
        end = max(ends, default=run.start)
    prompt = completion = 0
    for action in run.actions:
        for call in action.calls:
            p, c = _usage(call) if call.kind == "model" else (None, None)
            prompt += p or 0
            completion += c or 0
    for call in run.calls:
        p, c = _usage(call) if call.kind == "model" else (None, None)
        prompt += p or 0
        completion += c or 0
    root_attributes: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent_name,
        "flink_agents.key": run.key if isinstance(run.key, str) else repr(run.key),
        "flink_agents.run_id": run.run_id,
        "flink_agents.job_id": None if run.job_id is None else str(run.job_id),
        "flink_agents.subtask": run.subtask if isinstance(run.subtask, int) else None,
        "flink_agents.run.status": run.status,
        "gen_ai.usage.input_tokens": prompt or None,
        "gen_ai.usage.output_tokens": completion or None,
    }
    root = spans.add(
        f"invoke_agent {agent_name}" if agent_name else "invoke_agent",
        internal,
        run.start,
        end,
        root_attributes,
        None,
        run.error,
    )
    for action in run.actions:
        attributes = {
            "flink_agents.action.name": action.name,
            "flink_agents.event.type": action.event_type,
            "flink_agents.event.id": action.event_id,
            "flink_agents.action.outcome": action.outcome,
        }
        context = spans.add(
            f"action {action.name}",
            internal,
            action.start,
            action.start + action.duration_ms / 1000.0,
            attributes,
            root,
            action.error,
        )
        for call in action.calls:
            _call_span(spans, call, context)
    for call in run.calls:
        _call_span(spans, call, root)
    return spans.spans


# -- exporters ------------------------------------------------------------------------------------
def _http_endpoint(endpoint: str) -> str:
    """A base URL gets OTLP/HTTP's traces path; a URL with a path is kept."""
    scheme, rest = endpoint.split("://", 1)
    if "/" not in rest or (rest.endswith("/") and rest.count("/") == 1):
        return f"{scheme}://{rest.rstrip('/')}/v1/traces"
    return endpoint


def make_exporter(kind: str, endpoint: str | None, *, timeout: float = 10.0) -> SpanExporter:
    """An OTel SDK span exporter: ``otlp-http``, ``otlp-grpc`` or ``console``.

    Raises:
        MissingExtraError: its package is not installed (the ``otel`` extra).
    """
    user = "the OpenTelemetry export"
    require("opentelemetry.sdk.trace", extra="otel", user=user)
    if kind == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(
            out=sys.stdout, formatter=lambda span: span.to_json(indent=None) + os.linesep
        )
    if kind == "otlp-grpc":
        module = require(
            "opentelemetry.exporter.otlp.proto.grpc.trace_exporter", extra="otel", user=user
        )
        grpc_args: dict[str, Any] = {"timeout": timeout}
        if endpoint:
            grpc_args["endpoint"] = endpoint.split("://", 1)[-1].rstrip("/")
            grpc_args["insecure"] = endpoint.startswith("http://")
        return module.OTLPSpanExporter(**grpc_args)
    module = require(
        "opentelemetry.exporter.otlp.proto.http.trace_exporter", extra="otel", user=user
    )
    http_args: dict[str, Any] = {"timeout": timeout}
    if endpoint:
        http_args["endpoint"] = _http_endpoint(endpoint)
    return module.OTLPSpanExporter(**http_args)


def make_resource(service_name: str | None, **attributes: Any) -> Resource:
    """The spans' resource: ``service.name`` (None: ``OTEL_SERVICE_NAME`` or flink-agents)
    and the given attributes (None values left out), over what ``OTEL_RESOURCE_ATTRIBUTES``
    says."""
    from opentelemetry.sdk.resources import Resource

    attrs = {k: v for k, v in attributes.items() if v is not None}
    if service_name is not None:
        attrs["service.name"] = service_name
    elif not os.environ.get("OTEL_SERVICE_NAME"):
        attrs["service.name"] = OtelOptions.SERVICE_NAME.default
    return Resource.create(attrs)


def _export(exporter: SpanExporter, spans: Sequence[ReadableSpan], batch: int) -> tuple[int, int]:
    """Export ``spans`` in batches; ``(exported, failed)`` (after a failed batch the rest is
    not tried: the collector is down or refuses, and each try would wait its timeout)."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    done = 0
    for i in range(0, len(spans), batch):
        part = spans[i : i + batch]
        try:
            ok = exporter.export(part) is SpanExportResult.SUCCESS
        except Exception:
            log.debug("span export raised", exc_info=True)
            ok = False
        if not ok:
            return done, len(spans) - done
        done += len(part)
    return done, 0


# -- live -----------------------------------------------------------------------------------------
class OtelObserver(RunObserver):
    """Records sampled runs on the run thread; a thread of its own exports them.

    Args:
        exporter: the span exporter (see :func:`make_exporter`).
        resource: the spans' resource (service, job, subtask).
        resources: the runner's resource cache (to name a model call's provider and model).
        secrets: secret values to mask (the plan's).
        metrics: the runner's metric group (``otelSpansExported``, ``otelSpansDropped``,
            ``otelExportErrors``).
        agent_name: ``gen_ai.agent.name`` (the plan's name), if any.
        job_id: the job (on the root spans).
        subtask: the subtask index (on the root spans).
        sample_ratio: share of runs exported.
        flush_seconds: how often the thread exports.
        queue_size: spans that may wait; more are dropped.
        batch_size: spans per export request.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        resource: Resource,
        *,
        resources: Any = None,
        secrets: Sequence[str] = (),
        metrics: Any = None,
        agent_name: str | None = None,
        job_id: Any = None,
        subtask: Any = None,
        sample_ratio: float = 1.0,
        flush_seconds: float = 1.0,
        queue_size: int = 20_000,
        batch_size: int = 512,
    ) -> None:
        self.exporter = exporter
        self.resource = resource
        self.resources = resources
        self.mask = Masker(secrets)
        self.agent_name = agent_name
        self.job_id = None if job_id is None else str(job_id)
        self.subtask = subtask
        self.ratio = float(sample_ratio)
        self.queue_size = queue_size
        self.batch_size = batch_size
        self._slot = id(self)
        self._models: dict[str, ModelIdentity] = {}
        #: Ended runs: ``(info, seconds, error, records, spans)``.
        self.queue: deque[tuple[RunInfo, float, str | None, list[Any], int]] = deque()
        # Spans queued and taken: each written by one thread, so the difference is exact.
        self.queued = 0
        self.taken = 0
        self._warned_drop = False
        self._warned_export = False
        if metrics is not None:
            self.exported = metrics.get_counter("otelSpansExported")
            self.dropped = metrics.get_counter("otelSpansDropped")
            self.errors = metrics.get_counter("otelExportErrors")
        else:
            from flink_agents.runtime.metric_groups import Counter

            self.exported, self.dropped, self.errors = Counter(), Counter(), Counter()
        self._interval = flush_seconds
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="flink-agents-otel", daemon=True)
        self._thread.start()

    @classmethod
    def for_runner(cls, runner: Any, *, job_id: Any, task_name: Any, subtask: Any) -> OtelObserver:
        """The observer of a runner, configured by its plan's ``otel.*`` options."""
        config = runner.config
        timeout = config.get(OtelOptions.EXPORT_TIMEOUT_MS) / 1000.0
        exporter = make_exporter(
            config.get(OtelOptions.EXPORTER), config.get(OtelOptions.ENDPOINT), timeout=timeout
        )
        service = config.get(OtelOptions.SERVICE_NAME)
        if service == OtelOptions.SERVICE_NAME.default and os.environ.get("OTEL_SERVICE_NAME"):
            service = None  # the environment's name wins over the default
        resource = make_resource(
            service,
            **{
                "flink.job.id": str(job_id),
                "flink.task.name": str(task_name),
                "flink.subtask.index": subtask if isinstance(subtask, int) else None,
            },
        )
        secrets = [v for v in runner.plan.secrets.values() if isinstance(v, str)]
        return cls(
            exporter,
            resource,
            resources=runner.resources,
            secrets=secrets,
            metrics=runner.metrics,
            agent_name=getattr(runner.plan, "name", None),
            job_id=job_id,
            subtask=subtask,
            sample_ratio=config.get(OtelOptions.SAMPLE_RATIO),
            flush_seconds=config.get(OtelOptions.FLUSH_MS) / 1000.0,
            queue_size=config.get(OtelOptions.QUEUE_SIZE),
            batch_size=config.get(OtelOptions.BATCH_SIZE),
        )

    # -- hooks (run thread): plain values only -------------------------------------------------
    def run_started(self, run: RunInfo) -> None:
        if self.ratio < 1.0 and (
            self.ratio <= 0.0 or not sampled(trace_id_of(run.run_id), self.ratio)
        ):
            return
        run.data[self._slot] = []

    def action_finished(self, finished: ActionFinished) -> None:
        records = finished.run.data.get(self._slot)
        if records is None:
            return
        error = finished.error
        event = finished.event
        records.extend(
            (
                "a",
                finished.action,
                event.type,
                event.id,
                finished.started,
                finished.seconds,
                None if error is None else f"{type(error).__name__}: {error}",
                finished.outcome,
            )
        )

    def call_finished(self, call: CallFinished) -> None:
        records = call.run.data.get(self._slot)
        if records is None:
            return
        identity = details = None
        if call.kind == "model":
            identity = self._models.get(call.name)
            if identity is None:
                identity = self._models[call.name] = model_identity(self.resources, call.name)
            details = reply_details(call.result)
        error = call.error
        records.extend(
            (
                "c",
                call.action,
                call.kind,
                call.name,
                call.started,
                call.seconds,
                identity,
                details,
                None if error is None else f"{type(error).__name__}: {error}",
                call.replayed,
            )
        )

    def run_finished(self, finished: RunFinished) -> None:
        run = finished.run
        records = run.data.pop(self._slot, None)
        if records is None:
            return
        spans = 1 + len(records) // 8  # about: actions have 8 fields, calls 10
        if self.queued - self.taken + spans > self.queue_size:
            self.dropped.inc(spans)
            if not self._warned_drop:
                self._warned_drop = True
                log.warning(
                    "OpenTelemetry export queue full (%d spans): runs are dropped and counted "
                    "in otelSpansDropped; raise otel.queue-size or lower otel.sample-ratio",
                    self.queue_size,
                )
            return
        error = finished.error
        self.queued += spans
        self.queue.append(
            (
                run,
                finished.seconds,
                None if error is None else f"{type(error).__name__}: {error}",
                records,
                spans,
            )
        )

    # -- export thread --------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.flush()
        self.flush()

    def _runs(self) -> list[Run]:
        runs: list[Run] = []
        queue = self.queue
        while queue:
            info, seconds, error, records, spans = queue.popleft()
            self.taken += spans
            runs.append(self._run_of(info, seconds, error, records))
        return runs

    def _run_of(self, info: RunInfo, seconds: float, error: str | None, records: list[Any]) -> Run:
        run = Run(
            info.key,
            info.run_id,
            info.started,
            seconds * 1000.0,
            "failed" if error else "ok",
            error,
            self.job_id,
            self.subtask,
        )
        pending: list[tuple[str, Call]] = []
        i = 0
        while i < len(records):
            if records[i] == "c":
                _, action, kind, name, started, secs, identity, details, err, replayed = records[
                    i : i + 10
                ]
                i += 10
                call = Call(kind, name, info.wall_time(started), secs * 1000.0, None, err, replayed)
                if identity is not None:
                    call.provider, call.model = identity
                if details is not None:
                    call.response_model = details.model
                    call.finish_reason = details.finish_reason
                    call.response_id = details.response_id
                    call.usage = details.usage
                pending.append((action, call))
            else:
                _, action, event_type, event_id, started, secs, err, outcome = records[i : i + 8]
                i += 8
                executed = ActionRun(
                    action,
                    event_type,
                    str(event_id),
                    info.wall_time(started),
                    secs * 1000.0,
                    err,
                    outcome,
                )
                # Its calls were reported before it ended (actions of a run run one at a time).
                mine = [c for a, c in pending if a == action]
                executed.calls.extend(mine)
                pending = [(a, c) for a, c in pending if a != action]
                run.actions.append(executed)
        run.calls.extend(c for _, c in pending)  # outside any action (hooks)
        return run

    def flush(self) -> None:
        """Export what ended runs queued (the export thread does it every flush interval)."""
        with self._lock:
            runs = self._runs()
            if not runs:
                return
            spans: list[ReadableSpan] = []
            for run in runs:
                try:
                    spans.extend(
                        run_spans(
                            run, resource=self.resource, agent_name=self.agent_name, mask=self.mask
                        )
                    )
                except Exception:
                    log.exception("cannot make the spans of run %s", run.run_id)
            exported, failed = _export(self.exporter, spans, self.batch_size)
            if exported:
                self.exported.inc(exported)
            if failed:
                self.errors.inc()
                self.dropped.inc(failed)
                if not self._warned_export:
                    self._warned_export = True
                    log.warning(
                        "OpenTelemetry export failed (%d spans dropped, counted in "
                        "otelSpansDropped; further failures only counted): is the collector "
                        "at otel.endpoint reachable?",
                        failed,
                    )

    def close(self) -> None:
        """Export what is queued, stop the thread and shut the exporter down."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._join_timeout())
        try:
            self.exporter.shutdown()
        except Exception:
            log.debug("span exporter shutdown failed", exc_info=True)

    def _join_timeout(self) -> float:
        timeout = getattr(self.exporter, "_timeout", None)
        return float(timeout) + 5.0 if isinstance(timeout, (int, float)) else 15.0


# -- an event log ---------------------------------------------------------------------------------
def export_event_log(
    runs: Sequence[Run],
    exporter: SpanExporter,
    *,
    service_name: str | None = None,
    sample_ratio: float = 1.0,
    agent_name: str | None = None,
    batch_size: int = 512,
) -> tuple[int, int, int]:
    """Export runs read from an event log (``trace.load_runs``) as spans.

    Returns:
        ``(runs exported, spans exported, spans that failed)``.
    """
    mask = Masker()
    resources: dict[tuple[Any, Any], Resource] = {}
    spans: list[ReadableSpan] = []
    kept = 0
    for run in runs:
        if not sampled(trace_id_of(run.run_id), sample_ratio):
            continue
        kept += 1
        ids = (run.job_id, run.subtask)
        resource = resources.get(ids)
        if resource is None:
            resource = resources[ids] = make_resource(
                service_name,
                **{
                    "flink.job.id": None if run.job_id is None else str(run.job_id),
                    "flink.subtask.index": run.subtask if isinstance(run.subtask, int) else None,
                },
            )
        spans.extend(run_spans(run, resource=resource, agent_name=agent_name, mask=mask))
    exported, failed = _export(exporter, spans, batch_size)
    return kept, exported, failed
