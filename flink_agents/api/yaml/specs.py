"""The schema of YAML agents files, as pydantic models (Apache Flink Agents' YAML API).

A file declares agents under ``agents:`` and, beside it, shared resources and actions that
every agent of the environment can use::

    agents:
      - name: review_analysis_agent
        actions:
          - name: process_input
            function: my_pkg.actions:process_input
            listen_to: [input]            # 0.3 name; `trigger_conditions` on newer releases
        chat_model_setups:
          - {name: review_model, clazz: ollama, connection: ollama_server, model: qwen3:8b}
    chat_model_connections:               # shared
      - {name: ollama_server, clazz: ollama, base_url: "http://localhost:11434"}

These models check the shape of a file (required keys, types, unknown keys); the loader
(:mod:`flink_agents.api.yaml.loader`) then checks what the names refer to. ``python -m
flink_agents.api.yaml.specs`` prints the JSON Schema (for an editor's YAML language server).
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

Language = Literal["python", "java"]
"""Implementation language of a resource, tool or action (``python`` when omitted)."""


class DescriptorSpec(BaseModel):
    """A resource made from a class and arguments: chat model connections and setups,
    embedding model connections and setups, vector stores, MCP servers.

    ``clazz`` is an alias (``ollama``, ``openai``, ``chroma``...) or a dotted class path;
    every other key is an argument of that class (checked against the class by the loader).
    """

    model_config = ConfigDict(extra="allow")

    name: str
    clazz: str
    type: Language | None = None


class MessageRole(str, Enum):
    """Role of one message of a prompt template."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class PromptMessage(BaseModel):
    """One message of a multi-message prompt template."""

    model_config = ConfigDict(extra="forbid")

    role: MessageRole = MessageRole.USER
    content: str


class PromptSpec(BaseModel):
    """A prompt: exactly one of ``text`` (``Prompt.from_text``) or ``messages``
    (``Prompt.from_messages``), with ``{name}`` placeholders."""

    model_config = ConfigDict(extra="forbid")

    name: str
    text: str | None = None
    messages: list[PromptMessage] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> PromptSpec:
        # Empty text or an empty list count as missing: an empty prompt is a mistake.
        if bool(self.text) == bool(self.messages):
            raise ValueError("a prompt needs exactly one non-empty 'text' or 'messages'")
        return self


class ToolSpec(BaseModel):
    """A function tool: ``function`` is ``<module>:<qualname>`` of a Python function.

    ``injected_args``: parameters the runtime fills in, as upstream writes them
    (``{tenant_id: {source: config, key: tenant.id}}``; a spec without ``source`` reads
    sensory memory, one without ``key`` the parameter's name). ``parameter_types`` (Java
    tools) is part of Apache Flink Agents' schema; the loader says it is not supported here.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    function: str | None = None
    type: Language | None = None
    parameter_types: list[str] | None = None
    injected_args: dict[str, Any] | None = None


class ActionSpec(BaseModel):
    """An action: a function ``(event, ctx)`` and the event types that trigger it.

    ``listen_to`` (Apache Flink Agents 0.3) and ``trigger_conditions`` (its later name) are
    the same list: built-in event aliases (``input``, ``chat_response``...) or exact event
    type strings. Give one of them.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    function: str | None = None
    listen_to: list[Annotated[str, Field(pattern=r"\S")]] | None = None
    trigger_conditions: list[Annotated[str, Field(pattern=r"\S")]] | None = None
    config: dict[str, Any] | None = None
    type: Language | None = None

    @model_validator(mode="after")
    def _one_trigger_list(self) -> ActionSpec:
        given = [k for k in ("listen_to", "trigger_conditions") if getattr(self, k) is not None]
        if not given:
            raise ValueError(
                "an action needs 'listen_to' (or 'trigger_conditions'): the event types "
                "that trigger it, e.g. listen_to: [input]"
            )
        if len(given) == 2:
            raise ValueError("give 'listen_to' or 'trigger_conditions', not both")
        if not getattr(self, given[0]):
            raise ValueError(f"'{given[0]}' must list at least one event type")
        return self

    @property
    def triggers(self) -> list[str]:
        """The trigger list, whichever key gave it."""
        return list(self.listen_to or self.trigger_conditions or [])

    @property
    def trigger_key(self) -> str:
        """The key the triggers were given under."""
        return "listen_to" if self.listen_to is not None else "trigger_conditions"


def _action_kind(value: Any) -> str:
    return "reference" if isinstance(value, str) else "action"


#: An agent's action: a full action, or the name of a shared action (a bare string).
AgentAction = Annotated[
    Annotated[ActionSpec, Tag("action")] | Annotated[str, Tag("reference")],
    Discriminator(_action_kind),
]


class _Sections(BaseModel):
    """The resource sections an agent and a file share."""

    model_config = ConfigDict(extra="forbid")

    prompts: list[PromptSpec] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    skills: list[dict[str, Any]] = Field(default_factory=list)

    chat_model_connections: list[DescriptorSpec] = Field(default_factory=list)
    chat_model_setups: list[DescriptorSpec] = Field(default_factory=list)
    embedding_model_connections: list[DescriptorSpec] = Field(default_factory=list)
    embedding_model_setups: list[DescriptorSpec] = Field(default_factory=list)
    vector_stores: list[DescriptorSpec] = Field(default_factory=list)
    mcp_servers: list[DescriptorSpec] = Field(default_factory=list)


class AgentSpec(_Sections):
    """One agent of a file's ``agents:`` list: its name, its actions, its own resources."""

    name: str
    description: str | None = None
    actions: list[AgentAction] = Field(default_factory=list)


class YamlAgentsDocument(_Sections):
    """A whole file. ``agents:`` is optional (a file may hold shared resources only);
    the resources and actions beside it are shared by every agent of the environment."""

    agents: list[AgentSpec] = Field(default_factory=list)
    actions: list[ActionSpec] = Field(default_factory=list)


def export() -> str:
    """The JSON Schema of a YAML agents file."""
    return json.dumps(YamlAgentsDocument.model_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(export())
