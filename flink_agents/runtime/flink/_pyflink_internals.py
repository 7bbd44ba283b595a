"""Every use of PyFlink internals by the Flink host, in one place.

The host's fast paths lean on PyFlink details that are not public API: private attributes,
closure cells and converters of its thread-mode operation object, the keyed state backend
behind the runtime context, the layout of a keyed input, and private helpers of its
DataStream API. Each is read here and nowhere else, against the version in
:data:`VERIFIED_VERSION`; :func:`check_version` warns once when another version runs. A
reader that finds PyFlink changed raises :class:`InternalsChanged` (or the caller falls
back) and the fast path it serves is reported as not engaged (see ``fast_paths``). The Java
operators of the bridge jar read three private fields of PyFlink's Java operators on their
own side (see docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("flink_agents.runtime.flink")

#: The apache-flink version these internals were verified against.
VERIFIED_VERSION = "2.3.0"

#: What :data:`VERIFIED_VERSION` was checked for (named in the version warning).
VERIFIED = (
    "OneInputFunctionOperation._chained_operations / _output_data_converter / "
    "_input_data_converter._field_data_converters / _main_operation._process_element_func "
    "(closure cells process_element, function_context, process_func), the keyed input layout "
    "[row kind, [key, record]], RuntimeContext._keyed_state_backend(._keyed_state_backend), "
    "embedded.state_impl.JVoidNamespace_INSTANCE, data_stream._get_one_input_stream_operator, "
    "DataStream._j_data_stream, StreamExecutionEnvironment._j_stream_execution_environment, "
    "TableEnvironment._j_tenv (getCatalogManager, getPlanner().getFlinkContext()"
    ".getFunctionCatalog()), Configuration._j_configuration, ExternalTypeInfo._type_info"
)

_version_checked = False
_version_lock = threading.Lock()


class InternalsChanged(Exception):
    """A PyFlink internal is not what :data:`VERIFIED_VERSION` had; the message says which."""


def pyflink_version() -> str:
    """The installed apache-flink version."""
    from pyflink.version import __version__

    return str(__version__)


def check_version() -> bool:
    """Whether the installed PyFlink is :data:`VERIFIED_VERSION`; warns once per process
    (naming what was verified) when it is not."""
    global _version_checked
    version = pyflink_version()
    same = version == VERIFIED_VERSION
    with _version_lock:
        if _version_checked:
            return same
        _version_checked = True
    if not same:
        log.warning(
            "flink-agents verified the PyFlink internals its fast paths use against "
            "apache-flink %s; this is %s. Verified: %s. A fast path that finds one changed "
            "falls back to PyFlink's own path (slower, same results) and logs a warning",
            VERIFIED_VERSION,
            version,
            VERIFIED,
        )
    return same


# -- the keyed state backend ----------------------------------------------------------------


@dataclass(frozen=True)
class StateKeys:
    """The current key of the function's keyed state backend.

    Attributes:
        current: returns the backend's current key (in the backend's own form: a Java
            ``Row`` for the Java backend).
        switch: sets the backend's current key (a key ``current`` returned).
        java: True for the Java backend (thread mode), which can be switched to the key of
            each input of a batch and asked which keys a state holds.
        backend: the backend object (the Java one when ``java``).
    """

    current: Callable[[], Any]
    switch: Callable[[Any], None]
    java: bool
    backend: Any


def state_keys(runtime_context: Any) -> StateKeys:
    """The keyed state backend behind ``runtime_context``: in thread mode the Java
    ``KeyedStateBackend`` wrapped by ``fn_execution.embedded.state_impl.KeyedStateBackend``,
    in process mode ``fn_execution.state_impl.RemoteKeyedStateBackend``.

    Raises:
        InternalsChanged: neither is found.
    """
    backend: Any = getattr(runtime_context, "_keyed_state_backend", None)
    j_backend = getattr(backend, "_keyed_state_backend", None)
    if j_backend is not None:
        # Bound Java methods: a switch is one call into Java, no Python frame of ours.
        return StateKeys(j_backend.getCurrentKey, j_backend.setCurrentKey, True, j_backend)
    if hasattr(backend, "set_current_key") and hasattr(backend, "get_current_key"):
        return StateKeys(backend.get_current_key, backend.set_current_key, False, backend)
    raise InternalsChanged(
        f"the runtime context ({type(runtime_context).__name__}) has no keyed state backend "
        "in _keyed_state_backend"
    )


def state_may_hold(keys: StateKeys, state_name: str) -> bool:
    """False when no key has an entry in the keyed state ``state_name``; True when some key
    may (always True for process mode's backend, which cannot be asked).

    Raises:
        InternalsChanged: the Java backend could not be asked.
    """
    if not keys.java:
        return True
    try:
        from pyflink.fn_execution.embedded.state_impl import JVoidNamespace_INSTANCE

        stream = keys.backend.getKeys(state_name, JVoidNamespace_INSTANCE)
        try:
            return bool(stream.findAny().isPresent())
        finally:
            stream.close()
    except Exception as exc:  # any failure means the same: cannot tell
        raise InternalsChanged(f"the Java keyed state backend's getKeys failed: {exc!r}") from exc


# -- the thread-mode operation object ---------------------------------------------------------


@dataclass(frozen=True)
class OperationParts:
    """What a lean stand-in for PyFlink's thread-mode operation object needs.

    Attributes:
        process_element: the user function's bound ``process_element``.
        context: the function context PyFlink passes to it.
        read_record: the record of an input as PyFlink's Java side hands it over.
    """

    process_element: Callable[[Any, Any], Any]
    context: Any
    read_record: Callable[[Any], Any]


def operation_parts(operation: Any) -> OperationParts:
    """The parts of PyFlink's ``OneInputFunctionOperation`` (thread mode) of a keyed process
    function that a stand-in may call directly.

    Raises:
        InternalsChanged: the operation does something a stand-in would skip (chained
            Python operators, converted outputs, side outputs) or has another shape than
            in :data:`VERIFIED_VERSION`; the message says which.
    """
    try:
        if operation._chained_operations:
            raise InternalsChanged("Python operators are chained after the function")
        converter = type(operation._output_data_converter).__name__
        if converter != "IdentityDataConverter":
            raise InternalsChanged(f"its outputs are converted ({converter})")
        fields = operation._input_data_converter._field_data_converters
        func = operation._main_operation._process_element_func
        cells = dict(
            zip(
                func.__code__.co_freevars,
                (c.cell_contents for c in func.__closure__ or ()),
                strict=True,
            )
        )
        process_element, context = cells["process_element"], cells["function_context"]
        if cells["process_func"].__code__.co_freevars:
            raise InternalsChanged("it routes side outputs")
        if len(fields) != 2:
            raise InternalsChanged(f"its input has {len(fields)} fields, not [key, record]")
        convert = fields[1].to_internal
    except InternalsChanged:
        raise
    except Exception as exc:  # any other difference: PyFlink changed
        raise InternalsChanged(
            f"PyFlink's operation object has another shape ({type(exc).__name__}: {exc})"
        ) from exc

    def read_record(value: Any) -> Any:
        # ``value``: ``[row kind, [key, record]]``, the keyed input as PyFlink's Java side
        # hands it over; the record field goes through PyFlink's own converter.
        return convert(value[1][1])

    return OperationParts(process_element, context, read_record)


# -- the DataStream API's Java side (client) -------------------------------------------------


def load_java_class(name: str) -> Any:
    """The Java class ``name`` from the py4j context class loader (which holds the jars
    added with ``env.add_jars``)."""
    from pyflink.util.java_utils import load_java_class as load

    return load(name)


def keyed_process_operator(keyed: Any, function: Any, output_type: Any) -> tuple[Any, Any]:
    """The Java operator ``keyed.process(function, output_type)`` would get, and the Java
    output type: what ``KeyedStream.process`` makes before it transforms the stream."""
    from pyflink.datastream.data_stream import _get_one_input_stream_operator
    from pyflink.fn_execution.flink_fn_execution_pb2 import UserDefinedDataStreamFunction

    return _get_one_input_stream_operator(
        keyed,
        function,
        UserDefinedDataStreamFunction.KEYED_PROCESS,
        output_type,
    )


def operator_like(j_operator: Any, j_class: Any, keyed: Any, j_output_type: Any) -> Any:
    """An instance of ``j_class`` (a subclass of ``j_operator``'s PyFlink keyed process
    operator with the same constructor) made from ``j_operator``'s arguments."""
    from pyflink.java_gateway import get_gateway

    j_input_type = keyed._j_data_stream.getTransformation().getOutputType()
    args = [
        j_operator.getConfiguration(),
        j_operator.getPythonFunctionInfo(),
        j_input_type,
        j_output_type,
    ]
    gateway = get_gateway()
    array = gateway.new_array(gateway.jvm.Object, len(args))
    for i, value in enumerate(args):
        array[i] = value
    return j_class.getConstructors()[0].newInstance(array)


def transform(stream: Any, name: str, j_output_type: Any, j_operator: Any) -> Any:
    """``stream`` followed by the Java operator ``j_operator`` (a new ``DataStream``)."""
    from pyflink.datastream import DataStream

    return DataStream(stream._j_data_stream.transform(name, j_output_type, j_operator))


def environment_config(env: Any) -> Any:
    """The Java ``Configuration`` of the stream environment ``env`` (where PyFlink reads
    ``python.*`` options when it makes a Python operator)."""
    from pyflink.java_gateway import get_gateway

    util = get_gateway().jvm.org.apache.flink.python.util.PythonConfigUtil
    return util.getEnvironmentConfig(env._j_stream_execution_environment)


def stream_transformations(env: Any) -> Any:
    """The Java list of the transformations ``env`` (a ``StreamExecutionEnvironment``) has
    collected so far (a py4j list: ``del`` removes the Java element)."""
    return env._j_stream_execution_environment.getTransformations()


def java_configuration(config: Any) -> Any:
    """The Java ``Configuration`` behind a PyFlink ``Configuration``."""
    return config._j_configuration


def row_type_info(type_info: Any) -> Any:
    """A stream's type info without PyFlink's ``ExternalTypeInfo`` wrapper (what
    ``Table.to_data_stream`` gives for rows)."""
    return getattr(type_info, "_type_info", type_info)


# -- the Table API's Java side (SQL) -----------------------------------------------------------


def catalog_manager(t_env: Any) -> Any:
    """The table environment's Java ``CatalogManager`` (resolves model identifiers and
    holds their options)."""
    return t_env._j_tenv.getCatalogManager()


def function_catalog(t_env: Any) -> Any:
    """The table environment's Java ``FunctionCatalog``, which resolves a function name as
    SQL does (temporary system, temporary catalog, catalog functions)."""
    return t_env._j_tenv.getPlanner().getFlinkContext().getFunctionCatalog()


#: Job parameter our process-mode operator sets to Flink's job id
#: (``AgentExternalKeyedProcessOperator.JOB_ID_PARAMETER``).
JOB_ID_PARAMETER = "flink-agents.job-id"


def flink_job_id(runtime_context: Any) -> str | None:
    """The Flink job id (hex): read from the Java runtime context in thread mode
    (``EmbeddedRuntimeContext._runtime_context.getJobInfo().getJobId()``), from the job
    parameter our process-mode operator adds in process mode; None where neither is there
    (PyFlink's own process-mode operator, without the bridge jar)."""
    j_context = getattr(runtime_context, "_runtime_context", None)
    if j_context is None:
        try:
            value = runtime_context.get_job_parameter(JOB_ID_PARAMETER, None)
        except Exception:  # noqa: BLE001 - an id of our own is used instead
            return None
        return str(value) if value else None
    try:
        return str(j_context.getJobInfo().getJobId().toString())
    except Exception:  # noqa: BLE001 - an id of our own is used instead
        return None


def task_identity(runtime_context: Any) -> tuple[str, int]:
    """``(task name, subtask index)``. PyFlink 2.3's thread-mode runtime context calls
    ``getTaskName`` / ``getIndexOfThisSubtask``, which Flink 2 moved to ``getTaskInfo()``:
    that is read from the Java context (``_runtime_context``) first."""
    j_context = getattr(runtime_context, "_runtime_context", None)
    if j_context is not None:
        try:
            info = j_context.getTaskInfo()
            return str(info.getTaskName()), int(info.getIndexOfThisSubtask())
        except Exception:  # noqa: BLE001 - PyFlink's accessors below
            pass
    try:
        return runtime_context.get_task_name(), runtime_context.get_index_of_this_subtask()
    except Exception:  # noqa: BLE001 - a name for the file is all this is for
        return "agent", 0


def placement(runtime_context: Any) -> dict[str, int]:
    """``{"parallelism": subtasks of the operator, "subtask_index": this one's}`` (as
    :func:`task_identity`, from ``getTaskInfo()`` first); 1 and 0 when neither answers."""
    j_context = getattr(runtime_context, "_runtime_context", None)
    if j_context is not None:
        try:
            info = j_context.getTaskInfo()
            return {
                "parallelism": int(info.getNumberOfParallelSubtasks()),
                "subtask_index": int(info.getIndexOfThisSubtask()),
            }
        except Exception:  # noqa: BLE001 - PyFlink's accessors below
            pass
    try:
        return {
            "parallelism": int(runtime_context.get_number_of_parallel_subtasks()),
            "subtask_index": int(runtime_context.get_index_of_this_subtask()),
        }
    except Exception:  # noqa: BLE001 - a unit test's fake context
        return {"parallelism": 1, "subtask_index": 0}
