"""The Flink execution environment: DataStream / Table in, agent, DataStream / Table out.

``apply(agent)`` compiles the agent into an :class:`AgentPlan`; what travels to the task side
is the plan's JSON (plus its secrets, pickled with the function, never in the JSON), which
:class:`~flink_agents.runtime.flink.function.AgentProcessFunction` rebuilds in ``open()``.

The environment also sets up the Python workers, which must find this venv:
``python.executable`` and, for thread mode, ``python.pythonpath``; and the execution mode,
``thread`` unless the agents configuration or the Flink configuration says otherwise.

The function runs in an operator of the bridge jar instead of PyFlink's (:data:`OPERATORS`),
followed by the jar's timestamp operator; without those classes (bridge jar not built, or of
another contract version) the environment warns once and uses PyFlink's operators. See
docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any

from pyflink.common import Row, WatermarkStrategy
from pyflink.common.typeinfo import PickledBytesTypeInfo, RowTypeInfo, TypeInformation, Types
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import (
    DataStream,
    KeyedProcessFunction,
    KeyedStream,
    KeySelector,
    OutputTag,
    ProcessFunction,
    StreamExecutionEnvironment,
)
from pyflink.java_gateway import get_gateway

from flink_agents.api.agents.agent import Agent
from flink_agents.api.approval import ApprovalResponse
from flink_agents.api.core_options import AgentExecutionOptions
from flink_agents.api.execution_environment import AgentBuilder, AgentsExecutionEnvironment
from flink_agents.errors import ConfigurationError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.approval import plan_needs_approval
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.runtime.flink.entry import CONTRACT_VERSION
from flink_agents.runtime.flink.function import AgentProcessFunction
from flink_agents.runtime.flink.output import (
    DEAD_LETTER,
    DEAD_LETTERS,
    KEEP_TIMESTAMP,
    NO_TIMESTAMP,
)

log = logging.getLogger("flink_agents.runtime.flink")

_PYFLINK_OPERATORS = "org.apache.flink.streaming.api.operators.python."
#: PyFlink's keyed process operator class -> ours with the checkpoint-barrier hook (bridge
#: jar), by execution mode.
OPERATORS = {
    "thread": (
        _PYFLINK_OPERATORS + "embedded.EmbeddedPythonKeyedProcessOperator",
        "org.flinkagents.flink.AgentKeyedProcessOperator",
    ),
    "process": (
        _PYFLINK_OPERATORS + "process.ExternalPythonKeyedProcessOperator",
        "org.flinkagents.flink.AgentExternalKeyedProcessOperator",
    ),
}
#: Bridge classes already warned about as missing.
_warned_missing: set[str] = set()
#: The bridge jar's class holding the version of its contract with ``entry``.
_CONTRACT_CLASS = "org.flinkagents.flink.Contract"

#: Agents-config key (and Flink option) choosing PyFlink's Python execution mode.
EXECUTION_MODE = "python.execution-mode"
#: Agents-config key: extra directories for the Python workers' path.
PYTHONPATH = "python.pythonpath"
#: Resource arguments that pace calls at a provider's quota (docs/rate-limits.md).
_PACED_LIMITS = ("requests_per_minute", "tokens_per_minute")
#: PyFlink's bundle size option (process mode), and the most records a bundle of a Python
#: operator in front of a paced agent may hold (measured: 10 kept checkpoints under 1 s at
#: 10 calls a second; 100,000, the default, let none complete).
_BUNDLE_SIZE = "python.fn-execution.bundle.size"
_PROCESS_BUNDLE = 10
#: The rate-limits page's section on checkpoints (named in the warning below).
_CHECKPOINTS_DOC = "docs/rate-limits.md#checkpoints-while-calls-wait"


#: The Java operator that unwraps the function's pairs and puts timestamps back (bridge jar).
_TIMESTAMP_OPERATOR = "org.flinkagents.flink.CarriedTimestampOperator"
#: Output type of the function's packed ``(timestamp code, output)`` pairs for the Java
#: operator (``output.pack_output``).
_PACKED_TYPE = Types.PRIMITIVE_ARRAY(Types.BYTE())


class _CarriedTimestamp(TimestampAssigner):
    """Fallback without the bridge jar: puts the input's timestamp (carried in the pair)
    back on the output record."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        ts = value[0]
        if ts == KEEP_TIMESTAMP:
            return record_timestamp
        if ts in (NO_TIMESTAMP, DEAD_LETTER):
            return KEEP_TIMESTAMP  # Long.MIN_VALUE: no timestamp
        return int(ts)


