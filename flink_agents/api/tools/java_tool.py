"""Tools implemented in Java (``org.flinkagents.bridge.JavaTool``), callable from Python agents.

Declare one with a descriptor; extra arguments become the Java tool's configuration::

    agent.add_resource("upper_case", ResourceType.TOOL, ResourceDescriptor(
        clazz=JavaTool, java_clazz="org.flinkagents.examples.UpperCaseTool"))

The resource name should equal the Java tool's ``name()`` (the name the model calls it by).
The tool's name, description and argument schema come from the Java object when the tool is
created on the task, not when the plan is compiled. Java tools need a Flink job in thread mode
(see :mod:`flink_agents.runtime.java`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field, PrivateAttr

from flink_agents.api._java import JavaHandleHolder
from flink_agents.api.tools.tool import Tool, ToolMetadata, ToolType


class JavaTool(Tool):
    """A tool whose implementation is a Java class.

    Attributes:
        java_clazz: fully qualified name of a class implementing
            ``org.flinkagents.bridge.JavaTool`` with a public no-argument constructor.
        metadata: filled from the Java object on creation when not given.
    """

    model_config = ConfigDict(extra="allow")

    uses_java_bridge: ClassVar[bool] = True

    java_clazz: str
    metadata: ToolMetadata = Field(default=None, validate_default=False)  # type: ignore[assignment]

    _holder: JavaHandleHolder = PrivateAttr(default_factory=JavaHandleHolder)

    @classmethod
    def tool_type(cls) -> ToolType:
        return ToolType.REMOTE_FUNCTION

    def model_post_init(self, context: Any, /) -> None:
        if self.metadata is None:
            meta = self._handle().metadata()
            self.metadata = ToolMetadata.model_validate(meta)

    @property
    def java_config(self) -> dict[str, Any]:
        """The configuration handed to the Java tool's ``open``: the extra arguments."""
        return dict(self.model_extra or {})

    def _handle(self) -> Any:
        return self._holder.get(self.java_clazz, "tool", self.java_config, self.get_resource)

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Run the Java tool with keyword arguments; returns its decoded JSON result.

        Raises:
            JavaBridgeError: the Java tool threw (the message has the Java exception).
        """
        if args:
            raise TypeError(f"Java tool {self.name!r} takes keyword arguments only")
        return self._handle().call(kwargs)

    def close(self) -> None:
        """Close the Java tool (calls its ``close()``)."""
        self._holder.close()
