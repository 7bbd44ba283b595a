"""The one error hierarchy of flink-agents.

::

    FlinkAgentsError
     +-- ConfigurationError          developer mistake: a bad option value or key
     |    +-- MissingExtraError      an optional dependency is not installed (names the extra)
     +-- PlanValidationError         developer mistake: the agent cannot be compiled
     +-- MemoryValueError            developer mistake: a value memory cannot hold
     +-- EventAttributeError         developer mistake: an event attribute that is not JSON
     |                               (also pydantic's ValidationError, as upstream raises)
     +-- TriggerConditionError       developer mistake: an action's trigger condition does not
     |                               parse or breaks a rule (names the column)
     +-- YamlError                   developer mistake in a YAML agents file (each problem
     |                               names the file, the line and the field)
     +-- SqlError                    developer mistake in a SQL statement (flink_agents.sql)
     |    +-- SqlParseError          a statement does not parse (line, column, what was expected)
     |    +-- CatalogError           an unknown, already existing or still used catalog object
     +-- RuntimeFailure              something failed while a run was executing
     |    +-- ActionError            an action raised (carries key, action, event id)
 |    |    +-- InterceptorError  a model or tool interceptor raised (carries its name)
 |    |    +-- HookError         a hook raised (carries its name and point)
 |    |    +-- InputSchemaError  an input does not match the agent's input schema
     |    +-- InputRecordError       an input record cannot become an input event (not JSON
     |                               serializable, nested too deeply)
     |    +-- RunLimitError          a run sent more events than max-events-per-run, or its
     |                               actions took longer than max-action-time-per-run
     |    +-- ResourceError          a resource could not be found or created
     |    |    +-- VectorStoreError  a vector store rejected a request (unknown collection,
     |    |                          dimension mismatch, bad filter, missing id)
     |    +-- ModelCallError         a chat/embedding model call failed
     |    |    +-- ModelCallTimeoutError  ... ran out of time (also a CallTimeoutError)
     |    +-- ToolError              a tool call failed
     |    |    +-- ToolArgumentError the model called a tool with bad arguments
     |    |    +-- UnknownToolError  the model called a tool that does not exist
     |    |    +-- ToolRejectedError a human rejected the call (or its approval expired)
     |    +-- OutputSchemaError      a model reply does not match the output schema
     |    +-- CallTimeoutError       a model, embedding, tool, MCP or action call ran past
     |                               its deadline (also a built-in TimeoutError)
     |    +-- JavaBridgeError        a Java resource failed (carries the Java message)
     +-- TaskCancelledError          the Flink task was cancelled while its operator thread
     |                               waited (in-flight gate, drain): the wait gave up
     +-- UnsupportedFlinkVersionError  the installed PyFlink is outside the supported versions
     |                               (raised when the Flink host is imported; also an ImportError)
     +-- ClusterError                the local standalone cluster could not be started,
     |                               reached or stopped, or a job submission failed
     +-- CassetteError               a test cassette cannot be read or written
     |    +-- CassetteMismatchError  a call has no recording in the cassette (replay mode);
     |                               the message shows the diff to the closest recording
     +-- CommandError                the ``flink-agents`` command ends with an error
          +-- UsageError             invoked wrongly (bad arguments, input): exit code 2
          +-- CommandFailure         invoked rightly, but the work failed: exit code 1

Every error pickles (Flink pickles exceptions between the Python worker and the JVM), so
all extra attributes are passed through ``__reduce__``. Messages are masked when an error is
made: the secret rule (URL credentials, ``api_key=...``) and every secret value registered
in the process (the plans' secrets; ``flink_agents/secrets.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_core import ValidationError

from flink_agents.secrets import registered_masker


def _masked(text: str) -> str:
    return registered_masker().mask(text)


class FlinkAgentsError(Exception):
    """Root of every error raised by flink-agents."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*(_masked(a) if isinstance(a, str) else a for a in args))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, self.__dict__.copy()))