def _dead_letter_tag() -> OutputTag:
    """The side output of dead letters (the same id as the Java operator's)."""
    return OutputTag(DEAD_LETTERS, Types.PICKLED_BYTE_ARRAY())


class _Unpair(ProcessFunction):
    """Fallback without the bridge jar: the outputs of the ``(code, output)`` pairs, and
    the dead letters to their side output."""

    def __init__(self, convert: Callable[[Any], Any] | None = None) -> None:
        self.convert = convert
        self.tag = _dead_letter_tag()

    def process_element(self, value: Any, ctx: ProcessFunction.Context) -> Any:
        if value[0] == DEAD_LETTER:
            yield self.tag, value[1]
        elif self.convert is None:
            yield value[1]
        else:
            yield self.convert(value[1])


class _RoundRobinKey(KeySelector):
    """Key of keyless input: round-robin over ``buckets`` keys.

    A per-record unique key would keep state (and a key group entry) for every record ever
    seen; a fixed key space of ``max-in-flight`` keys still lets that many records run at
    once, and memory is kept per record by the function (``keyless=True``).
    """

    def __init__(self, buckets: int) -> None:
        self._buckets = buckets
        self._next = 0

    def get_key(self, value: Any) -> int:
        self._next = (self._next + 1) % self._buckets
        return self._next


class _UserKey(KeySelector):
    """Wraps a user key selector given as a plain function."""

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func

    def get_key(self, value: Any) -> Any:
        return self.func(value)


class _ApprovalKey:
    """A key function that keys :class:`ApprovalResponse` inputs by their ``key``."""

    def __init__(self, func: Callable[[Any], Any]) -> None:
        self.func = func

    def __call__(self, value: Any) -> Any:
        if isinstance(value, ApprovalResponse):  # subclasses too, as the local host
            return value.key
        return self.func(value)


def _bridge_class(name: str, without: str) -> Any:
    """The bridge jar's Java class ``name`` as the client loads it (the job's jars are added
    to the py4j context class loader by ``env.add_jars``), or None; warns once per class
    when it is missing or of another contract version, saying what the job does
    ``without`` it."""
    from flink_agents.runtime.java import bridge_jars

    try:
        # The job ships the class only with the bridge jar (the client may know it from an
        # earlier job of this process).
        if not bridge_jars():
            raise LookupError("the bridge jar is not built")
        j_class = internals.load_java_class(name)
        version = internals.load_java_class(_CONTRACT_CLASS).getField("VERSION").get(None)
        if version != CONTRACT_VERSION:
            raise LookupError(
                f"the bridge jar's operators speak contract {version}, this package "
                f"{CONTRACT_VERSION}"
            )
        return j_class
    except Exception as exc:  # noqa: BLE001 - py4j reports a missing class as Py4JJavaError
        if name not in _warned_missing:
            _warned_missing.add(name)
            log.warning(
                "%s cannot be used (%s): %s. The jar is built into the package when it is "
                "installed with a JDK on PATH (pip install, `make java` in a checkout); "
                "reinstall with a JDK, without FLINK_AGENTS_SKIP_JAVA=1",
                name,
                str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                without,
            )
        return None


