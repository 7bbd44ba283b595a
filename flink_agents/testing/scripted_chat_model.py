"""A chat model that answers from a script: a list of replies or a function of the messages.

Use it in tests of your agents (and we use it in ours)::

    agent.add_resource("model_conn", ResourceDescriptor(
        clazz=ScriptedChatModelConnection,
        replies=[tool_call("add", a=1, b=2), "The sum is 3."],
        latency=0.1,
    ))
    agent.add_resource("model", ResourceDescriptor(
        clazz=ScriptedChatModelSetup, connection="model_conn", tools=["add"]))

Replies are strings (an assistant answer), :class:`ChatMessage` objects, or dicts in
``ChatMessage`` form (``tool_call`` builds one asking for a tool). ``respond`` names a
function ``(messages, tools) -> reply`` as ``"package.module:function"`` (or the function
itself: by name in the plan, or by value when the job script defines it). Because resources
are created on the task side from the plan, all arguments must be JSON-like.

Calls are counted per instance (``calls``), per ``name`` across instances in the process
(``ScriptedChatModelConnection.call_counts``), and, for multi-process Flink jobs, by
appending a line to ``count_file``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pydantic import PrivateAttr, field_validator

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup
from flink_agents.api.tools.tool import Tool

_COUNT_LOCK = threading.Lock()


def tool_call(name: str, call_id: str | None = None, **arguments: Any) -> dict[str, Any]:
    """A scripted assistant reply asking for tool ``name`` with ``arguments``."""
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        call["id"] = call_id
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def reply_text(text: str) -> dict[str, Any]:
    """A scripted assistant answer."""
    return {"role": "assistant", "content": text}


def _as_message(reply: Any) -> ChatMessage:
    if isinstance(reply, ChatMessage):
        return reply
    if isinstance(reply, str):
        return ChatMessage(role=MessageRole.ASSISTANT, content=reply)
    if isinstance(reply, dict):
        return ChatMessage.model_validate({"role": "assistant", **reply})
    raise TypeError(
        f"a scripted reply must be a str, ChatMessage or dict, got {type(reply).__name__}"
    )


def _resolve(path: str) -> Callable[..., Any]:
    module, sep, name = path.partition(":")
    if not sep:
        module, _, name = path.rpartition(".")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


class ScriptedChatModelConnection(BaseChatModelConnection):
    """A chat model connection that replies from a script.

    Attributes:
        replies: replies in order; with ``cycle`` the list repeats, otherwise running past
            its end raises.
        respond: ``"module:function"`` of a function ``(messages, tools) -> reply``
            (used when ``replies`` is not given).
        latency: seconds each call takes, or ``[low, high]`` for a uniform random latency.
        cycle: repeat ``replies`` forever.
        name: the name calls are counted under in ``call_counts``.
        count_file: append one line per call to this file (counts across processes).
        fail_first: raise ``RuntimeError`` on the first N calls (to test retries).
    """

    replies: list[Any] | None = None
    respond: str | None = None
    latency: float | list[float] = 0.0
    cycle: bool = False
    name: str = "scripted"
    count_file: str | None = None
    fail_first: int = 0

    call_counts: ClassVar[dict[str, int]] = {}

    _calls: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _respond: Callable[..., Any] | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        respond = data.get("respond")
        super().__init__(**data)
        if callable(respond):
            # Keep the function itself: one of a job script reaches the workers by value
            # (the plan pickles it), where its "module:function" name does not import.
            self._respond = respond

    @field_validator("respond", mode="before")
    @classmethod
    def _function_to_path(cls, value: Any) -> Any:
        if callable(value):
            return f"{value.__module__}:{value.__qualname__}"
        return value

    @property
    def calls(self) -> int:
        """Calls made on this instance."""
        return self._calls

    @classmethod
    def reset_counts(cls) -> None:
        """Forget the per-name call counts."""
        with _COUNT_LOCK:
            cls.call_counts.clear()

    def _delay(self) -> float:
        if isinstance(self.latency, (list, tuple)):
            low, high = self.latency
            return random.uniform(low, high)
        return float(self.latency)

    def _next(self, messages: Sequence[ChatMessage], tools: list[Tool] | None) -> ChatMessage:
        # Private attributes through the dict: pydantic's attribute fallback is slow, and
        # benchmarks use this model as a zero-cost stand-in.
        private = self.__pydantic_private__
        assert private is not None
        with private["_lock"]:
            index = private["_calls"]
            private["_calls"] = index + 1
        with _COUNT_LOCK:
            self.call_counts[self.name] = self.call_counts.get(self.name, 0) + 1
            if self.count_file:
                with open(self.count_file, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"name": self.name, "n": index}) + "\n")
        if index < self.fail_first:
            raise RuntimeError(f"scripted failure {index + 1} of {self.fail_first}")
        if self.replies is not None:
            if index >= len(self.replies) and not self.cycle:
                raise RuntimeError(
                    f"scripted model {self.name!r} ran out of replies after "
                    f"{len(self.replies)} calls"
                )
            return _as_message(self.replies[index % len(self.replies)])
        if self.respond is not None:
            if private["_respond"] is None:
                private["_respond"] = _resolve(self.respond)
            return _as_message(private["_respond"](list(messages), tools or []))
        last = messages[-1].content if messages else ""
        return ChatMessage(role=MessageRole.ASSISTANT, content=last)

    def chat(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None = None, **kwargs: Any
    ) -> ChatMessage:
        delay = self._delay()
        if delay:
            time.sleep(delay)
        return self._next(messages, tools)

    async def achat(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None = None, **kwargs: Any
    ) -> ChatMessage:
        delay = self._delay()
        if delay:
            await asyncio.sleep(delay)
        return self._next(messages, tools)


class ScriptedChatModelSetup(BaseChatModelSetup):
    """A setup for the scripted connection; ``extra`` options are passed through."""

    # Optional here: the script decides; no model name needed.
    model: str | None = None  # type: ignore[assignment]
    extra: dict[str, Any] = {}

    @property
    def model_kwargs(self) -> dict[str, Any]:
        return dict(self.extra)
