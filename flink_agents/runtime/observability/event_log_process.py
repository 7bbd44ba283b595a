"""The event log's writer process (``event-log.writer``: ``process``; ``auto``, the default,
picks it in a Flink subtask that may use 2 or more CPUs).

Formatting the lines and writing them costs the job's Python process CPU and, worse inside a
thread-mode Flink job, the GIL its operator and loop threads wait for (held ~92 % of the time
in the benchmark). So a child process (the same interpreter) does it: the parent's feeder
thread takes what runs recorded, every ``event-log.flush-ms``, and sends it down a pipe in
length-prefixed pickles of up to 8 items (ended runs come pickled by the run thread, 32 to
an item, see ``EventLogObserver._seal``: they go as they are); the child formats the lines
with :class:`_Writer`'s code (the same bytes), rotates the file, and reports what it wrote,
what it could not write and the first write error back over its stdout, which a reader
thread in the parent turns into ``eventLogRecordsWritten``, ``eventLogWriteErrors`` and the
one warning.

The child exits when its stdin reaches EOF (the parent closed it, or died: no orphans). The
run thread never waits for the child: it queues per-run items as before (bounded, drops
counted), and only the feeder thread writes to the pipe (a child that falls behind fills the
pipe, the feeder waits without the GIL, the queue fills and drops are counted). When the
child cannot start (no Python interpreter found next to ``sys.prefix``, a failed import) or
dies, the feeder formats and writes in process, as the ``thread`` writer does, after one
WARNING. With one usable CPU, ``auto`` keeps the thread: the child's CPU would be the job's.
Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
from typing import IO, TYPE_CHECKING, Any

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.runtime.metric_groups import SimpleMetricGroup
from flink_agents.runtime.observability.event_log_options import EventLogOptions
from flink_agents.runtime.observability.event_log_writer import (
    _Writer,
    count_records,
    lines_made,
    runs_of,
    warn_write_error,
)

if TYPE_CHECKING:
    from flink_agents.runtime.observability.event_log import EventLogObserver

log = logging.getLogger("flink_agents.event_log")

_HEADER = struct.Struct("!I")
# Items per frame (an ended runs' item holds up to 32 runs, so up to ~256 runs): its pickle
# is one C call that holds the GIL throughout (ended runs come pickled, so mostly a copy,
# but a run in progress or one that does not pickle is pickled here), so a whole flush's
# worth (thousands of runs) in one could stall the job's threads.
_ITEMS_PER_FRAME = 8
# The options the child formats and rotates with.
_CHILD_OPTIONS = (
    EventLogOptions.MAX_STRING_LENGTH,
    EventLogOptions.MAX_ARRAY_ELEMENTS,
    EventLogOptions.MAX_DEPTH,
    EventLogOptions.MAX_FILE_BYTES,
    EventLogOptions.MAX_FILES,
)


def _dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def find_python() -> str | None:
    """The Python interpreter of this process, as a program (inside a JVM, under pemja,
    ``sys.executable`` may be ``java``): looked for next to ``sys.exec_prefix`` and
    ``sys.prefix``."""
    candidates = []
    if os.path.basename(sys.executable or "").startswith("python"):
        candidates.append(sys.executable)
    for base in (sys.exec_prefix, sys.prefix):
        for name in (f"python{sys.version_info[0]}.{sys.version_info[1]}", "python3"):
            candidates.append(os.path.join(base, "bin", name))
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


class ProcessWriter:
    """The parent side: a feeder thread that sends what runs recorded to the child."""

    def __init__(
        self,
        observer: EventLogObserver,
        path: str,
        secrets: list[str],
        metrics: SimpleMetricGroup,
        ids: dict[str, Any],
    ) -> None:
        self.observer = observer
        self.path = path
        self.interval = observer.config.get(EventLogOptions.FLUSH_MS) / 1000.0
        self.errors = metrics.get_counter("eventLogWriteErrors")
        self.written = metrics.get_counter("eventLogRecordsWritten")
        # Formats in process what cannot be pickled, and everything when the child is gone.
        self.local = _Writer(None, path, secrets, metrics, ids, config=observer.config)
        self._setup = {
            "path": path,
            "secrets": list(secrets),
            "ids": ids,
            "options": {o.key: observer.config.get(o) for o in _CHILD_OPTIONS},
        }
        self.proc: subprocess.Popen[bytes] | None = None
        self._pipe: IO[bytes] | None = None
        self._reader: threading.Thread | None = None
        #: Set once the child runs, or the writing fell back to this process.
        self.started = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._loop, name="flink-agents-event-log", daemon=True
        )
        self._thread.start()

    # -- child ---------------------------------------------------------------------------------
    def _start(self) -> None:
        python = find_python()
        if python is None:
            self._fall_back(f"no Python interpreter found in {sys.exec_prefix}/bin")
            return
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        try:
            proc = subprocess.Popen(
                [python, "-m", "flink_agents.runtime.observability.event_log_process"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
        except OSError as exc:
            self._fall_back(f"{python} did not start: {exc}")
            return
        assert proc.stdout is not None and proc.stdin is not None
        if proc.stdout.readline() != b"ready\n":  # EOF: it failed (its stderr says why)
            proc.wait()
            self._fall_back(f"it exited with status {proc.returncode} at start")
            return
        self.proc, self._pipe = proc, proc.stdin
        self._reader = threading.Thread(
            target=self._read,
            args=(proc.stdout,),
            name="flink-agents-event-log-reader",
            daemon=True,
        )
        self._reader.start()
        self._send(self._setup)

    def _fall_back(self, why: str) -> None:
        log.warning(
            "the event log writer process is not running (%s): the event log is written by a "
            "thread of this process instead (event-log.writer = thread)",
            why,
        )
        self._pipe = None  # a child that died is still waited for at close

    def _read(self, stdout: IO[bytes]) -> None:
        """The child's reports: ``w <written> <errors>`` after each batch, ``! <error>`` for
        the first write error."""
        for line in stdout:
            if line.startswith(b"w "):
                _, written, errors = line.split()
                if int(written):
                    self.written.inc(int(written))
                if int(errors):
                    self.errors.inc(int(errors))
            elif line.startswith(b"! ") and not self.local._warned:
                # One warning whichever wrote first (the child, or this process after it).
                self.local._warned = True
                warn_write_error(self.path, line[2:].decode(errors="replace").rstrip("\n"))

    def _send(self, value: Any) -> None:
        assert self._pipe is not None
        _write_frame(self._pipe, _dumps(value))

    # -- feeder --------------------------------------------------------------------------------
    def _loop(self) -> None:
        try:
            self._start()
        except Exception as exc:  # noqa: BLE001 - the log goes on in process
            self._fall_back(repr(exc))
        self.started.set()
        while not self._stop.wait(self.interval):
            self.drain()
        self.drain()
        self._finish()

    def _finish(self) -> None:
        """Close the pipe: the child writes what it has, reports and exits."""
        if self._pipe is not None:
            try:
                self._pipe.close()
            except OSError:
                pass
            self._pipe = None
        if self.proc is not None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=10)
        self.local.close()

    def close(self) -> None:
        """Send what is left, let the child write it, and wait for it to exit."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=60)

    def drain(self) -> None:
        """Send what ended runs queued and what runs in progress recorded so far."""
        if threading.current_thread() is not self._thread:
            self.started.wait(30)  # a drain from elsewhere (tests) goes to the child too
        with self._lock:
            batch: list[Any] = []
            for item in self.observer.take():
                batch.append(item)  # ended runs' pickle goes as it is
                if len(batch) == _ITEMS_PER_FRAME:
                    self._deliver(batch)
                    batch = []
            if batch:
                self._deliver(batch)

    def _deliver(self, batch: list[Any]) -> None:
        if self._pipe is None:
            self._write_here(batch)
            return
        try:
            data = _dumps(batch)
        except Exception:  # noqa: BLE001 - a value that does not pickle: formatted here
            data = _dumps([self._picklable(item) for item in batch])
        try:
            _write_frame(self._pipe, data)
        except (OSError, ValueError) as exc:  # the child died: this batch is lost
            self.errors.inc(sum(_records_in(item) for item in batch))
            self._fall_back(f"it ended: {exc}")

    def _picklable(self, item: Any) -> Any:
        if type(item) is bytes:  # an ended run, pickled already
            return item
        try:
            _dumps(item)
            return item
        except Exception:  # noqa: BLE001 - the lines are made here then
            key, run_id, records = item
            lines: list[bytes] = []
            self.local._format(key, run_id, records, lines)
            return (lines,)

    def _write_here(self, batch: list[Any]) -> None:
        lines = self.local.lines_of(batch)
        if lines:
            self.local._write(lines)