def keyed_process(
    keyed: KeyedStream, function: KeyedProcessFunction, output_type: TypeInformation, mode: str
) -> DataStream:
    """``keyed.process(function, output_type)`` (``mode``: ``python.execution-mode``), with
    PyFlink's operator replaced by ours (:data:`OPERATORS`) when its class is available."""
    pyflink_class, our_class = OPERATORS.get(mode, ("", ""))
    our_operator = (
        _bridge_class(
            our_class,
            "using PyFlink's operator, which saves durable call records only at timers, so "
            "a restore may repeat calls completed shortly before the checkpoint",
        )
        if our_class
        else None
    )
    if our_operator is None:
        return keyed.process(function, output_type=output_type)
    # What KeyedStream.process does, with our class made from the same arguments.
    j_plain, j_output_type = internals.keyed_process_operator(keyed, function, output_type)
    j_operator = j_plain
    if j_plain.getClass().getName() == pyflink_class:
        j_operator = internals.operator_like(j_plain, our_operator, keyed, j_output_type)
    else:  # PyFlink chose another operator than expected: keep it
        log.warning(
            "unexpected keyed process operator %s: no barrier hook, no lean operation, no batches",
            j_plain.getClass(),
        )
    return internals.transform(keyed, "KEYED PROCESS", j_output_type, j_operator)


def _paced_limits(arguments: dict[str, Any]) -> dict[str, Any]:
    """The declared limits among a resource's ``arguments`` that pace its calls."""
    return {k: arguments[k] for k in _PACED_LIMITS if arguments.get(k) is not None}


def _to_row(type_info: RowTypeInfo) -> Callable[[Any], Any]:
    names = type_info.get_field_names()

    def convert(value: Any) -> Any:
        if isinstance(value, Row):
            return value
        if isinstance(value, dict):
            return Row(**{n: value.get(n) for n in names})
        if isinstance(value, (list, tuple)):
            return Row(*value)
        if hasattr(value, "model_dump"):
            dumped = value.model_dump()
            return Row(**{n: dumped.get(n) for n in names})
        return Row(value)

    return convert


