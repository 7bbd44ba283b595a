"""What an action sees while it runs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from flink_agents.api.approval import ApprovalResponse
from flink_agents.api.events.event import Event
from flink_agents.api.memory.long_term_memory import BaseLongTermMemory
from flink_agents.api.memory_object import MemoryObject
from flink_agents.api.metric_group import MetricGroup
from flink_agents.api.resource import Resource, ResourceType

_T = TypeVar("_T")


class RunnerContext(ABC):
    """The context passed to every action as its second argument."""

    @abstractmethod
    def send_event(self, event: Event) -> None:
        """Send an event; actions listening to its type run next in this run. An
        :class:`~flink_agents.api.events.event.OutputEvent`'s ``output`` leaves the agent."""

    @abstractmethod
    def get_resource(self, name: str, type: ResourceType) -> Resource:  # noqa: A002
        """The resource ``name`` of ``type``, created on first use and cached per slot."""

    @property
    @abstractmethod
    def short_term_memory(self) -> MemoryObject:
        """Memory of the current key that persists across its inputs (Flink keyed state)."""

    @property
    @abstractmethod
    def sensory_memory(self) -> MemoryObject:
        """Memory of the current run, cleared when the run ends."""

    @property
    def long_term_memory(self) -> BaseLongTermMemory:
        """Memory sets of text items with semantic search, kept in a vector store across
        runs and restarts, scoped to the job identifier and the current key (see
        :mod:`flink_agents.api.memory.long_term_memory`).

        Raises:
            ConfigurationError: ``LongTermMemoryOptions.Mem0`` options are not all set.
        """
        raise NotImplementedError(f"{type(self).__name__} has no long-term memory")

    @property
    @abstractmethod
    def config(self) -> Any:
        """The agent configuration (:class:`~flink_agents.api.core_options.AgentConfiguration`)."""

    @property
    @abstractmethod
    def action_config(self) -> dict[str, Any]:
        """The config given to the running action (``add_action(..., **config)``)."""

    def get_action_config_value(self, key: str, default: Any = None) -> Any:
        """One value of :attr:`action_config`."""
        return self.action_config.get(key, default)

    @abstractmethod
    def durable_execute(
        self,
        func: Callable[..., _T],
        *args: Any,
        reconciler: Callable[[], _T] | None = None,
        **kwargs: Any,
    ) -> _T:
        """Call ``func(*args, **kwargs)`` once: its result (or exception) is recorded in
        state, and a run replayed after a failure gets the recorded outcome instead of
        calling again. Calls are matched by their order in the action and the function's
        name, so the action must make them in the same order when replayed.

        Args:
            func: the function (no memory access or ``send_event`` inside it).
            *args: its arguments.
            reconciler: optional zero-argument function for recovery: when a restore finds
                this call started but not finished (the failure came while it ran), the
                reconciler is called instead of ``func`` to find out what happened (e.g. ask
                a payment service whether the payment went through); what it returns or
                raises is recorded and replayed like ``func``'s outcome. Not passed to
                ``func``. Without one, such a call runs ``func`` again.
            **kwargs: its keyword arguments.

        The result must be picklable.
        """

    @abstractmethod
    async def durable_execute_async(
        self,
        func: Callable[..., Awaitable[_T] | _T],
        *args: Any,
        reconciler: Callable[[], Awaitable[_T] | _T] | None = None,
        **kwargs: Any,
    ) -> _T:
        """Like :meth:`durable_execute`, without blocking other keys while it waits: an
        ``async def`` function (or reconciler) is awaited, a plain one runs on a worker
        thread."""

    async def request_approval(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        tool_call_id: str | None = None,
    ) -> ApprovalResponse:
        """Ask a human whether to call ``tool_name`` with ``arguments``; returns the decision.

        The first time, the run pauses here: the agent emits an
        :class:`~flink_agents.api.approval.ApprovalRequest` and the input stays uncommitted
        until an :class:`~flink_agents.api.approval.ApprovalResponse` for it arrives (or
        ``approval.timeout`` rejects it). The run then starts again from its input and every
        durable call made before the pause is answered from the log, so the action must make
        the same calls in the same order up to here (as for a restore). Code before this call
        runs again on resume; keep side effects in durable calls.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot pause a run for approval")

    async def call_agent(self, name: Any, input: Any) -> Any:  # noqa: A002
        """Run the sub-agent ``name`` on ``input`` and return its output.

        ``name`` is an ``AGENT`` resource (``add_resource(name, ResourceType.AGENT,
        agent)``) or an :class:`~flink_agents.api.tools.agent_tool.AgentTool` tool (or
        that tool itself, as ``get_resource`` returns it). The
        sub-agent runs inside this run: the same key, its own short-term memory, its own
        events and actions; its model and tool calls are durable (a run replayed after a
        restore answers them from the log), so call it in the same order when replayed,
        like a durable call.

        Returns:
            its output: one output as it is, several as a list, None when it sent none.

        Raises:
            SubagentError: it failed (its own error is the cause), or no sub-agent has that
                name.
            SubagentDepthError: the call would nest deeper than ``max-subagent-depth``.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot call sub-agents")

    @property
    @abstractmethod
    def key(self) -> Any:
        """The key of the input being processed."""

    @property
    @abstractmethod
    def agent_metric_group(self) -> MetricGroup:
        """Metrics of the agent."""

    @property
    @abstractmethod
    def action_metric_group(self) -> MetricGroup:
        """Metrics of the running action."""
