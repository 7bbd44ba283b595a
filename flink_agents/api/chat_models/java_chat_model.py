"""Chat models implemented in Java (``org.flinkagents.bridge.JavaChatModel``), used from Python.

Upstream Flink Agents names (``JavaChatModelConnection`` / ``JavaChatModelSetup``, the
``java_clazz`` argument) are kept::

    @chat_model_connection
    @staticmethod
    def java_model() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=JavaChatModelConnection,
                                  java_clazz="com.acme.MyModel", endpoint="http://...")

    @chat_model_setup
    @staticmethod
    def model() -> ResourceDescriptor:
        return ResourceDescriptor(clazz=JavaChatModelSetup, connection="java_model",
                                  model="m1", tools=["upper_case", "my_python_tool"])

Extra arguments of the connection become the Java object's configuration (its
``open(configJson)``); extra arguments of the setup become per-call options (next to
``model``). The tools offered to a Java model may be Java or Python tools: the model only sees
their names and schemas, and the tool calls it asks for run as usual. Java chat models need a
Flink job in thread mode (see :mod:`flink_agents.runtime.java`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import ConfigDict, PrivateAttr

from flink_agents.api._java import JavaHandleHolder
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup
from flink_agents.api.tools.tool import Tool


class JavaChatModelConnection(BaseChatModelConnection):
    """A chat model connection whose implementation is a Java class.

    Attributes:
        java_clazz: fully qualified name of a class implementing
            ``org.flinkagents.bridge.JavaChatModel`` with a public no-argument constructor.
    """

    model_config = ConfigDict(extra="allow")

    uses_java_bridge: ClassVar[bool] = True

    java_clazz: str

    _holder: JavaHandleHolder = PrivateAttr(default_factory=JavaHandleHolder)

    def model_post_init(self, context: Any, /) -> None:
        self._handle()  # create (and open) the Java object with the resource: fail early

    @property
    def java_config(self) -> dict[str, Any]:
        """The configuration handed to the Java model's ``open``: the extra arguments."""
        return dict(self.model_extra or {})

    def _handle(self) -> Any:
        return self._holder.get(self.java_clazz, "chat_model", self.java_config, self.get_resource)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """One call of the Java model; ``kwargs`` travel as its options JSON.

        Raises:
            JavaBridgeError: the Java model threw (the message has the Java exception).
        """
        started = time.perf_counter()
        reply = self._handle().chat(
            [m.model_dump(mode="json") for m in messages],
            [t.metadata.to_openai_tool() for t in tools or []],
            kwargs,
        )
        reply["role"] = reply.get("role") or "assistant"
        if reply.get("content") is None:
            reply["content"] = ""
        extra = dict(reply.get("extra_args") or {})
        extra.setdefault("latency", time.perf_counter() - started)
        reply["extra_args"] = extra
        return ChatMessage.model_validate(reply)

    def close(self) -> None:
        """Close the Java model (calls its ``close()``)."""
        self._holder.close()


class JavaChatModelSetup(BaseChatModelSetup):
    """How an agent uses a (Java or Python) chat model connection.

    Extra arguments (``temperature=0.2``...) are passed to the connection on every call, next
    to ``model``. Upstream's ``java_clazz`` argument is accepted and passed along the same way;
    a Java setup class is not needed here, the Java side is the connection.
    """

    model_config = ConfigDict(extra="allow")

    # Optional here: a Java connection may fix the model itself.
    model: str | None = None  # type: ignore[assignment]

    @property
    def model_kwargs(self) -> dict[str, Any]:
        options: dict[str, Any] = {"model": self.model} if self.model else {}
        options.update(self.model_extra or {})
        return options