class FlinkAgentBuilder(AgentBuilder):
    """An input stream; ``apply`` an agent, then take its output as a DataStream or Table."""

    def __init__(
        self,
        env: FlinkExecutionEnvironment,
        stream: DataStream,
        key_selector: Callable[[Any], Any] | KeySelector | None,
    ) -> None:
        self._env = env
        self._stream = stream
        self._key_selector = key_selector
        self._plan: AgentPlan | None = None
        self._output: DataStream | None = None
        #: The operator that unpairs the outputs (its side output: the dead letters), and
        #: the carry_timestamps it was made with.
        self._unpaired: tuple[DataStream, bool] | None = None
        self._uid = ""

    @property
    def plan(self) -> AgentPlan:
        """The compiled plan (after :meth:`apply`)."""
        if self._plan is None:
            raise RuntimeError("call apply(agent) first")
        return self._plan

    def apply(self, agent: Agent | str, *, uid: str | None = None) -> FlinkAgentBuilder:
        """Run ``agent`` on this input.

        Args:
            agent: the agent, or the name of one loaded with ``load_yaml``.
            uid: the Flink ``uid`` of the agent's operator (the one that holds its keyed
                state); its output operator gets ``<uid>-output``. By default
                ``flink-agents-<agent class name>`` (``-2``, ``-3``... for further agents of
                the same class in the job). A savepoint is restored into operators by uid:
                keep it when you change the job, and pass one explicitly when the agent's
                class may be renamed.
        """
        if self._plan is not None:
            raise RuntimeError("apply() was already called on this input; call from_* again")
        agent = self._env._agent_to_apply(agent)  # an agent loaded with load_yaml, by name
        plan = AgentPlan.from_agent(
            agent, self._env.get_config(), self._env.resources, self._env.interceptors
        )
        # Objects of the job script travel by value; what could not be pickled stays a
        # reference by name, which Flink's Python workers cannot import.
        main_refs = plan.main_module_references()
        if main_refs:
            from flink_agents.errors import PlanValidationError

            raise PlanValidationError(
                [
                    f"{ref}; Flink's Python workers cannot import the __main__ script: make "
                    "it picklable (cloudpickle) or move it into a module"
                    for ref in main_refs
                ]
            )
        from flink_agents.runtime.java import check_java_resources

        # Java resources need thread mode: fail now, not on the TaskManager. (A Java class
        # missing from the jars is reported per call at run time, as a clear error the
        # strategy handles, so one bad resource does not stop the others.)
        check_java_resources(plan, self._env.execution_mode())
        self._uid = self._env.operator_uid(uid, type(agent).__name__)
        self._plan = plan
        self._env._plans.append(plan)
        return self

    def _pairs(self, output_type: TypeInformation, *, packed: bool = False) -> DataStream:
        """The function's output: ``(input timestamp code, output)`` pairs (packed into
        bytes for the Java operator)."""
        plan = self.plan
        self._env.configure_workers()
        keyless = self._key_selector is None
        if keyless:
            buckets = plan.get_config().get(AgentExecutionOptions.MAX_IN_FLIGHT)
            selector: KeySelector = _RoundRobinKey(buckets)
        elif isinstance(self._key_selector, KeySelector):
            selector = self._key_selector
        elif callable(self._key_selector):
            selector = _UserKey(self._key_selector)
        else:
            raise TypeError(
                "key_selector must be a function or a pyflink KeySelector, got "
                f"{type(self._key_selector).__name__}"
            )
        # The function computes keys again with the user's selector (cheaper than asking
        # Flink); the round-robin key of keyless input is not deterministic.
        key_of: Callable[[Any], Any] | None = None
        if not keyless:
            key_of = selector.func if isinstance(selector, _UserKey) else selector.get_key
            if plan_needs_approval(plan):
                # Approval responses go to the key of the run they answer (only for plans
                # with such tools: it costs a call per record).
                key_of = _ApprovalKey(key_of)
                selector = _UserKey(key_of)
        function = AgentProcessFunction(
            plan.model_dump_json(),
            plan.secrets,
            keyless=keyless,
            packed=packed,
            key_of=key_of,
        )
        keyed = self._stream.key_by(selector)
        return (
            keyed_process(keyed, function, output_type, self._env.execution_mode())
            .name("flink-agents")
            .uid(self._uid)
        )

    def _timestamp_operator(self, carry: bool) -> Any:
        """The Java operator that unwraps the pairs, or None without the bridge jar."""
        self._env._add_jars()  # into the client's classloader too
        if _bridge_class(_TIMESTAMP_OPERATOR, "outputs go through two Python operators") is None:
            return None
        return get_gateway().jvm.org.flinkagents.flink.CarriedTimestampOperator(carry)

    def to_datastream(
        self, output_type: TypeInformation | None = None, *, carry_timestamps: bool = True
    ) -> DataStream:
        """The agent's outputs (``OutputEvent.output`` values) as a DataStream.

        Args:
            output_type: type of the outputs (pickled objects when not given); with a
                ``Types.ROW_NAMED`` type, dict / tuple / pydantic outputs become rows.
            carry_timestamps: give each output its input's timestamp. Outputs finished at
                the end of a bounded input would otherwise carry Long.MAX_VALUE and be late
                for every event-time window. The re-assignment does not forward upstream
                watermarks (only the final one); pass False if you need them.
        """
        if self._output is not None:
            return self._output
        typed = output_type is not None and not isinstance(output_type, PickledBytesTypeInfo)
        row = isinstance(output_type, RowTypeInfo)
        unpaired, converted = self._unpair(carry_timestamps, output_type if row else None)
        outputs = unpaired
        if row and not converted:
            outputs = outputs.map(_to_row(output_type), output_type=output_type).uid(
                f"{self._uid}-typed"
            )
        elif typed and not row:
            outputs = outputs.map(lambda out: out, output_type=output_type).uid(
                f"{self._uid}-typed"
            )
        self._output = outputs
        return outputs

    def dead_letters(self) -> DataStream:
        """The runs set aside, as a DataStream of
        :class:`~flink_agents.api.dead_letter.DeadLetter` (pickled objects, without
        timestamps): the side output of the operator after the agent's.

        Dead letters come with ``error-handling-strategy: dead-letter`` (a failed run, a run
        past ``max-events-per-run``) and for records that cannot become an input event
        under ``ignore`` too. Give them a sink of their own (a file, Kafka); each arrives
        once per failed input (exactly once with a transactional sink and checkpointing).
        Call :meth:`to_datastream` first when you pass it arguments.
        """
        if self._unpaired is None:
            self.to_datastream()
        assert self._unpaired is not None
        return self._unpaired[0].get_side_output(_dead_letter_tag())

    def _unpair(self, carry: bool, row_type: RowTypeInfo | None) -> tuple[DataStream, bool]:
        """The stream of outputs after the function (made once): the Java operator, or
        without the jar a Python timestamp assigner and :class:`_Unpair` (which converts the
        outputs to ``row_type`` too, when given). Returns it and whether it converted."""
        if self._unpaired is not None:
            stream, made_with = self._unpaired
            if made_with != carry:
                raise RuntimeError(
                    "dead_letters() made the output operator with carry_timestamps="
                    f"{made_with}; call to_datastream(..., carry_timestamps={carry}) before "
                    "dead_letters()"
                )
            return stream, False
        operator = self._timestamp_operator(carry)
        if operator is not None:
            # One Java operator, chained to the function, unwraps the pairs and sends the
            # dead letters to its side output.
            pairs = self._pairs(_PACKED_TYPE, packed=True)
            pickled = Types.PICKLED_BYTE_ARRAY()
            stream = internals.transform(
                pairs, "flink-agents-output", pickled.get_java_type_info(), operator
            ).uid(f"{self._uid}-output")
            self._unpaired = (stream, carry)
            return stream, False
        pairs = self._pairs(Types.PICKLED_BYTE_ARRAY())
        if carry:
            pairs = (
                pairs.assign_timestamps_and_watermarks(
                    WatermarkStrategy.no_watermarks().with_timestamp_assigner(_CarriedTimestamp())
                )
                .name("flink-agents-timestamps")
                .uid(f"{self._uid}-timestamps")
            )
        convert = _to_row(row_type) if row_type is not None else None
        stream = (
            pairs.process(_Unpair(convert), output_type=row_type or Types.PICKLED_BYTE_ARRAY())
            .name("flink-agents-output")
            .uid(f"{self._uid}-output")
        )
        self._unpaired = (stream, carry)
        return stream, convert is not None

    def to_table(self, schema: Any, output_type: TypeInformation) -> Any:
        """The agent's outputs as a Table with ``schema`` (a ``pyflink.table.Schema``);
        ``output_type`` is the row type the outputs are converted to first."""
        t_env = self._env.t_env
        return t_env.from_data_stream(self.to_datastream(output_type), schema)


