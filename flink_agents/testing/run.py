"""``run_agent``: an agent over a bounded list of inputs, in one call, in any mode.

::

    run = run_agent(ReviewAnalysisAgent(), reviews, key="id", mode="thread",
                    resources=model_resources("scripted"))
    assert [o.score for o in run.outputs["r1"]] == [5]
    assert run.metrics["numOfModelCalls"] == 3
    assert run.memory["r1"]["id"] == "r1"

``mode`` is ``"local"`` (the local environment, in this process), ``"thread"`` or
``"process"`` (a Flink MiniCluster job in that ``python.execution-mode``, with checkpoints
every ``checkpoint_interval_ms`` and an exactly-once file sink). Inputs are fed in list
order; ``key`` names each input's key. The result, an :class:`AgentRun`, has the outputs
per key in input order, the key's short-term memory after the run, the event log of the run
and metrics counted from it, the log lines and the compiled plan.

``fail_after=N`` (Flink modes) fails the job once, after the first ``N`` inputs have
finished and a checkpoint taken after that has completed; the job restarts from that
checkpoint and runs the rest. What the result holds is what the exactly-once sink
committed, so a test can assert that no input was lost or repeated
(:func:`~flink_agents.testing.assertions.assert_exactly_once`) and that no model call was
made again (:func:`~flink_agents.testing.assertions.assert_no_repeated_calls`).

How it works: the agent is wrapped in a view with two hooks of the kit
(``flink_agents/testing/_harness.py``): inputs travel with their position and key, and
each run's outputs and memory come back as one capture through the job's sink. On Flink
the inputs come from a replayable ``NumberSequenceSource`` (``from_collection`` is not
rewound on restore) through a map that holds the list.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.approval import ApprovalResponse
from flink_agents.testing._harness import LOG_FORMAT, AgentView, Fed, RunCapture
from flink_agents.testing.event_log import EventLog, read_event_log

if TYPE_CHECKING:
    from flink_agents.testing.cassette import Cassette

__all__ = ["MODES", "AgentRun", "run_agent"]

MODES = ("local", "thread", "process")


@dataclass(frozen=True)
class AgentRun:
    """What ``run_agent`` saw.

    Attributes:
        mode: ``"local"``, ``"thread"`` or ``"process"``.
        inputs: the inputs, as given.
        keys: each input's key, by position.
        captures: one :class:`RunCapture` per committed run (input position, outputs,
            memory after it), in the order the sink committed them.
        event_log: the run's event log records (every attempt's, after a failure).
        logs: log lines of the run (the test process's and, on Flink, the workers').
        plan_json: the compiled plan as JSON (secrets are markers there).
        failures: injected failures that happened (``fail_after``: 1).
        directory: the run's working directory (kept only with ``keep_dir=True``).
    """

    mode: str
    inputs: list[Any]
    keys: list[Any]
    captures: list[RunCapture]
    event_log: EventLog
    logs: list[str]
    plan_json: str
    failures: int = 0
    directory: Path | None = None
    _by_key: dict[Any, list[RunCapture]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        by_key: dict[Any, list[RunCapture]] = {}
        for capture in self.captures:
            by_key.setdefault(capture.key, []).append(capture)
        for runs in by_key.values():
            runs.sort(key=lambda c: -1 if c.seq is None else c.seq)
        object.__setattr__(self, "_by_key", by_key)

    @property
    def outputs(self) -> dict[Any, list[Any]]:
        """The outputs of each key, in input order; every input's key is there (keys in
        order of their first input; an empty list when the key's runs output nothing)."""
        out: dict[Any, list[Any]] = {key: [] for key in dict.fromkeys(self.keys)}
        for key, runs in self._by_key.items():
            out.setdefault(key, [])
            for capture in runs:
                out[key].extend(capture.outputs)
        return out

    @property
    def all_outputs(self) -> list[Any]:
        """Every output, key after key (each key's in input order)."""
        return [o for outs in self.outputs.values() for o in outs]

    def outputs_of(self, key: Any) -> list[Any]:
        """The outputs of ``key`` in input order."""
        return self.outputs.get(key, [])

    def output_of_input(self, index: int) -> list[Any]:
        """The outputs of the input at position ``index``."""
        return [o for c in self.captures if c.seq == index for o in c.outputs]

    @property
    def memory(self) -> dict[Any, dict[str, Any]]:
        """Each key's short-term memory after its last run (nested dicts)."""
        return {key: runs[-1].memory for key, runs in self._by_key.items() if runs}

    def runs_of(self, key: Any) -> list[RunCapture]:
        """The committed runs of ``key``, in input order."""
        return list(self._by_key.get(key, []))

    @property
    def metrics(self) -> dict[str, Any]:
        """Metric counts of the run, from its event log (:meth:`EventLog.metrics`)."""
        return self.event_log.metrics()

    @property
    def log_text(self) -> str:
        """The log lines as one text."""
        return "\n".join(self.logs)