def _rebuild(cls: type[FlinkAgentsError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class ConfigurationError(FlinkAgentsError, ValueError):
    """An option has an unknown key or a value of the wrong type or range."""


class MissingExtraError(ConfigurationError):
    """An optional dependency of an integration is not installed.

    Attributes:
        extra: the extra of ``flink-agents-py`` that installs it (``pip install
            'flink-agents-py[<extra>]'``).
    """

    def __init__(self, message: str, *, extra: str = "") -> None:
        super().__init__(message)
        self.extra = extra


class PlanValidationError(FlinkAgentsError, ValueError):
    """An agent cannot be compiled into a plan.

    Attributes:
        problems: every problem found, each with a hint on how to fix it.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"the agent plan is invalid ({len(self.problems)} problem(s)):\n{lines}")


class MemoryValueError(FlinkAgentsError, TypeError):
    """A value that memory cannot hold (memory keeps JSON-like values only)."""


class SqlError(FlinkAgentsError, ValueError):
    """A SQL statement cannot be run: an unknown table column, a bad ``agent_run`` argument...

    Attributes:
        line: the line of the statement (1-based) where the problem is, when known.
        column: the column (1-based), when known.
    """

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None):
        self.message = message
        self.line = line
        self.column = column
        where = f"line {line}, column {column}: " if line is not None and column else ""
        super().__init__(where + message)


class SqlParseError(SqlError):
    """A statement does not parse; the message names the line, the column and what was
    expected there.

    Attributes:
        expected: what the parser expected at that position.
    """

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        expected: str | None = None,
    ) -> None:
        self.expected = expected
        super().__init__(message, line=line, column=column)


class CatalogError(SqlError):
    """A tool, agent, connection, model or function is unknown (the message lists what
    exists), already exists, or is still used by another object."""


class EventAttributeError(FlinkAgentsError, ValidationError):
    """An event that cannot be made: an attribute that cannot be written as JSON, a plain
    ``Event`` without a type, a malformed ``attributes`` argument.

    Also a pydantic ``ValidationError`` (and so a ``ValueError``), which is what Apache
    Flink Agents raises there: ``except ValidationError`` code keeps working. Assigning a
    non-serializable value to an existing event (``event.x = ...``, ``set_attr``) raises
    pydantic's ``PydanticSerializationError`` instead, as upstream does (that class cannot
    be subclassed).

    Args:
        message: what is wrong and how to fix it (``str(error)``).
        title: the model named in pydantic's view of the error (``errors()``).
    """

    def __new__(cls, message: Any = "", title: Any = "Event", *rest: Any) -> EventAttributeError:
        if rest or not isinstance(title, str):
            # pydantic's from_exception_data calls cls(title, line_errors, ...)
            return super().__new__(cls, message, title, *rest)
        line = {"type": "value_error", "loc": (), "input": None, "ctx": {"error": message}}
        err = cls.from_exception_data(title, [line])  # type: ignore[list-item]
        err.__dict__["message"] = message
        err.__dict__["title"] = title
        return err

    def __init__(self, *args: Any) -> None:
        # ValidationError takes no __init__ arguments; the state was set by __new__.
        pass

    def __str__(self) -> str:
        return str(self.__dict__.get("message", ""))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    @property
    def args(self) -> tuple[Any, ...]:  # type: ignore[override]
        return (str(self),)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.__dict__.get("message", ""), self.__dict__.get("title", "Event")))


class TriggerConditionError(FlinkAgentsError, ValueError):
    """A trigger condition of an action that does not parse or breaks a rule of the
    condition language (see ``flink_agents.api.trigger_conditions``).

    Attributes:
        reason: what is wrong.
        expression: the condition as written.
        column: the 1-based column of the problem, when known.
    """

    def __init__(self, reason: str, expression: str = "", position: int | None = None) -> None:
        self.reason = reason
        self.expression = expression
        self._position = position
        self.column = None if position is None else position + 1
        if position is None:
            text = f"trigger condition {expression!r}: {reason}"
        else:
            text = (
                f"trigger condition {expression!r}, column {self.column}: {reason}\n"
                f"    {expression}\n    {' ' * position}^"
            )
        super().__init__(text)

    def __reduce__(self) -> tuple[Any, ...]:  # pickled with its parts, not its text
        return (type(self), (self.reason, self.expression, self._position))


@dataclass(frozen=True)
class YamlProblem:
    """One problem of a YAML agents file.

    Attributes:
        message: what is wrong and how to fix it.
        path: the file (None when the problem is not in one file).
        line: the line, 1-based (None when unknown).
        column: the column, 1-based (None when unknown).
        field: where in the document, e.g. ``agents[0].actions[1].function``.
    """

    message: str
    path: str | None = None
    line: int | None = None
    column: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.path or ""
        if where and self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        parts = [p for p in (where, self.field) if p]
        return ": ".join([*parts, self.message])


class YamlError(FlinkAgentsError, ValueError):
    """A YAML agents file (``load_yaml``) is not valid, or an agent loaded from one refers
    to something that does not exist. Lists every problem found, each with its file, line
    and field (a ``ValueError``, as Apache Flink Agents' loader raises).

    Attributes:
        problems: every problem found.
        path: the file of the first problem.
        line: its line (1-based).
        column: its column (1-based).
        field: its field.
    """

    def __init__(self, problems: list[YamlProblem] | str) -> None:
        if isinstance(problems, str):
            problems = [YamlProblem(problems)]
        self.problems = list(problems)
        first = self.problems[0] if self.problems else YamlProblem("")
        self.path, self.line, self.column, self.field = (
            first.path,
            first.line,
            first.column,
            first.field,
        )
        if len(self.problems) == 1:
            text = str(first)
        else:
            files = {p.path for p in self.problems}
            where = f"{files.pop()}" if len(files) == 1 and None not in files else "YAML agents"
            text = f"{len(self.problems)} problems in {where}:\n" + "\n".join(
                f"  {p}" for p in self.problems
            )
        super().__init__(text)


class TaskCancelledError(FlinkAgentsError):
    """The Flink task was cancelled (or its slot closed) while the operator thread waited
    for the agent's runs; the wait gave up so that the cancellation can finish."""


class RuntimeFailure(FlinkAgentsError):
    """Something failed while a run was executing.

    Attributes:
        key: the key of the input whose run failed (None outside a run).
        action: the action that was running, if any.
        event_id: the id of the event the action was processing, if any.
    """

    def __init__(
        self,
        message: str,
        *,
        key: Any = None,
        action: str | None = None,
        event_id: str | None = None,
    ) -> None:
        self.message = _masked(message)
        self.key = key
        self.action = action
        self.event_id = event_id
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.key is not None:
            where.append(f"key={self.key!r}")
        if self.action is not None:
            where.append(f"action={self.action!r}")
        if self.event_id is not None:
            where.append(f"event={self.event_id}")
        return f"{self.message} [{', '.join(where)}]" if where else self.message

    def with_location(
        self, *, key: Any = None, action: str | None = None, event_id: str | None = None
    ) -> RuntimeFailure:
        """Fill in where the error happened, keeping what is already known."""
        if self.key is None:
            self.key = key
        if self.action is None:
            self.action = action
        if self.event_id is None:
            self.event_id = event_id
        self.args = (self._render(),)
        return self

    def __str__(self) -> str:
        return self._render()


class ActionError(RuntimeFailure):
    """An action raised an exception; the original is the ``__cause__``."""


class InterceptorError(ActionError):
    """A model or tool interceptor raised; the original is the ``__cause__``.

    Attributes:
        name: the interceptor's name.
    """

    def __init__(self, message: str, *, name: str = "", **location: Any) -> None:
        self.name = name
        super().__init__(message, **location)


class HookError(ActionError):
    """A hook raised; the original is the ``__cause__``.

    Attributes:
        name: the hook's name.
        point: where it ran (``before_agent``, ``before_model``...).
    """

    def __init__(self, message: str, *, name: str = "", point: str = "", **location: Any) -> None:
        self.name = name
        self.point = point
        super().__init__(message, **location)


class InputSchemaError(ActionError):
    """An input does not match the agent's ``input_schema``.

    Permanent: the RETRY strategy does not run the action again for it (the same input fails
    the same way); it fails at once, as RETRY does when its retries run out.
    """

    retryable = False


class InputRecordError(RuntimeFailure):
    """An input record cannot become the run's input event: it cannot be written as JSON
    (an object JSON cannot hold, nesting deeper than JSON allows). A poison record: it
    fails the same way every time, so it is never retried; under ``ignore`` it gives an
    error event, under ``dead-letter`` a dead letter, under ``fail``/``retry`` this error.
    """

    retryable = False


class RunLimitError(RuntimeFailure):
    """A run exceeded ``max-events-per-run`` or ``max-action-time-per-run``: its actions
    probably keep sending each other events (the message names the cycle's event types).
    Never retried.

    Attributes:
        event_types: the event types of the cycle (or of the last events), most frequent
            first.
    """

    retryable = False

    def __init__(self, message: str, *, event_types: list[str] | None = None, **location: Any):
        self.event_types = list(event_types or [])
        super().__init__(message, **location)


class ResourceError(RuntimeFailure):
    """A resource is missing, has the wrong type, or failed to be created."""


class VectorStoreError(ResourceError, ValueError):
    """A vector store rejected a request: an unknown collection, an embedding of the wrong
    dimension, a malformed metadata filter, an id that does not exist."""


class ModelCallError(RuntimeFailure):
    """A model call failed after retries.

    Attributes:
        provider: e.g. ``"openai"``, ``"ollama"``.
        model: the model name.
        status: the HTTP status, if there was one.
        throttled: the provider refused the (last) attempt because of a rate or quota
            limit (``flink_agents/integrations/_throttling.py`` classifies each provider's
            answers).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        status: int | None = None,
        throttled: bool = False,
        **location: Any,
    ) -> None:
        self.provider = provider
        self.model = model
        self.status = status
        self.throttled = throttled
        parts = [p for p in (provider and f"provider={provider}", model and f"model={model}") if p]
        if status is not None:
            parts.append(f"status={status}")
        prefix = f"{', '.join(parts)}: " if parts else ""
        super().__init__(prefix + message, **location)


class ToolError(RuntimeFailure):
    """A tool call failed."""


class ToolArgumentError(ToolError):
    """A tool was called with arguments that do not match its schema."""


class UnknownToolError(ToolError):
    """A tool that does not exist was requested."""


class ToolRejectedError(ToolError):
    """A tool call that needed a human's approval was rejected, or its approval request
    expired (``approval.timeout``)."""


class OutputSchemaError(RuntimeFailure):
    """A model reply could not be parsed into the requested output schema."""


class CallTimeoutError(RuntimeFailure, TimeoutError):
    """A model, embedding, tool, MCP or action call ran past its deadline (a connection's
    ``timeout`` / ``total_timeout``, ``model.timeout``, ``tool.timeout``,
    ``action.timeout``, an MCP server's ``timeout`` or a resource's own ``timeout``).

    Attributes:
        kind: ``"chat model"``, ``"embedding model"``, ``"tool"``, ``"mcp"`` or
            ``"action"``.
        name: the chat model setup or model, tool, MCP request or action name.
        timeout: the deadline in seconds.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
        **location: Any,
    ) -> None:
        self.kind = kind
        self.name = name
        self.timeout = timeout
        super().__init__(message, **location)


class ModelCallTimeoutError(ModelCallError, CallTimeoutError):
    """A model or embedding connection's call ran out of time: its last attempt had no
    complete reply within ``timeout``, or the whole call (every attempt and the waits
    between them) passed ``total_timeout``. Both a :class:`ModelCallError` (provider, model)
    and a :class:`CallTimeoutError` (kind, name, timeout).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        kind: str = "chat model",
        timeout: float | None = None,
        **location: Any,
    ) -> None:
        ModelCallError.__init__(self, message, provider=provider, model=model, **location)
        # Set after: CallTimeoutError.__init__ (next in the MRO) reset them to None.
        self.kind = kind
        self.name = model
        self.timeout = timeout


class JavaBridgeError(RuntimeFailure):
    """A Java resource raised; the message carries the Java exception text."""


class UnsupportedFlinkVersionError(FlinkAgentsError, ImportError):
    """The installed apache-flink (PyFlink) is outside the supported versions; raised when
    the Flink host (``flink_agents.runtime.flink``) is imported. The message names the
    supported range and how to install a supported version.

    Attributes:
        version: the installed apache-flink version.
    """

    def __init__(self, message: str, *, version: str = "") -> None:
        super().__init__(message)
        self.version = version


class ClusterError(FlinkAgentsError, RuntimeError):
    """The local standalone cluster could not be started, reached or stopped, or a job
    submission failed (see :mod:`flink_agents.ops.cluster`)."""


class CassetteError(FlinkAgentsError):
    """A test cassette (:mod:`flink_agents.testing.cassette`) is missing, malformed or
    cannot be written; the message names the file and how to fix it."""


class CassetteMismatchError(CassetteError, AssertionError):
    """In replay mode, a model, embedding or tool call that the cassette has no recording
    of; the message shows the diff to the closest recorded request."""


class CommandError(FlinkAgentsError):
    """The ``flink-agents`` command ends with this error: its message is printed on one
    line, and the process exits with :attr:`exit_code`."""

    #: The process exit code.
    exit_code: int = 1


class UsageError(CommandError):
    """The command was invoked wrongly: bad arguments, a ``module:attr`` that names no
    agent, a missing or malformed input file, a bad ``--config`` value (exit code 2)."""

    exit_code = 2


class CommandFailure(CommandError):
    """The command was invoked rightly but its work failed: an invalid agent, a failing
    action, a cluster command or job that failed (exit code 1)."""

    exit_code = 1
