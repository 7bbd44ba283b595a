"""Cassettes: record an agent's model, embedding and tool calls once, replay them offline.

::

    cassette = Cassette("tests/cassettes/review.yaml")          # mode: replay by default
    run = run_agent(ReviewAnalysisAgent(), reviews, key="id", cassette=cassette,
                    resources=model_resources("local"))

Record once against the real models (``Cassette(path, mode="record")``, or
``FLINK_AGENTS_CASSETTE_MODE=record``, or ``pytest --cassette-mode=record`` with the
``cassette`` fixture); the file is YAML, one entry per call (its kind, the resource, the
request, the answer or the error), with secrets masked: values of arguments named like
``api_key`` / ``token``, values of such environment variables, bearer tokens, API-key-like
strings and the ``secrets=`` you name. Replay answers every call from the file, offline and
deterministically; a call that is not in it fails with a diff to the closest recording.

Modes: ``replay`` (never calls the real resource; an unknown call is a
:class:`~flink_agents.errors.CassetteMismatchError`), ``record`` (always calls it and writes
the file anew), ``new_episodes`` (replays known calls, calls and adds unknown ones),
``passthrough`` (replays known calls, calls unknown ones without recording them).

Any chat model connection, embedding connection or tool is covered, ours or yours: the
cassette puts a wrapper resource in its place (:meth:`Cassette.wrap` for an agent,
:meth:`Cassette.wrap_environment` for an environment's resources); setups, prompts and
vector stores stay as they are and reach the wrappers by name. Tools of an MCP server are
not wrapped (run the MCP server in the test).

On Flink the recordings travel inside the job (each wrapper carries its resource's
recorded calls as an argument), so a TaskManager replays without the file; recording
writes to a spool directory that a MiniCluster or a local standalone cluster shares with
the test, merged into the file by :meth:`Cassette.finish` (``run_agent`` and the ``with``
block call it). A recorded request is matched by its normal form (see
``cassette/_format.py``): the same request asked twice gets the recordings in order, then
the last one again.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from flink_agents.api._function import pickle_by_value
from flink_agents.api.agents.agent import Agent, resource_type_of
from flink_agents.api.resource import ResourceDescriptor, ResourceType, SerializableResource
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import CassetteError, CassetteMismatchError
from flink_agents.secret_names import SECRET_NAME
from flink_agents.testing._harness import AgentView
from flink_agents.testing.cassette._format import (
    CassetteFile,
    Interaction,
    canonical,
    dump,
    load,
    mask,
)
from flink_agents.testing.cassette._wrappers import (
    MODES,
    NEW_EPISODES,
    RECORD,
    CassetteChatModelConnection,
    CassetteEmbeddingModelConnection,
    CassetteTool,
)

__all__ = [
    "MODES",
    "Cassette",
    "CassetteChatModelConnection",
    "CassetteEmbeddingModelConnection",
    "CassetteError",
    "CassetteMismatchError",
    "CassetteTool",
    "Interaction",
]

#: The environment variable that chooses the mode of cassettes made without ``mode=``.
MODE_VARIABLE = "FLINK_AGENTS_CASSETTE_MODE"
_WRAPPED_TYPES = (
    ResourceType.CHAT_MODEL_CONNECTION,
    ResourceType.EMBEDDING_MODEL_CONNECTION,
    ResourceType.TOOL,
)
_WRAPPERS = (CassetteChatModelConnection, CassetteEmbeddingModelConnection, CassetteTool)


class Cassette:
    """A cassette file and one recording or replaying session.

    Args:
        path: the YAML file.
        mode: ``replay``, ``record``, ``new_episodes`` or ``passthrough``; None: the
            ``FLINK_AGENTS_CASSETTE_MODE`` environment variable, else ``replay``.
        secrets: further strings to mask in what is recorded.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: str | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        chosen = mode if mode is not None else os.environ.get(MODE_VARIABLE) or "replay"
        if chosen not in MODES:
            where = "mode" if mode is not None else MODE_VARIABLE
            raise CassetteError(f"{where} must be one of {', '.join(MODES)}, got {chosen!r}")
        self.path = Path(path)
        self.mode = chosen
        self.secrets = [s for s in secrets if s]
        self._file: CassetteFile | None = None
        self._spool: Path | None = None

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode!r})"

    # --- the recordings ------------------------------------------------------------------

    @property
    def interactions(self) -> list[Interaction]:
        """The recorded calls in the file (empty in record mode before ``finish``)."""
        return list(self._load().interactions)

    def calls(self, kind: str | None = None, resource: str | None = None) -> list[Interaction]:
        """The recorded calls of ``kind`` (``chat``, ``embed``, ``tool``) and ``resource``."""
        return [
            i
            for i in self.interactions
            if (kind is None or i.kind == kind) and (resource is None or i.resource == resource)
        ]

    def _load(self) -> CassetteFile:
        if self._file is None:
            if self.mode == RECORD:
                return CassetteFile()
            if self.mode == NEW_EPISODES and not self.path.exists():
                self._file = CassetteFile()
            else:
                self._file = load(self.path)
        return self._file

    # --- wrapping --------------------------------------------------------------------------

    def wrap(self, agent: Agent) -> Agent:
        """``agent`` with its chat model connections, embedding connections and tools
        answered by this cassette (the agent itself is not changed)."""
        self._start()
        return AgentView(agent, resources=self.resource_mapper())

    def wrap_environment(self, env: Any) -> Any:
        """Put wrappers in place of the resources added to ``env`` (an agents execution
        environment) so far; returns ``env``."""
        self._start()
        for rtype, by_name in env.resources.items():
            for name in list(by_name):
                by_name[name] = self.wrap_resource(rtype, name, by_name[name])
        return env

    def resource_mapper(
        self,
    ) -> Callable[[dict[ResourceType, dict[str, Any]]], dict[ResourceType, dict[str, Any]]]:
        """What :class:`~flink_agents.testing._harness.AgentView` applies to an agent's
        resources."""
        self._start()

        def mapped(resources: dict[ResourceType, dict[str, Any]]) -> dict:
            return {
                rtype: {name: self.wrap_resource(rtype, name, v) for name, v in by_name.items()}
                for rtype, by_name in resources.items()
            }

        return mapped

    def wrap_resource_dict(self, resources: Mapping[str, Any]) -> dict[str, Any]:
        """Resources by name (as given to ``env.add_resource``), wrapped."""
        self._start()
        return {
            name: self.wrap_resource(resource_type_of(value), name, value)
            for name, value in resources.items()
        }

    def wrap_resource(self, rtype: ResourceType | str, name: str, value: Any) -> Any:
        """The wrapper of one resource, or ``value`` itself when its kind is not recorded."""
        rtype = ResourceType(rtype)
        if rtype not in _WRAPPED_TYPES or _is_wrapper(value):
            return value
        self._start()
        kind = {
            ResourceType.CHAT_MODEL_CONNECTION: "chat",
            ResourceType.EMBEDDING_MODEL_CONNECTION: "embed",
            ResourceType.TOOL: "tool",
        }[rtype]
        tape = {
            "path": str(self.path),
            "mode": self.mode,
            "spool": str(self._spool),
            # Under secret-like keys: the plan keeps them out of its JSON and hands them to
            # the wrapper where it runs, which masks them in what it records and compares.
            "masks": {
                f"m{i}_secret": value
                for i, value in enumerate(self.secrets + _environment_secrets())
            },
            "recorded": [
                i.model_dump(mode="json")
                for i in self._load().interactions
                if i.kind == kind and i.resource == name
            ],
        }
        if rtype is ResourceType.TOOL:
            tool = _as_tool(name, value)
            return CassetteTool(
                metadata=tool.metadata,
                timeout=tool.timeout,
                requires_approval=tool.requires_approval,
                resource=name,
                wrapped=_recipe_of_instance(tool),
                tape=tape,
            )
        if not isinstance(value, ResourceDescriptor):
            raise CassetteError(
                f"{rtype.value} resource {name!r} is a {type(value).__name__}; a cassette "
                "wraps connections declared with a ResourceDescriptor"
            )
        wrapper = (
            CassetteChatModelConnection
            if rtype is ResourceType.CHAT_MODEL_CONNECTION
            else CassetteEmbeddingModelConnection
        )
        return ResourceDescriptor(
            clazz=wrapper, resource=name, wrapped=_recipe_of_descriptor(value), tape=tape
        )

    # --- the session -----------------------------------------------------------------------

    def _start(self) -> None:
        if self._spool is None:
            self._load()  # replay without a file fails here, before any job starts
            self._spool = Path(tempfile.mkdtemp(prefix="flink-agents-cassette-"))

    def finish(self) -> None:
        """End the session: write what was recorded (``record``, ``new_episodes``), then
        raise the mismatches of the session, if any (also ones the agent's error strategy
        swallowed). The cassette can be used again afterwards.

        Raises:
            CassetteMismatchError: calls without a recording (replay mode).
        """
        spool, self._spool = self._spool, None
        if spool is None:
            return
        try:
            recorded = _read_lines(sorted(spool.glob("rec-*.jsonl")))
            mismatches = _read_lines([spool / "mismatches.jsonl"])
            if self.mode in (RECORD, NEW_EPISODES):
                self._save(recorded)
        finally:
            shutil.rmtree(spool, ignore_errors=True)
        if mismatches:
            messages = list(dict.fromkeys(m["message"] for m in mismatches))
            raise CassetteMismatchError(
                f"{len(mismatches)} call(s) had no recording in the cassette:\n\n"
                + "\n\n".join(messages)
            )

    def _save(self, recorded: list[dict[str, Any]]) -> None:
        secrets = self.secrets + _environment_secrets()
        existing = [] if self.mode == RECORD else list(self._load().interactions)
        seen = {_identity(i) for i in existing}
        new = []
        for line in sorted(recorded, key=lambda r: r.get("t", 0)):
            line.pop("t", None)
            interaction = Interaction.model_validate(mask(line, secrets))
            identity = _identity(interaction)
            if identity not in seen:
                seen.add(identity)
                new.append(interaction)
        content = CassetteFile(interactions=existing + new)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            partial.write_text(dump(content), encoding="utf-8")
            partial.replace(self.path)
        except OSError as exc:
            raise CassetteError(f"cannot write cassette {str(self.path)!r}: {exc}") from None
        self._file = content if self.mode != RECORD else None

    def discard(self) -> None:
        """End the session without writing or checking anything (after a failed run)."""
        spool, self._spool = self._spool, None
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)

    def __enter__(self) -> Cassette:
        self._start()
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.finish()
        else:  # the block failed already: its error is the one to show
            self.discard()