def run_agent(
    agent: Agent,
    inputs: Sequence[Any],
    *,
    key: str | Callable[[Any], Any] | None = None,
    mode: str = "local",
    config: Mapping[str, Any] | None = None,
    parallelism: int = 1,
    fail_after: int | None = None,
    resources: Mapping[str, Any] | None = None,
    cassette: Cassette | None = None,
    flink_config: Mapping[str, str] | None = None,
    checkpoint_interval_ms: int = 200,
    keep_dir: bool = False,
) -> AgentRun:
    """Run ``agent`` over ``inputs`` and return everything a test asserts on.

    Args:
        agent: the agent.
        inputs: the input values, fed in this order (an :class:`ApprovalResponse` goes to
            the key of the run it answers).
        key: each input's key: a field or attribute name (``"id"``: ``record["id"]`` or
            ``record.id``) or a function; None: each input is its own key, its position.
        mode: ``"local"``, ``"thread"`` or ``"process"`` (see the module docstring).
        config: agent configuration (``{"error-handling-strategy": "retry", ...}``).
        parallelism: the Flink job's parallelism (the local mode runs keys concurrently
            in one process and ignores it).
        fail_after: Flink modes: fail the job once after this many inputs (``1`` to
            ``len(inputs) - 1``), with a checkpoint taken after them (see the module
            docstring).
        resources: resources added to the environment (``{name: ResourceDescriptor}``),
            as ``env.add_resource`` would.
        cassette: record or replay the model, embedding and tool calls of the agent's and
            these resources (:class:`~flink_agents.testing.cassette.Cassette`); saved
            after the run when recording.
        flink_config: Flink configuration for the MiniCluster (``{"key": "value"}``),
            applied last.
        checkpoint_interval_ms: Flink modes: the checkpoint interval.
        keep_dir: keep the run's working directory (event log, sink files, logs) and name
            it in :attr:`AgentRun.directory`.

    Raises:
        ValueError: a bad argument (named, with what is expected).
        RuntimeError: the job failed (its error is chained), or the failure of
            ``fail_after`` could not be injected (why is said).
    """
    if not isinstance(agent, Agent):
        raise TypeError(f"run_agent needs an Agent, got {type(agent).__name__}")
    if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
        raise TypeError(f"inputs must be a list of input values, got {type(inputs).__name__}")
    inputs = list(inputs)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if not isinstance(parallelism, int) or parallelism < 1:
        raise ValueError(f"parallelism must be an int >= 1, got {parallelism!r}")
    if fail_after is not None:
        if mode == "local":
            raise ValueError(
                "fail_after needs a Flink mode (mode='thread' or 'process'): the local "
                "environment has no checkpoints to restart from"
            )
        if not isinstance(fail_after, int) or not 1 <= fail_after < len(inputs):
            raise ValueError(
                f"fail_after must be an int from 1 to len(inputs) - 1 = {len(inputs) - 1}, "
                f"got {fail_after!r}: the failure comes after that many inputs and before "
                "the rest"
            )
    keys = [_key_of(value, position, key) for position, value in enumerate(inputs)]
    workdir: Path | None = None
    finished = False
    try:
        view = AgentView(
            agent,
            resources=cassette.resource_mapper() if cassette is not None else None,
            capture=True,
        )
        env_resources = dict(resources or {})
        if cassette is not None:
            env_resources = cassette.wrap_resource_dict(env_resources)
        workdir = Path(tempfile.mkdtemp(prefix="flink-agents-run-"))
        run = _execute(
            view,
            inputs,
            keys,
            env_resources,
            workdir,
            mode=mode,
            config=dict(config or {}),
            parallelism=parallelism,
            fail_after=fail_after,
            flink_config=dict(flink_config or {}),
            checkpoint_interval_ms=checkpoint_interval_ms,
            keep_dir=keep_dir,
        )
        if cassette is not None:
            finished = True
            cassette.finish()
        return run
    finally:
        if cassette is not None and not finished:
            cassette.discard()
        if workdir is not None and not keep_dir:
            shutil.rmtree(workdir, ignore_errors=True)


