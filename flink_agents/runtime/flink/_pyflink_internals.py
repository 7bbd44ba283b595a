"""Every use of PyFlink internals by the Flink host, in one place, and the version check.

The host's fast paths lean on PyFlink details that are not public API: private attributes,
closure cells and converters of its thread-mode operation object, the keyed state backend
behind the runtime context, the layout of a keyed input, and private helpers of its
DataStream API. Each is read here and nowhere else. The supported PyFlink versions are the
minor lines in :data:`SUPPORTED_MINORS` (:data:`SUPPORTED_RANGE`); each was verified at the
release named in :data:`VERIFIED_VERSIONS` (docs/flink-versions.md). Importing the Flink host
with another version raises :class:`~flink_agents.errors.UnsupportedFlinkVersionError`
(:func:`require_supported_version`, called by the package's ``__init__``). Where the
internals differ between supported versions, the difference is a branch here, named by the
version (:func:`minor_version`) and pinned by a test. A reader that finds PyFlink changed
raises :class:`InternalsChanged` (or the caller falls back) and the fast path it serves is
reported as not engaged (see ``fast_paths``). The Java operators of the bridge jar read three
private fields of PyFlink's Java operators on their own side (see docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flink_agents.errors import UnsupportedFlinkVersionError

log = logging.getLogger("flink_agents.runtime.flink")

#: The supported apache-flink minor lines, oldest first (every patch release of each).
SUPPORTED_MINORS: tuple[tuple[int, int], ...] = ((1, 20), (2, 0), (2, 1), (2, 2), (2, 3))
#: The same as a requirement specifier (the ``flink`` extra of pyproject.toml).
SUPPORTED_RANGE = ">=1.20,<2.4"
#: The release of each minor line the internals, the fast paths and the test suites were
#: verified against (the newest patch release when it was checked).
VERIFIED_VERSIONS: dict[tuple[int, int], str] = {
    (1, 20): "1.20.5",
    (2, 0): "2.0.2",
    (2, 1): "2.1.3",
    (2, 2): "2.2.1",
    (2, 3): "2.3.0",
}
#: The newest verified release (what the ``dev`` environment and the full CI suites run).
VERIFIED_VERSION = VERIFIED_VERSIONS[SUPPORTED_MINORS[-1]]

#: What the fast paths read of PyFlink (named when one finds it changed).
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


class InternalsChanged(Exception):
    """A PyFlink internal is not what the verified versions had; the message says which."""


def pyflink_version() -> str:
    """The installed apache-flink version."""
    from pyflink.version import __version__

    return str(__version__)


def parse_minor(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a version string (``"1.20.5"`` -> ``(1, 20)``); None when it
    does not start with two numbers."""
    match = re.match(r"\s*(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def supported_text() -> str:
    """The supported versions for messages: ``1.20.x, 2.0.x, ... (apache-flink>=1.20,<2.4)``."""
    minors = ", ".join(f"{a}.{b}.x" for a, b in SUPPORTED_MINORS)
    return f"{minors} (apache-flink{SUPPORTED_RANGE})"


def check_supported(version: str) -> tuple[int, int]:
    """The minor line of ``version``.

    Raises:
        UnsupportedFlinkVersionError: ``version`` is not in a supported minor line; the
            message names the supported range and how to install a supported PyFlink.
    """
    minor = parse_minor(version)
    if minor in SUPPORTED_MINORS:
        return minor
    newest = VERIFIED_VERSION
    raise UnsupportedFlinkVersionError(
        f"flink-agents supports PyFlink {supported_text()}; this Python has apache-flink "
        f"{version}. Install a supported version matching your cluster's Flink, e.g. "
        f'`pip install "apache-flink=={VERIFIED_VERSIONS[(1, 20)]}"` for a Flink 1.20 '
        f'cluster or `pip install "flink-agents-py[flink]"` for {newest}; the supported '
        "versions and what works on each are in docs/flink-versions.md",
        version=version,
    )


def require_supported_version() -> tuple[int, int]:
    """The installed PyFlink's minor line; called when the Flink host is imported.

    Raises:
        UnsupportedFlinkVersionError: the installed PyFlink is outside the supported range.
    """
    return check_supported(pyflink_version())


def quiet_known_warnings() -> None:
    """Silence a warning PyFlink's own dependencies print on supported versions, which says
    nothing to a user: Beam 2.48 (what apache-flink 1.20 installs) imports
    ``pkg_resources``, which setuptools 81+ (an unpinned dependency of apache-flink 1.20)
    deprecates with a ``UserWarning`` on stderr at every start (it broke the CLI's one-line
    errors). Only that message, only from Beam's modules."""
    import warnings

    warnings.filterwarnings(
        "ignore",
        message="pkg_resources is deprecated as an API",
        category=UserWarning,
        module=r"apache_beam\.",
    )


def minor_version() -> tuple[int, int]:
    """The installed PyFlink's ``(major, minor)`` (checked at import: a supported one)."""
    return check_supported(pyflink_version())


def check_version() -> bool:
    """Whether the installed PyFlink is a supported version. Inside the range nothing is
    logged; outside it the host could not have been imported (see
    :func:`require_supported_version`), so this is True wherever it runs."""
    try:
        minor_version()
    except UnsupportedFlinkVersionError:
        return False
    return True


# -- differences between the supported versions ----------------------------------------------


def sql_has_models() -> bool:
    """Whether Flink's SQL runs ``CREATE MODEL`` / ``SHOW MODELS`` (2.1 and later). Flink
    1.20 has no models ("Unsupported query"); 2.0's catalog has them but its SQL still
    refuses the statements. Where False, the SQL layer keeps models itself
    (:mod:`flink_agents.sql.model_catalog`)."""
    return minor_version() >= (2, 1)


def table_has_resolved_schema() -> bool:
    """Whether PyFlink's ``Table`` has ``get_resolved_schema()`` (2.1 and later)."""
    return minor_version() >= (2, 1)


def table_columns(table: Any) -> tuple[list[str], list[Any]]:
    """The column names and data types of a PyFlink ``Table``: from
    ``Table.get_resolved_schema()`` on 2.1 and later; on 1.20 and 2.0, which lack it, from
    the Java ``ResolvedSchema`` (``Table._j_table``), its types converted by PyFlink's own
    ``_from_java_data_type`` (what 2.1's ``ResolvedSchema.get_column_data_types`` does)."""
    if table_has_resolved_schema():
        schema = table.get_resolved_schema()
        return list(schema.get_column_names()), list(schema.get_column_data_types())
    from pyflink.table.types import _from_java_data_type

    j_schema = table._j_table.getResolvedSchema()
    names = [str(n) for n in j_schema.getColumnNames()]
    return names, [_from_java_data_type(t) for t in j_schema.getColumnDataTypes()]


def result_columns(result: Any) -> list[str]:
    """The column names of a PyFlink ``TableResult``: ``get_resolved_schema()`` on 2.1 and
    later, ``get_table_schema()`` (public there) on 1.20 and 2.0, which lack the former."""
    if table_has_resolved_schema():
        return list(result.get_resolved_schema().get_column_names())
    return list(result.get_table_schema().get_field_names())


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


def user_class_loader(t_env: Any) -> Any:
    """The table environment's user class loader (it holds the jars of ``ADD JAR`` and of
    ``CREATE FUNCTION ... USING JAR``); None where the Flink has no resource manager."""
    try:
        return t_env._j_tenv.getResourceManager().getUserClassLoader()
    except Exception:  # noqa: BLE001 - py4j: no such method on this Flink
        return None


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


#: Job parameter our process-mode operator sets to whether it was restored, ``"true"`` or
#: ``"false"`` (``AgentExternalKeyedProcessOperator.RESTORED_PARAMETER``, from Flink's
#: ``StateInitializationContext.isRestored()``).
RESTORED_PARAMETER = "flink-agents.restored"


def operator_restored(runtime_context: Any) -> bool | None:
    """Whether the operator running the function started from a checkpoint or savepoint:
    False only when our process-mode operator says it started without state (its keyed
    state then holds nothing from before); None when nothing says (thread mode, PyFlink's
    own operator, a jar of an older contract, a unit test's fake context)."""
    getter = getattr(runtime_context, "get_job_parameter", None)
    if getter is None or getattr(runtime_context, "_runtime_context", None) is not None:
        return None  # thread mode's context: its backend is asked instead (state_may_hold)
    try:
        value = getter(RESTORED_PARAMETER, None)
    except Exception:  # noqa: BLE001 - unknown: the function looks as without the flag
        return None
    if value == "false":
        return False
    if value == "true":
        return True
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


#: Process mode: the period (ms) the Python worker's Beam state sampler is given (Beam's
#: default: 200). See :func:`shorten_state_sampling`.
STATE_SAMPLING_MS = 5

#: Frames :func:`shorten_state_sampling` looks up for the bundle processor being built.
_PROCESSOR_FRAMES = 40


def shorten_state_sampling(period_ms: int = STATE_SAMPLING_MS) -> bool | None:
    """Process mode: give the Python worker's Beam state samplers a period of ``period_ms``.

    Beam's worker runs a state sampler thread per bundle (execution-time counters, unused
    by Flink) that sleeps up to 200 ms between samples, and the end of every bundle joins
    it: the bundle's end waits up to 200 ms, during which the operator's task thread, which
    waits for the bundle, takes no input (traced in the concurrency job: 120-300 ms of
    stall per bundle of ~1 s). Samplers made from now on get ``period_ms``; the one of the
    bundle processor being built (the function's ``open()`` runs in its constructor, after
    it made its sampler) is replaced by one with ``period_ms`` (the operations keep the
    first one's scoped states: their sampled times read 0). Called from ``open()``.

    Returns:
        True when the bundle processor being built has the short period; False (a no-op,
        or only later samplers changed) when Beam's code is not what Beam 2.48-2.61
        (PyFlink 1.20-2.3) have; None when not called inside a bundle processor's
        construction (a unit test, another host): later samplers get the period.
    """
    import sys

    try:
        from apache_beam.runners.worker import bundle_processor, statesampler
    except ImportError:
        return False
    sampler_class = statesampler.StateSampler
    init = sampler_class.__init__
    defaults = getattr(init, "__defaults__", None)
    if not defaults or not isinstance(defaults[-1], int):
        return False
    if defaults[-1] != period_ms:
        init.__defaults__ = (*defaults[:-1], period_ms)
    frame: Any = sys._getframe(1)
    for _ in range(_PROCESSOR_FRAMES):
        if frame is None:
            break
        processor = frame.f_locals.get("self")
        if isinstance(processor, bundle_processor.BundleProcessor):
            old = getattr(processor, "state_sampler", None)
            if type(old) is not sampler_class:
                return False
            if old.sampling_period_ms == period_ms:
                return True
            if old.started:
                return False  # (a bundle runs: not the constructor's frame)
            try:
                processor.state_sampler = sampler_class(
                    old._prefix, old._counter_factory, sampling_period_ms=period_ms
                )
            except Exception:  # keep Beam's own sampler
                log.debug("state sampler not replaced", exc_info=True)
                return False
            return True
        frame = frame.f_back
    return None