def _is_wrapper(value: Any) -> bool:
    if isinstance(value, CassetteTool):
        return True
    if isinstance(value, ResourceDescriptor):
        return value.class_path in {f"{w.__module__}.{w.__qualname__}" for w in _WRAPPERS}
    return False


def _as_tool(name: str, value: Any) -> Tool:
    """A tool resource as a Tool instance (functions become function tools)."""
    if isinstance(value, Tool):
        return value
    if isinstance(value, ResourceDescriptor):
        tool = value.clazz(**value.arguments)
        if isinstance(tool, Tool):
            return tool
        raise CassetteError(f"tool resource {name!r}: {value.class_path} is not a Tool")
    if callable(value):
        return FunctionTool.from_callable(value, name=name)
    raise CassetteError(f"tool resource {name!r} is a {type(value).__name__}, not a tool")


def _recipe_of_descriptor(descriptor: ResourceDescriptor) -> dict[str, Any]:
    recipe: dict[str, Any] = {
        "clazz": descriptor.class_path,
        "arguments": dict(descriptor.arguments),
    }
    try:
        pickled = pickle_by_value(descriptor.clazz)
    except (ImportError, AttributeError):
        pickled = None  # reported when the wrapped resource is created
    if pickled is not None:
        recipe["pickled"] = pickled
    return recipe


def _recipe_of_instance(resource: SerializableResource) -> dict[str, Any]:
    cls = type(resource)
    recipe: dict[str, Any] = {
        "clazz": f"{cls.__module__}.{cls.__qualname__}",
        "serialized": json.loads(resource.model_dump_json()),
    }
    pickled = pickle_by_value(cls)
    if pickled is not None:
        recipe["pickled"] = pickled
    return recipe


def _environment_secrets() -> list[str]:
    """Values of environment variables named like secrets (``OPENAI_API_KEY``...)."""
    return [v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= 8]


def _identity(interaction: Interaction) -> str:
    return canonical(interaction.model_dump(mode="json"))


def _read_lines(paths: list[Path]) -> list[dict[str, Any]]:
    lines = []
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    lines.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line cut by a killed worker
    return lines