class _ChildWriter(_Writer):
    """The child's writer: reports its first write error to the parent."""

    def _warn(self, error: str) -> None:
        sys.stdout.buffer.write(b"! " + error.replace("\n", " ").encode() + b"\n")
        sys.stdout.buffer.flush()


def _records_in(item: Any) -> int:
    """The records of a batch item: a run's flat records, or its lines made here."""
    made = lines_made(item)
    if made is not None:
        return len(made)
    return sum(count_records(records) for _, _, records in runs_of(item))


def _write_frame(pipe: IO[bytes], data: bytes) -> None:
    """``data``, length-prefixed (what :func:`_read_frame` reads)."""
    pipe.write(_HEADER.pack(len(data)))
    pipe.write(data)
    pipe.flush()


def _read_exact(stream: IO[bytes], n: int) -> bytes | None:
    data = stream.read(n)
    return data if data is not None and len(data) == n else None


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """The next length-prefixed message; None at EOF (or a message cut short)."""
    header = _read_exact(stream, _HEADER.size)
    if header is None:
        return None
    return _read_exact(stream, _HEADER.unpack(header)[0])


def _child() -> None:
    """The writer process: setup, then batches until EOF on stdin."""
    # Ctrl-C reaches the whole process group: the child ends at EOF, after the parent's
    # last batch, not in the middle of it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = sys.stdout.buffer
    stdin = sys.stdin.buffer
    out.write(b"ready\n")
    out.flush()
    body = _read_frame(stdin)
    if body is None:
        return
    setup = pickle.loads(body)
    metrics = SimpleMetricGroup()
    writer = _ChildWriter(
        None,
        setup["path"],
        setup["secrets"],
        metrics,
        setup["ids"],
        config=AgentConfiguration(setup["options"]),
    )
    written = metrics.get_counter("eventLogRecordsWritten")
    errors = metrics.get_counter("eventLogWriteErrors")
    reported = (0, 0)
    while (body := _read_frame(stdin)) is not None:
        lines = writer.lines_of(pickle.loads(body))
        if lines:
            writer._write(lines)
        now = (written.get_count(), errors.get_count())
        if now != reported:
            out.write(b"w %d %d\n" % (now[0] - reported[0], now[1] - reported[1]))
            out.flush()
            reported = now
    writer.close()


if __name__ == "__main__":
    _child()
