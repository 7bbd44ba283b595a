"""What the bridge jar's Java operators call in Python (``org.flinkagents.flink``).

The thread-mode operator ``AgentKeyedProcessOperator``, in its Python interpreter right
after the function's ``open()``: reads :data:`CONTRACT_VERSION`, calls
:func:`claim_barrier_hook` (its own version), :func:`lean_operation` and after a restore
``BarrierHook.restore_job_budget``; then ``BarrierHook.before_barrier`` before each
checkpoint barrier, ``BarrierHook.job_budget_state`` in each snapshot and the stand-in's
``batch_settings``, ``admit_batches``, ``wait_for_room``, ``process_batch`` and
``process_element_list``. The process-mode operator
``AgentExternalKeyedProcessOperator`` hands the function a timer at :data:`BARRIER_TIMER`
and two job parameters (``_pyflink_internals.JOB_ID_PARAMETER``, ``RESTORED_PARAMETER``).
Both sides check the contract version; see docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from flink_agents.errors import JavaBridgeError
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.runtime.flink.fast_paths import BARRIER_HOOK, LEAN_OPERATION

if TYPE_CHECKING:
    from flink_agents.runtime.flink.function import AgentProcessFunction

log = logging.getLogger("flink_agents.runtime.flink")

#: Version of the contract between the Java operators and these entry points; must match
#: ``org.flinkagents.flink.Contract.VERSION`` of the bridge jar. Change both whenever a
#: name, an argument or a return value below (or :data:`BARRIER_TIMER`, the process-mode
#: operator's job parameters in ``_pyflink_internals``, or the packed output format of
#: ``output.pack_output``) changes. 4: the process-mode operator sets
#: ``_pyflink_internals.RESTORED_PARAMETER``.
CONTRACT_VERSION = "4"

#: Time of the timer that the process-mode operator hands the function right before each
#: checkpoint barrier (Long.MIN_VALUE; ``AgentExternalKeyedProcessOperator.BARRIER_TIMER``).
BARRIER_TIMER = -(2**63)

#: The function opened last on each thread (thread mode) and not bound to a barrier hook yet,
#: by thread id. One per thread: a keyed function heads its operator, so an operator never
#: holds two; an entry left by PyFlink's plain operator is replaced by the next open().
_UNCLAIMED: dict[int, AgentProcessFunction] = {}
_UNCLAIMED_LOCK = threading.Lock()


def offer(function: AgentProcessFunction) -> None:
    """Make ``function`` (just opened on this thread) the one :func:`claim_barrier_hook`
    binds."""
    with _UNCLAIMED_LOCK:
        _UNCLAIMED[threading.get_ident()] = function


def withdraw(function: AgentProcessFunction) -> bool:
    """Forget ``function`` (closing); whether it was still unclaimed."""
    found = False
    with _UNCLAIMED_LOCK:
        for thread_id, offered in list(_UNCLAIMED.items()):
            if offered is function:
                del _UNCLAIMED[thread_id]
                found = True
    return found


class BarrierHook:
    """What the thread-mode operator calls right before each checkpoint barrier."""

    def __init__(self, function: AgentProcessFunction | None) -> None:
        self.function = function

    def before_barrier(self, checkpoint_id: int) -> None:
        """Save the function's durable records (see ``AgentProcessFunction.before_barrier``)."""
        if self.function is not None:
            self.function.before_barrier(checkpoint_id)

    def _governance(self) -> Any:
        slot = self.function.slot if self.function is not None else None
        return slot.runner.governance if slot is not None else None

    def job_budget_state(self, subtask: int, parallelism: int) -> str | None:
        """This subtask's count of the job's hourly budget for the operator's state (in its
        ``snapshotState``); None: no job budget (``ModelGovernance.job_snapshot``)."""
        governance = self._governance()
        return governance.job_snapshot(subtask, parallelism) if governance is not None else None

    def restore_job_budget(self, entries: Any, subtask: int, parallelism: int) -> None:
        """The counts the operator's state held after a restore, every old subtask's
        (``ModelGovernance.restore_job``); called right after the function's ``open()``."""
        governance = self._governance()
        if governance is not None:
            governance.restore_job([str(e) for e in entries], subtask, parallelism)