class FlinkExecutionEnvironment(AgentsExecutionEnvironment):
    """Agents over a PyFlink ``StreamExecutionEnvironment``.

    Args:
        env: the PyFlink stream environment.
        t_env: a ``StreamTableEnvironment`` over ``env`` (made on first use if not given).
        **kwargs: agents configuration values (``key=value``).
    """

    def __init__(self, env: StreamExecutionEnvironment, t_env: Any = None, **kwargs: Any):
        super().__init__()
        if not isinstance(env, StreamExecutionEnvironment):
            raise TypeError(
                "get_execution_environment(env) takes a pyflink StreamExecutionEnvironment, "
                f"got {type(env).__name__}"
            )
        # Flink's config.yaml first (its `agent:` section, as upstream reads it); values set
        # on this environment afterwards win.
        self.get_config().load_flink_conf_dir()
        for key, value in kwargs.items():
            self.get_config().set_str(key, value)
        internals.check_version()
        self._env = env
        self._t_env = t_env
        self._jars_added = False
        self._uids: set[str] = set()
        #: The plans applied on this environment (checked by :meth:`configure_workers`).
        self._plans: list[AgentPlan] = []
        self._checkpoints_checked = False
        # PyFlink fixes a Python operator's execution mode when the operator is created:
        # set it now, so that operators built on ``env`` from here on (e.g. a map before
        # ``from_datastream``) run in the agents' mode too instead of in PyFlink's default
        # process mode. A job mixing the modes also carries PyFlink's process-mode runner,
        # whose cancellation in a failover can race with its own bundle flush and take the
        # TaskManager down (MiniCluster: no slot left for the restart).
        self._configure_python()

    @property
    def env(self) -> StreamExecutionEnvironment:
        """The PyFlink stream environment."""
        return self._env

    @property
    def t_env(self) -> Any:
        """The table environment (created over ``env`` when first needed)."""
        if self._t_env is None:
            from pyflink.table import StreamTableEnvironment

            self._t_env = StreamTableEnvironment.create(self._env)
        return self._t_env

    def operator_uid(self, uid: str | None, agent_name: str) -> str:
        """The uid for the operators of an agent applied in this job: ``uid`` if given
        (unique in the job), else ``flink-agents-<agent_name>`` with ``-2``, ``-3``... for
        further agents of that name."""
        if uid is not None:
            if not isinstance(uid, str) or not uid.strip():
                raise ConfigurationError(f"uid must be a non-empty string, got {uid!r}")
            if uid in self._uids:
                raise ConfigurationError(
                    f"uid {uid!r} is already used by another agent of this job: give each "
                    "agent its own uid"
                )
            self._uids.add(uid)
            return uid
        base = f"flink-agents-{agent_name}"
        candidate, n = base, 1
        while candidate in self._uids:
            n += 1
            candidate = f"{base}-{n}"
        self._uids.add(candidate)
        return candidate

    # -- inputs ----------------------------------------------------------------------------------
    def from_datastream(
        self,
        input: DataStream,  # noqa: A002
        key_selector: Callable[[Any], Any] | KeySelector | None = None,
    ) -> FlinkAgentBuilder:
        """Input from ``input``, keyed by ``key_selector``.

        Without a key selector every record is its own run (its memory lasts one run) and
        records run concurrently.
        """
        return FlinkAgentBuilder(self, input, key_selector)

    def from_table(
        self,
        input: Any,  # noqa: A002
        key_selector: Callable[[Any], Any] | KeySelector | None = None,
    ) -> FlinkAgentBuilder:
        """Input from a Table (insert-only); each record is a ``Row``."""
        return FlinkAgentBuilder(self, self.t_env.to_data_stream(input), key_selector)

    def execute(self, job_name: str | None = None) -> Any:
        """Run the job (blocks until a bounded job ends)."""
        self.configure_workers()
        return self._env.execute(job_name or "flink-agents")

    # -- SQL (flink_agents.sql; the session is made on first use) -------------------------------
    def execute_sql(self, statement: str) -> Any:
        """Run a SQL statement: ours (``CREATE TOOL``, ``CREATE AGENT``, ``SHOW TOOLS``...)
        or Flink's, with ``agent_run(...)`` calls running agents of the agent catalog."""
        from flink_agents.runtime.flink.sql import sql_session

        return sql_session(self).execute_sql(statement)

    def sql_query(self, query: str) -> Any:
        """The pyflink ``Table`` of a query (``agent_run(...)`` calls included)."""
        from flink_agents.runtime.flink.sql import sql_session

        return sql_session(self).sql_query(query)

    @property
    def catalog(self) -> Any:
        """The agent catalog (tools, agents, connections) of :meth:`execute_sql`."""
        from flink_agents.runtime.flink.sql import sql_session

        return sql_session(self).catalog

    # -- worker setup ----------------------------------------------------------------------------
    def configure_workers(self) -> None:
        """Make the Python workers find this interpreter, its packages and the jars; warn
        once about checkpoints that would wait for paced calls (:meth:`check_checkpointing`)."""
        self._configure_python()
        self._add_jars()
        if not self._checkpoints_checked:
            self._checkpoints_checked = True
            problem = self.check_checkpointing()
            if problem:
                log.warning("%s", problem)

    def check_checkpointing(self) -> str | None:
        """What is wrong with the job's checkpointing for the agents applied so far, or None.

        Calls waiting for a declared quota (``requests_per_minute`` / ``tokens_per_minute``)
        backpressure the agent, which then takes an input only as a call frees its place, at
        the quota's pace. Two things wait behind that (measured: docs/rate-limits.md):

        - an aligned checkpoint barrier waits behind the records queued in the network
          buffers in front of the agent (2-22 s under 10 calls a second): reported when
          unaligned checkpoints are off;
        - in process mode a Python operator's bundle (``python.fn-execution.bundle.size``,
          100,000 by default) emits its results from the task thread, which blocks on the
          backpressured output while the checkpoint's trigger waits, unaligned too (no
          checkpoint completed in 80 s): reported above :data:`_PROCESS_BUNDLE` records.
        """
        paced = [
            f"{provider.name!r} ({', '.join(f'{k}={v}' for k, v in limits.items())})"
            for plan in self._plans
            for providers in plan.resource_providers.values()
            for provider in providers.values()
            if (limits := _paced_limits(provider.arguments or provider.serialized or {}))
        ]
        checkpoints = self._env.get_checkpoint_config()
        if not paced or not checkpoints.is_checkpointing_enabled():
            return None
        problems = []
        if not checkpoints.is_unaligned_checkpoints_enabled():
            problems.append(
                "aligned checkpoints wait behind the inputs queued in front of the agent, which "
                "it takes only at the quota's pace: enable unaligned checkpoints "
                "(env.get_checkpoint_config().enable_unaligned_checkpoints()), or keep them "
                "aligned until a timeout: enable_unaligned_checkpoints() and "
                "set_aligned_checkpoint_timeout(Duration.of_seconds(1)) "
                "(set_alignment_timeout on Flink 1.20; "
                "execution.checkpointing.aligned-checkpoint-timeout; job-level)"
            )
        if self.execution_mode() == "process":
            conf = internals.environment_config(self._env)
            value = conf.getString(_BUNDLE_SIZE, None) or "100000"
            bundle = int(value) if value.strip().isdigit() else None  # else Flink says
            if bundle is not None and bundle > _PROCESS_BUNDLE:
                problems.append(
                    f"in process mode a checkpoint also waits for the results of a Python "
                    f"operator's bundle ({_BUNDLE_SIZE} = {bundle}) to pass the backpressured "
                    f"agent: set {_BUNDLE_SIZE} to {_PROCESS_BUNDLE} or less (job-level), "
                    "or use thread mode"
                )
        if not problems:
            return None
        return (
            f"checkpoints with paced model calls ({', '.join(sorted(set(paced)))}) can take "
            f"many seconds: {'; '.join(problems)}. See {_CHECKPOINTS_DOC}"
        )

    def _configure_python(self) -> None:
        """The execution mode, interpreter and path of the job's Python operators."""
        conf = internals.environment_config(self._env)
        conf.setString(EXECUTION_MODE, self.execution_mode())
        if conf.getString("python.executable", None) is None:
            conf.setString("python.executable", sys.executable)
        if conf.getString("python.client.executable", None) is None:
            conf.setString("python.client.executable", sys.executable)
        paths = self._python_paths()
        existing = conf.getString(PYTHONPATH, None)
        if existing:
            paths = [p for p in existing.split(os.pathsep) if p] + [
                p for p in paths if p not in existing.split(os.pathsep)
            ]
        conf.setString(PYTHONPATH, os.pathsep.join(paths))

    def execution_mode(self) -> str:
        """``python.execution-mode`` the job will use: the agents config, else the Flink
        configuration, else ``thread``."""
        conf = internals.environment_config(self._env)
        agents_mode = self.get_config().get(EXECUTION_MODE)
        return str(agents_mode or conf.getString(EXECUTION_MODE, None) or "thread")

    def _python_paths(self) -> list[str]:
        """The workers' Python path: the configured extras, then this interpreter's
        (the rules: :func:`flink_agents._python_path.worker_python_path`)."""
        from flink_agents._python_path import worker_python_path

        extra = self.get_config().get(PYTHONPATH) or []
        if isinstance(extra, str):
            extra = extra.split(os.pathsep)
        return worker_python_path(extra)

    def _add_jars(self) -> None:
        if self._jars_added:
            return
        self._jars_added = True
        from flink_agents.runtime.java import job_jars

        jars = job_jars(self.get_config())
        urls = [j if "://" in j else "file://" + os.path.abspath(j) for j in jars]
        if urls:
            self._env.add_jars(*urls)