def _execute(
    view: AgentView,
    inputs: list[Any],
    keys: list[Any],
    env_resources: dict[str, Any],
    workdir: Path,
    *,
    mode: str,
    config: dict[str, Any],
    parallelism: int,
    fail_after: int | None,
    flink_config: dict[str, str],
    checkpoint_interval_ms: int,
    keep_dir: bool,
) -> AgentRun:
    """The run itself, in ``workdir`` (event log, logs, sink files, checkpoints)."""
    log_dir = workdir / "logs"
    log_dir.mkdir()
    agent_config = {
        **config,
        "event-log.enabled": True,
        "baseLogDir": str(workdir / "events"),
        # whole inputs: assert_no_repeated_calls tells inputs apart by them
        "event-log.type._input_event.level": "VERBOSE",
    }
    # On Flink the workers log to files in log_dir (the kit's hook sets that up).
    worker_logs = None if mode == "local" else str(log_dir)
    fed = [
        value if isinstance(value, ApprovalResponse) else Fed(position, k, value, worker_logs)
        for position, (value, k) in enumerate(zip(inputs, keys, strict=True))
    ]
    lines: list[str] = []
    with _captured_logs(lines):
        if mode == "local":
            from flink_agents.testing._local_run import run_local

            captures, plan_json = run_local(view, fed, agent_config, env_resources)
            failures = 0
        else:
            from flink_agents.testing._minicluster_run import run_minicluster

            captures, plan_json, failures = run_minicluster(
                view,
                fed,
                agent_config,
                env_resources,
                mode=mode,
                parallelism=parallelism,
                fail_after=fail_after,
                workdir=workdir,
                flink_config=flink_config,
                checkpoint_interval_ms=checkpoint_interval_ms,
            )
    for worker_log in sorted(log_dir.glob("worker-*.log")):
        lines.extend(worker_log.read_text(encoding="utf-8", errors="replace").splitlines())
    return AgentRun(
        mode=mode,
        inputs=inputs,
        keys=keys,
        captures=captures,
        event_log=read_event_log(workdir / "events"),
        logs=lines,
        plan_json=plan_json,
        failures=failures,
        directory=workdir if keep_dir else None,
    )


def _key_of(value: Any, position: int, key: str | Callable[[Any], Any] | None) -> Any:
    if isinstance(value, ApprovalResponse):
        return value.key
    if key is None:
        return position
    if callable(key):
        return key(value)
    if not isinstance(key, str):
        raise TypeError(f"key must be a field name, a function or None, got {type(key).__name__}")
    if isinstance(value, Mapping):
        if key not in value:
            raise ValueError(f"input {position} has no field {key!r}: {sorted(value)}")
        return value[key]
    if not hasattr(value, key):
        raise ValueError(f"input {position} ({type(value).__name__}) has no attribute {key!r}")
    return getattr(value, key)


@contextlib.contextmanager
def _captured_logs(lines: list[str]) -> Iterator[None]:
    """Log records of this process during the run (``flink_agents`` from INFO) into
    ``lines``; levels and handlers are put back afterwards."""

    class _ToList(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                lines.append(self.format(record))
            except Exception:  # noqa: BLE001 - a bad log call must not fail the run
                self.handleError(record)

    handler = _ToList()
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    ours = logging.getLogger("flink_agents")
    level = ours.level
    if ours.getEffectiveLevel() > logging.INFO:
        ours.setLevel(logging.INFO)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        ours.setLevel(level)