def claim_barrier_hook(contract_version: str) -> BarrierHook:
    """The checkpoint-barrier hook of the function opened last on this thread.

    Called by ``org.flinkagents.flink.AgentKeyedProcessOperator`` (thread mode) in its
    Python interpreter right after the function's ``open()``, on the same thread. The
    operator calls the hook's ``before_barrier(checkpoint_id)`` in
    ``prepareSnapshotPreBarrier``, on the task thread.

    Args:
        contract_version: the operator's ``Contract.VERSION``.

    Raises:
        JavaBridgeError: the operator speaks another contract version (it then runs as
            PyFlink's operator and logs this message).
    """
    with _UNCLAIMED_LOCK:
        function = _UNCLAIMED.pop(threading.get_ident(), None)
    if contract_version != CONTRACT_VERSION:
        message = (
            f"the flink-agents bridge jar's Flink operator speaks contract {contract_version}, "
            f"this package {CONTRACT_VERSION}: reinstall the package with a JDK on "
            "PATH (`make java` in a checkout) or drop stale jars from the job; the function "
            "runs in PyFlink's operator path (no barrier hook, no lean operation, no batches)"
        )
        if function is not None:
            function.note_fast_path(BARRIER_HOOK, False, message)
            function.note_fast_path(LEAN_OPERATION, False, message)
        raise JavaBridgeError(message)
    if function is None:
        log.warning("no flink-agents function was opened on this thread: no barrier hook")
        return BarrierHook(None)
    function.bind_barrier_hook()
    return BarrierHook(function)


class _LeanOperation:
    """Stands in for PyFlink's thread-mode operation object of an agent function: the same
    calls, with the per-record path cut to what the function needs.

    PyFlink's operation turns each input into a ``Row`` (unpickling the key the function
    does not use), then passes it and each output through three generator layers. Here the
    record field is converted with PyFlink's own converter and the function's generator goes
    back as it is; timers, ``open`` and ``close`` are PyFlink's.
    """

    def __init__(
        self, operation: Any, parts: internals.OperationParts, function: AgentProcessFunction
    ) -> None:
        self._operation = operation
        self._process_element = parts.process_element
        self._ctx = parts.context
        self._record = parts.read_record
        self._function = function

    def batch_settings(self) -> list[int]:
        """``[inputs per call, longest wait in ms]``; the operator's first call once it
        kept this stand-in."""
        self._function.note_fast_path(
            LEAN_OPERATION, True, "one call into Python per input, no Row, no generator layers"
        )
        return list(self._function.batch_settings())

    def admit_batches(self) -> bool:
        """The operator (batching) waits for :meth:`wait_for_room` before each batch it
        starts, with its mailbox running meanwhile; the batch's inputs then never wait on
        the task thread (``SlotRuntime.admit_batches``). Returns True."""
        slot = self._function.slot
        assert slot is not None
        slot.admit_batches()
        return True

    def wait_for_room(self, timeout_ms: int) -> bool:
        """Whether the slot has a free in-flight place, waiting up to ``timeout_ms`` for one
        (the operator runs its mailbox between two such waits)."""
        slot = self._function.slot
        assert slot is not None
        return slot.wait_for_room(timeout_ms / 1000.0)

    def process_batch(self, batch: Any) -> list[Any]:
        """The outputs of a batch of inputs (``AgentProcessFunction.process_batch``)."""
        return self._function.process_batch(batch, self._record, self._ctx)

    def process_element(self, value: Any) -> Any:
        return self._process_element(self._record(value), self._ctx)

    def process_element_list(self, value: Any) -> list[Any]:
        """The outputs of one input, as a list: what the Java operator calls per record
        (one call into Python instead of PyFlink's iterator protocol)."""
        return list(self.process_element(value))

    def on_timer(self, timestamp: int) -> Any:
        return self._operation.on_timer(timestamp)

    def open(self) -> None:
        self._operation.open()

    def close(self) -> None:
        self._operation.close()


def lean_operation(operation: Any, hook: BarrierHook | None = None) -> Any:
    """``operation`` (PyFlink's ``OneInputFunctionOperation``, thread mode), or a
    :class:`_LeanOperation` for it when it runs exactly an ``AgentProcessFunction`` that
    emits packed outputs: no chained Python operators, no side outputs, a keyed
    ``(key, record)`` input and outputs that PyFlink passes on unchanged.

    Called by ``org.flinkagents.flink.AgentKeyedProcessOperator`` after PyFlink made and
    opened the operation, with the hook :func:`claim_barrier_hook` returned (its function
    is told when the stand-in cannot be used, and why). Anything unexpected keeps PyFlink's
    operation.
    """
    from flink_agents.runtime.flink.function import AgentProcessFunction

    owner = hook.function if hook is not None else None
    try:
        parts = internals.operation_parts(operation)
    except internals.InternalsChanged as exc:
        why = f"PyFlink's operation object is kept: {exc}"
        if owner is not None:
            owner.note_fast_path(LEAN_OPERATION, False, why)
        else:
            log.warning("fast path %s not engaged: %s", LEAN_OPERATION, why)
        return operation
    function = getattr(parts.process_element, "__self__", None)
    if not isinstance(function, AgentProcessFunction):
        return operation  # not an agent function: nothing to say
    if not function.packed:
        function.note_fast_path(
            LEAN_OPERATION,
            False,
            "outputs are tuples for PyFlink's Python operators (the bridge jar's "
            "CarriedTimestampOperator was missing when the job was built)",
        )
        return operation
    return _LeanOperation(operation, parts, function)
