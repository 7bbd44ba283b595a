"""One chat call through a connection's retries, as every remote chat model makes it
(private).

Each provider builds its request and says how to send it and read the reply
(:class:`ChatCall`, from its ``_chat_call``); :class:`RetriedChat` runs it through the
connection's retry loop (``call_with_retries`` and its asynchronous forms in
``integrations/_common.py``: the governor, deadlines and throttling live there) and does
what all providers do around that: estimate the prompt's tokens for the governor, and put
the call's latency and attempts and what the governor did (``throttled``, ``wait_ms``) into
the reply's ``extra_args``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.tools.tool import Tool
from flink_agents.integrations._common import Stopwatch
from flink_agents.integrations._pacing_inputs import (
    CallReport,
    estimate_prompt_tokens,
    with_report,
)

if TYPE_CHECKING:
    from flink_agents.integrations._common import ModelClientSettings


def _reported(
    message: ChatMessage, watch: Stopwatch, attempts: int, report: CallReport
) -> ChatMessage:
    """``message`` with the call's latency, attempts and the governor's report in its
    ``extra_args`` (in that order, after what the provider's reply said)."""
    message.extra_args["latency_ms"] = watch.ms
    message.extra_args["attempts"] = attempts
    return with_report(message, report)


@dataclass(frozen=True)
class ChatCall:
    """How to make one chat call of a provider.

    Attributes:
        model: the model asked (for the governor and errors).
        attempt: one attempt, blocking (raises ``CallFailure``).
        usage_of: reads ``(prompt, completion)`` token counts from a reply.
        parse: the assistant's message of a reply (the call's ``latency_ms`` and
            ``attempts`` are added to its ``extra_args``).
        aattempt: one attempt as a coroutine for :meth:`RetriedChat.achat`; None: the
            blocking ``attempt`` runs on a worker thread.
    """

    model: str
    attempt: Callable[[], Any]
    usage_of: Callable[[Any], tuple[Any, Any] | None]
    parse: Callable[[Any], ChatMessage]
    aattempt: Callable[[], Awaitable[Any]] | None = None


class RetriedChat:
    """``chat`` / ``achat`` of a chat model connection from its :meth:`_chat_call` (a mixin,
    before ``BaseChatModelConnection`` in the bases of a connection that is also a
    ``ModelClientSettings``)."""

    def _chat_call(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        """The provider's request for ``messages`` (see :class:`ChatCall`)."""
        raise NotImplementedError

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """Ask the model; the options are those of the connection's setup class.

        Raises:
            ModelCallError: the call failed after retries (names provider, model, status).
        """
        call = self._chat_call(messages, tools, kwargs)
        watch, report = Stopwatch(), CallReport()
        reply, attempts = cast("ModelClientSettings", self).call_with_retries(
            call.attempt,
            model=call.model,
            tokens=estimate_prompt_tokens(messages, tools),
            usage_of=call.usage_of,
            report=report,
        )
        return _reported(call.parse(reply), watch, attempts, report)

    async def achat(
        self,
        messages: Sequence[ChatMessage],
        tools: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """Asynchronous :meth:`chat`: an asynchronous client where the provider has one,
        else the SDK call on a worker thread; the waits for the connection's limits happen
        on the event loop.

        Raises:
            ModelCallError: the call failed after retries (names provider, model, status).
        """
        call = self._chat_call(messages, tools, kwargs)
        watch, report = Stopwatch(), CallReport()
        client = cast("ModelClientSettings", self)
        tokens = estimate_prompt_tokens(messages, tools)
        if call.aattempt is None:
            reply, attempts = await client.acall_in_thread_with_retries(
                call.attempt, model=call.model, tokens=tokens, usage_of=call.usage_of, report=report
            )
        else:
            reply, attempts = await client.acall_with_retries(
                call.aattempt,
                model=call.model,
                tokens=tokens,
                usage_of=call.usage_of,
                report=report,
            )
        return _reported(call.parse(reply), watch, attempts, report)
