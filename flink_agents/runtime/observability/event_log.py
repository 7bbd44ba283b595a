"""The event log: every event of a run, and its actions and calls, as JSON lines.

One file per host instance (a Flink subtask, or a local runner):
``{baseLogDir}/events-{jobId}-{taskName}-{subtask}.log``, rotated by size. Each line is one
record with ``record`` = ``event`` (an event sent: key, run id, event id, parent event id,
type, the action that sent it with that execution's start, duration and token usage,
payload), ``action`` (an action execution that sent no logged event, or failed, retried or
was ignored: the others are described by their events), ``call`` (a model, tool or other
durable call) or ``run`` (a run ended; its timestamp is its start). ``flink-agents trace``
reads them back (``runtime/observability/trace.py``).

The run thread (here) serializes each event (pydantic_core, id and type included, so no
event stays alive in the queue and its id needs no JSON of its own) and keeps it with plain
values in the run's list of records, which goes to a bounded queue when the run ends,
pickled with the runs that ended before it (one pickle per 32 runs; bytes: nothing for the
garbage collector to walk until the writer runs). Every ``event-log.flush-ms`` a writer
thread takes what is queued (a part-filled batch too) and what runs still in progress
recorded so far (so a stuck run shows up), makes the lines and writes them
(``event_log_writer.py``). Writing is best effort: a full queue drops records, a failing
disk (full, read-only) drops them too; both are counted (``eventLogDropped``,
``eventLogWriteErrors``) and warned about once, and the job goes on. With the writer
process (``event-log.writer``: ``process``, and ``auto``, the default, in a Flink subtask that
may use 2 or more CPUs) that thread only pickles what it takes down a pipe, and a child
process makes and writes the lines off the job's GIL (``event_log_process.py``).
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_core import PydanticSerializationError, to_json

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.event import Event
from flink_agents.runtime.metric_groups import SimpleMetricGroup
from flink_agents.runtime.observability import (
    ActionFinished,
    CallFinished,
    EventsSent,
    Noted,
    RunFinished,
    RunInfo,
    RunObserver,
)
from flink_agents.runtime.observability.event_log_options import (
    _TYPE_PREFIX,
    EventLogOptions,
    _level,
    default_log_dir,
    writer_kind,
)
from flink_agents.runtime.observability.event_log_writer import (
    _ID_TYPE,
    _error,
    _key,
    _Writer,
    count_records,
    uuid_id_of,
)
from flink_agents.runtime.observability.genai import (
    ModelIdentity,
    model_identity,
    reply_details,
)

if TYPE_CHECKING:
    from flink_agents.runtime.observability.event_log_process import ProcessWriter

__all__ = ["EventLogObserver", "EventLogOptions", "attach_event_log", "default_log_dir"]

log = logging.getLogger("flink_agents.event_log")

_PICKLE = pickle.HIGHEST_PROTOCOL
#: Ended runs per queued item: one pickle call for that many runs (its own cost, about half
#: of what pickling one run's records costs, is paid once for them: ~8k instructions per run
#: less). The writer seals a part-filled batch at each flush, so no run waits longer.
_RUNS_PER_ITEM = 32


def _safe(part: Any) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(part))[:80]


class _RunLog:
    """The records of one run not yet handed to the writer (made on the run thread).

    A run's records go to the queue together when the run ends (no queue operation per
    record; pickled with other ended runs, see :meth:`EventLogObserver._seal`); the writer
    also takes what a run still in progress has recorded at each flush, so a long or stuck
    run shows up in the log while it waits.

    ``records`` is flat: the fields of one record after another, each record starting with
    its kind (layout: ``event_log_writer.SIZES``), appended with one ``extend`` (atomic
    under the GIL). Its fields are plain values (strings, numbers, JSON bytes; ids as their
    JSON): a tuple or a dict per record, or an event or its id kept alive after the event,
    would be one more object for the garbage collector that lives until the writer runs,
    and those survivors made the collector run, full collections included, ~30 us per run
    inside a Flink job.
    """

    __slots__ = (
        "act",
        "act_event",
        "count",
        "early",
        "key",
        "last",
        "last_id",
        "records",
        "run_id",
        "seconds",
        "start",
        "usage",
    )

    def __init__(self, key: Any, run_id: str) -> None:
        self.key = key
        self.run_id = run_id
        self.records: list[Any] = []
        #: Records appended (run thread).
        self.count = 0
        #: Records the writer took while the run was in progress (writer thread).
        self.early = 0
        #: Start (wall clock) and duration (seconds) of the action execution that ended
        #: last, and the token usage of the model calls made since the one before ended:
        #: for the events it sends (the next ``events_sent``).
        self.start: float | None = None
        self.seconds: float | None = None
        self.usage: dict[str, int] | None = None
        #: The action (and its event) of that execution when it ended without an error:
        #: its events say all about it; if it turns out to have sent none, the run's next
        #: hook records it (:meth:`EventLogObserver._flush_action`).
        self.act: str | None = None
        self.act_event: Event | None = None
        #: The last event logged by the run's previous step and its id's JSON.
        self.last: Event | None = None
        self.last_id: bytes | None = None


class EventLogObserver(RunObserver):
    """Records what runs do for the writer (``event_log_writer._Writer``).

    Its hooks run on the run thread of every run, and inside a thread-mode Flink job every
    step there costs the job's GIL: they keep per-run state in plain slots, derive
    timestamps from the ``perf_counter`` values the core passes (no clock read), and leave
    everything else (ms, names, the JSON lines) to the writer. Figures: docs/benchmarks.md.

    Args:
        config: the agent configuration (event log options).
        path: the log file.
        secrets: secret values to mask (the plan's).
        metrics: the agent metric group (for the drop and error counters).
        ids: fields added to every record (``jobId``, ``subtask``).
        writer: ``thread`` or ``process``; by default what ``event-log.writer`` says for
            the local environment (see ``event_log_options.writer_kind``).
        resources: the runner's resource cache: model call records name the provider and
            the requested model (``genai.py``).
    """

    def __init__(
        self,
        config: AgentConfiguration,
        path: str,
        secrets: Sequence[str],
        metrics: SimpleMetricGroup,
        ids: Mapping[str, Any],
        writer: str | None = None,
        resources: Any = None,
    ) -> None:
        self.config = config
        #: The runner's resources (a model call's provider and model: ``genai.py``).
        self._resources = resources
        self._models: dict[str, ModelIdentity] = {}
        self.default_level = config.get(EventLogOptions.LEVEL)
        self._levels: dict[str, str] = {}
        self._max = config.get(EventLogOptions.QUEUE_SIZE)
        #: Ended runs not queued yet: ``(key, run id, records, number of records)``.
        self._ended: deque[tuple[Any, str, list[Any], int]] = deque()
        #: Queued items and how many records each holds: a pickled list of ended runs'
        #: ``(key, run id, records)``, or such a run as it is (one that does not pickle).
        self.queue: deque[tuple[bytes | tuple[Any, str, list[Any]], int]] = deque()
        #: Runs in progress, by run id (the writer takes their records so far).
        self.open: dict[str, _RunLog] = {}
        # Records queued and records the writer took; each is written by one thread only,
        # so their difference is exact without a lock.
        self.queued = 0
        self.taken = 0
        self._slot = id(self)
        self.dropped = metrics.get_counter("eventLogDropped")
        self._warned_drop = False
        self.writer: _Writer | ProcessWriter
        if (writer or writer_kind(config, flink=False)) == "process":
            from flink_agents.runtime.observability.event_log_process import ProcessWriter

            self.writer = ProcessWriter(self, path, list(secrets), metrics, dict(ids))
        else:
            self.writer = _Writer(self, path, secrets, metrics, dict(ids))

    def level_of(self, event_type: str) -> str:
        """The level of an event type (``event-log.type.<type>.level``, else the default)."""
        level = self._levels.get(event_type)
        if level is None:
            own = self.config.get_str(f"{_TYPE_PREFIX}{event_type}.level")
            level = self._levels[event_type] = _level(own) if own else self.default_level
        return level

    def _put(self, run_log: _RunLog) -> None:
        # Those the writer took while the run was in progress are written already.
        n = run_log.count - run_log.early
        if self.queued - self.taken + n > self._max:
            self.dropped.inc(n)
            if not self._warned_drop:
                self._warned_drop = True
                log.warning(
                    "event log queue full (%d records): records are dropped and counted in "
                    "eventLogDropped; raise event-log.queue-size or lower event-log.level",
                    self._max,
                )
            return
        self.queued += n
        key = run_log.key
        if type(key) is not str:  # (the usual key needs no look)
            key = _key(key)
        ended = self._ended
        ended.append((key, run_log.run_id, run_log.records, n))
        if len(ended) >= _RUNS_PER_ITEM:
            self._seal()

    def _seal(self) -> None:
        """Queue the ended runs not queued yet as one pickled item. Bytes are no work for
        the garbage collector: runs' lists kept until the writer runs were survivors of each
        young collection, which then ran every ~100 runs (~10 us per run inside a Flink
        job); up to 32 of them are not. The run thread seals every ``_RUNS_PER_ITEM`` runs,
        the writer what is left at each flush: ``popleft`` is atomic, so each run is taken by
        one of them."""
        ended = self._ended
        runs: list[tuple[Any, str, list[Any]]] = []
        counts: list[int] = []
        for _ in range(len(ended)):
            try:
                key, run_id, records, n = ended.popleft()
            except IndexError:  # the other thread took the rest
                break
            runs.append((key, run_id, records))
            counts.append(n)
        if not runs:
            return
        queue = self.queue
        try:
            queue.append((pickle.dumps(runs, _PICKLE), sum(counts)))
        except Exception:  # noqa: BLE001 - a record that does not pickle: run by run
            for run, n in zip(runs, counts, strict=True):
                item: bytes | tuple[Any, str, list[Any]] = run
                try:
                    item = pickle.dumps([run], _PICKLE)
                except Exception:  # noqa: BLE001 - that run as it is
                    pass
                queue.append((item, n))

    def _new_log(self, run: RunInfo) -> _RunLog:
        run_log = run.data[self._slot] = self.open[run.run_id] = _RunLog(run.key, run.run_id)
        return run_log

    @staticmethod
    def _flush_action(run_log: _RunLog) -> None:
        """Record the action execution that ended without an error and sent no logged event
        (called by the next hook of its run, before it changes ``start`` or ``usage``)."""
        event: Event = run_log.act_event  # type: ignore[assignment]
        run_log.records.extend(
            (
                "action",
                run_log.start,
                run_log.act,
                to_json(event.id),
                event.type,
                run_log.seconds,
                None,
                None,
            )
        )
        run_log.count += 1
        run_log.act = run_log.act_event = None
        # Its model calls' usage is on their call records; none of it goes to the events of
        # the next execution.
        run_log.start = run_log.seconds = run_log.usage = None

    # -- observer ------------------------------------------------------------------------------
    def run_started(self, run: RunInfo) -> None:
        self._new_log(run)

    def events_sent(self, sent: EventsSent) -> None:
        run, events, parent, action = sent.run, sent.events, sent.parent, sent.action
        run_log = run.data.get(self._slot)
        if run_log is None:  # a run that started before this observer was added
            run_log = self._new_log(run)
        # The execution that ended last sent these (the input: none): its fields go with
        # each of them, and its end is when they were sent.
        start, seconds, usage = run_log.start, run_log.seconds, run_log.usage
        now = run.started if start is None or seconds is None else start + seconds
        if parent is None:
            parent_id = None
        elif parent is run_log.last:  # the event the previous step sent: its id is known
            parent_id = run_log.last_id
        else:
            parent_id = to_json(parent.id)
        extend = run_log.records.extend
        levels = self._levels
        last = last_id = None
        n = 0
        for event in events:
            event_type = event.type
            level = levels.get(event_type) or self.level_of(event_type)
            if level == "OFF":
                continue
            # The event's JSON, made here (pydantic_core, ~1-3 us): a kept event would keep
            # its object graph alive until the writer runs, and the garbage collector's walks
            # over those survivors cost more than this (measured: ~50 us per run). With its
            # id and type (the writer takes the id from it): cheaper than excluding them.
            event_id = None
            body: bytes | Event
            try:
                serializer = event.__pydantic_serializer__
                try:
                    # Without a fallback: ~5 % fewer instructions; a value JSON cannot hold
                    # raises, and the event is written again with its str().
                    body = data = serializer.to_json(event)
                except PydanticSerializationError:
                    body = data = serializer.to_json(event, fallback=str)
                data_id = uuid_id_of(data)
                if data_id is not None:
                    last, last_id = event, data_id
                else:  # a class that writes itself otherwise
                    event_id = to_json(event.id, fallback=str)
                    body = to_json(event, fallback=str, exclude=_ID_TYPE)
            except Exception:  # noqa: BLE001 - the writer reports it as an error record
                body = event
                event_id = to_json(event.id, fallback=str)
            extend(
                (
                    "event",
                    now,
                    event_id,
                    event_type,
                    body,
                    parent_id,
                    action,
                    level,
                    start,
                    seconds,
                    usage,
                )
            )
            n += 1
        # The last event sent is usually the next step's parent (kept until then: not a
        # survivor until the writer runs).
        run_log.last, run_log.last_id = last, last_id
        if n:
            run_log.count += n
            run_log.act = run_log.act_event = None  # its events carry the execution
        elif run_log.act is not None:
            self._flush_action(run_log)
        run_log.start = run_log.seconds = run_log.usage = None

    def action_finished(self, finished: ActionFinished) -> None:
        run, action, event = finished.run, finished.action, finished.event
        seconds, error, outcome = finished.seconds, finished.error, finished.outcome
        run_log = run.data.get(self._slot)
        if run_log is None:
            run_log = self._new_log(run)
        elif run_log.act is not None:
            self._flush_action(run_log)
        start = run_log.start = run.started + (finished.started - run.started_perf)
        run_log.seconds = seconds  # in seconds: the writer makes it ms (off this thread)
        if error is None and outcome is None:
            # The events it sends say all this (action, parentEventId, actionStart,
            # durationMs): an action record only if it sends none (see _flush_action).
            run_log.act = action
            run_log.act_event = event
            return
        error_text = _error(error)
        run_log.records.extend(
            ("action", start, action, to_json(event.id), event.type, seconds, error_text, outcome)
        )
        run_log.count += 1

    def call_finished(self, call: CallFinished) -> None:
        run, kind = call.run, call.kind
        run_log = run.data.get(self._slot)
        if run_log is None:
            run_log = self._new_log(run)
        elif run_log.act is not None:
            self._flush_action(run_log)
        usage = genai = None
        extra = None
        if kind == "model":
            extra = getattr(call.result, "extra_args", None)
            identity = self._models.get(call.name)
            if identity is None:
                identity = self._models[call.name] = model_identity(self._resources, call.name)
            reply = reply_details(call.result) if extra else None
            genai = (
                identity.provider,
                identity.model,
                reply.model if reply is not None else None,
                reply.finish_reason if reply is not None else None,
            )
        if extra:
            usage = extra.get("usage")
            if usage:
                total = run_log.usage
                if total is None:
                    total = run_log.usage = {
                        "prompt_tokens": 0,
                        "completion_tokens": 0,
                        "total_tokens": 0,
                    }
                prompt = int(usage.get("prompt_tokens") or 0)
                completion = int(usage.get("completion_tokens") or 0)
                total["prompt_tokens"] += prompt
                total["completion_tokens"] += completion
                total["total_tokens"] += int(usage.get("total_tokens") or prompt + completion)
        rate = None
        if extra and ("throttled" in extra or "wait_ms" in extra or "cached" in extra):
            rate = {
                k: v
                for k, v in (
                    ("throttled", extra.get("throttled")),
                    ("waitMs", extra.get("wait_ms")),
                    ("cached", extra.get("cached")),
                )
                if v
            }
        run_log.count += 1
        run_log.records.extend(
            (
                "call",
                run.started + (call.started - run.started_perf),
                call.action,
                kind,
                call.name,
                call.seconds,
                usage,
                _error(call.error),
                call.replayed,
                genai,
                rate or None,
            )
        )

    def noted(self, note: Noted) -> None:
        run = note.run
        run_log = run.data.get(self._slot)
        if run_log is None:
            run_log = self._new_log(run)
        elif run_log.act is not None:
            self._flush_action(run_log)
        run_log.count += 1
        run_log.records.extend(("note", time.time(), note.action, note.kind, dict(note.fields)))

    def run_finished(self, finished: RunFinished) -> None:
        run = finished.run
        run_log = run.data.pop(self._slot, None)
        if run_log is None:
            run_log = self._new_log(run)
            del run.data[self._slot]
        elif run_log.act is not None:
            self._flush_action(run_log)
        self.open.pop(run.run_id, None)
        run_log.records.extend(("run", run.started, finished.seconds, _error(finished.error)))
        run_log.count += 1
        run_log.last = None
        self._put(run_log)

    def take(self) -> Iterator[bytes | tuple[Any, str, list[Any]]]:
        """What a writer takes at a flush: the queued items of ended runs (a pickled list of
        ``(key, run id, records)``, or one such run as it is: see :meth:`_seal`; the runs
        that ended since the last batch are sealed first), then ``(key, run id, records)``
        of what runs in progress recorded so far (flat lists, see :class:`_RunLog`)."""
        self._seal()
        queue = self.queue
        while queue:
            item, n = queue.popleft()
            self.taken += n
            yield item
        # Runs in progress: under the GIL the copy and the deletion of that many records
        # from the front are each atomic, and the run thread only appends, so no record is
        # lost or written twice.
        for run_log in list(self.open.values()):
            records = run_log.records
            n = len(records)
            if n:
                taken = records[:n]
                del records[:n]
                run_log.early += count_records(taken)
                yield _key(run_log.key), run_log.run_id, taken

    def close(self) -> None:
        """Write what is queued and stop the writer thread."""
        self.writer.close()


def attach_event_log(
    runner: Any, *, job_id: Any, task_name: Any, subtask: Any, flink: bool = False
) -> EventLogObserver | None:
    """Add an event log to ``runner`` (an ``AgentRunner``) when ``event-log.enabled``;
    the runner closes it. Returns it, or None when the log is off. ``flink``: the host is
    a Flink subtask (``event-log.writer: auto`` may then choose the writer process)."""
    config: AgentConfiguration = runner.config
    if not config.get(EventLogOptions.ENABLED):
        return None
    base = config.get(EventLogOptions.BASE_LOG_DIR) or default_log_dir()
    name = f"events-{_safe(job_id)}-{_safe(task_name)}-{_safe(subtask)}.log"
    secrets = [v for v in runner.plan.secrets.values() if isinstance(v, str)]
    observer = EventLogObserver(
        config,
        os.path.join(base, name),
        secrets,
        runner.metrics,
        {"jobId": str(job_id), "subtask": subtask},
        writer_kind(config, flink=flink),
        resources=runner.resources,
    )
    runner.add_observer(observer, observer.close)
    return observer
