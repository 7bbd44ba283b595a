"""The resources a cassette puts in place of the real ones, on whatever host runs the agent.

Each wrapper is an ordinary resource: it travels in the plan like any other, so it is
created where the agent runs (the local environment, or a Flink TaskManager) from its
arguments: the wrapped resource's recipe (``wrapped``: its class and arguments, secrets
masked in the plan JSON like the resource's own), its name, and the cassette's ``tape``:
the mode, this resource's recorded interactions (replay: they travel *inside* the job, so a
TaskManager needs no file) and a spool directory where recordings and mismatches are
written (a MiniCluster or a local cluster shares it with the test; ``Cassette.finish``
merges it into the file). The wrapped resource is created only when a call must really be
made (record, new_episodes, passthrough): replay runs offline.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field, PrivateAttr

from flink_agents.api._function import load_by_value
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection
from flink_agents.api.embedding_models.embedding_model import BaseEmbeddingModelConnection
from flink_agents.api.resource import Resource, ResourceDescriptor
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import CassetteMismatchError
from flink_agents.testing.cassette._format import (
    Interaction,
    canonical,
    chat_request,
    closest_diff,
    embed_request,
    mask,
    rebuild_error,
    recorded_error,
    secrets_in,
    tool_request,
)

REPLAY, RECORD, NEW_EPISODES, PASSTHROUGH = "replay", "record", "new_episodes", "passthrough"
MODES = (REPLAY, RECORD, NEW_EPISODES, PASSTHROUGH)


class Tape:
    """One wrapper's side of the cassette: answers from the recordings, records, notes
    mismatches. Thread safe (the Flink host calls resources from several threads)."""

    def __init__(self, spec: dict[str, Any], kind: str, resource: str, secrets: list[str]):
        self.mode = str(spec.get("mode", REPLAY))
        self.path = str(spec.get("path", "<cassette>"))
        self.spool = spec.get("spool")
        self.kind = kind
        self.resource = resource
        self.secrets = secrets
        self._lock = threading.Lock()
        self._recorded = [Interaction.model_validate(i) for i in spec.get("recorded") or []]
        self._by_request: dict[str, list[Interaction]] = {}
        for interaction in self._recorded:
            if interaction.kind == kind and interaction.resource == resource:
                self._by_request.setdefault(canonical(interaction.request), []).append(interaction)
        self._used: dict[str, int] = {}
        self._file = (
            os.path.join(self.spool, f"rec-{os.getpid()}-{uuid.uuid4().hex[:12]}.jsonl")
            if self.spool
            else None
        )

    @property
    def replays(self) -> bool:
        return self.mode != RECORD

    @property
    def records(self) -> bool:
        return self.mode in (RECORD, NEW_EPISODES)

    def request(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request as it is stored and compared (masked)."""
        return mask(request, self.secrets)

    def lookup(self, request: dict[str, Any]) -> Interaction | None:
        """The next recording of ``request`` (the last one again when all were used)."""
        key = canonical(request)
        with self._lock:
            found = self._by_request.get(key)
            if not found:
                return None
            used = self._used.get(key, 0)
            self._used[key] = used + 1
            return found[min(used, len(found) - 1)]

    def mismatch(self, request: dict[str, Any]) -> CassetteMismatchError:
        """The error for a request without a recording (also noted in the spool, so the
        test sees it even when the agent's error strategy swallowed it)."""
        same = [
            i.request for i in self._recorded if i.kind == self.kind and i.resource == self.resource
        ]
        diff = closest_diff(request, same)
        where = f"{self.kind} call of resource {self.resource!r}"
        if diff:
            detail = f"the closest recording differs:\n{diff}"
        else:
            detail = f"the cassette has no {self.kind} calls of {self.resource!r} at all"
        message = (
            f"cassette {self.path}: no recording matches this {where} (mode {self.mode!r}); "
            f"{detail}\nIf the change is intended, record again: mode='record' (or "
            "FLINK_AGENTS_CASSETTE_MODE=record, pytest --cassette-mode=record); "
            "mode='passthrough' calls the real resource for unmatched requests."
        )
        self._append(
            os.path.join(self.spool, "mismatches.jsonl") if self.spool else None,
            {
                "resource": self.resource,
                "kind": self.kind,
                "message": message,
            },
        )
        return CassetteMismatchError(message)

    def record(self, request: dict[str, Any], *, response: Any = None, error: Any = None) -> None:
        """Store one call (response or error) in the spool."""
        interaction = Interaction(
            kind=self.kind,  # type: ignore[arg-type]
            resource=self.resource,
            request=request,
            response=mask(response, self.secrets),
            error=recorded_error(error, self.secrets) if error is not None else None,
        )
        self._append(self._file, {"t": time.time(), **interaction.model_dump(mode="json")})

    def _append(self, path: str | None, line: dict[str, Any]) -> None:
        if path is None:
            return
        text = json.dumps(line, ensure_ascii=False) + "\n"
        with self._lock, open(path, "a", encoding="utf-8") as fh:
            fh.write(text)


def _inner_secrets(wrapped: dict[str, Any]) -> list[str]:
    return secrets_in(wrapped.get("arguments") or wrapped.get("serialized") or {})


def build_inner(wrapped: dict[str, Any], get_resource: Any) -> Any:
    """Create the wrapped resource from its recipe."""
    if wrapped.get("pickled"):
        cls = load_by_value(wrapped["pickled"])
    else:
        cls = ResourceDescriptor(wrapped["clazz"]).clazz
    if wrapped.get("serialized") is not None:
        inner = cls.model_validate(wrapped["serialized"])
        inner.get_resource = get_resource
        return inner
    return cls(**dict(wrapped.get("arguments") or {}), get_resource=get_resource)


class _Wrapper(Resource):
    """What the wrappers share: the recipe, the tape, the lazily created real resource."""

    resource: str
    wrapped: dict[str, Any] = Field(repr=False)
    tape: dict[str, Any] = Field(default_factory=dict, repr=False)

    _tape: Tape | None = PrivateAttr(default=None)
    _inner: Any = PrivateAttr(default=None)
    _inner_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    KIND: ClassVar[str] = ""

    def get_tape(self) -> Tape:
        if self._tape is None:
            secrets = _inner_secrets(self.wrapped) + secrets_in(self.tape.get("masks") or {})
            self._tape = Tape(self.tape, self.KIND, self.resource, secrets)
        return self._tape

    def get_inner(self) -> Any:
        """The real resource (created on first use)."""
        if self._inner is None:
            with self._inner_lock:
                if self._inner is None:
                    self._inner = build_inner(self.wrapped, self.get_resource)
        return self._inner

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()


def _replayed(found: Interaction) -> Any:
    if found.error is not None:
        raise rebuild_error(found.error)
    return found.response


class CassetteChatModelConnection(_Wrapper, BaseChatModelConnection):
    """A chat model connection answered from a cassette (see the module docstring)."""

    KIND: ClassVar[str] = "chat"

    def _answer(self, request: dict[str, Any]) -> tuple[Tape, ChatMessage | None]:
        tape = self.get_tape()
        if tape.replays:
            found = tape.lookup(request)
            if found is not None:
                return tape, ChatMessage.model_validate(_replayed(found))
            if tape.mode == REPLAY:
                raise tape.mismatch(request)
        return tape, None

    def chat(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None = None, **kwargs: Any
    ) -> ChatMessage:
        tape = self.get_tape()
        request = tape.request(chat_request(messages, tools, kwargs))
        tape, reply = self._answer(request)
        if reply is not None:
            return reply
        try:
            reply = self.get_inner().chat(messages, tools, **kwargs)
        except Exception as exc:
            if tape.records:
                tape.record(request, error=exc)
            raise
        if tape.records:
            tape.record(request, response=reply.model_dump(mode="json"))
        return reply

    async def achat(
        self, messages: Sequence[ChatMessage], tools: list[Tool] | None = None, **kwargs: Any
    ) -> ChatMessage:
        tape = self.get_tape()
        request = tape.request(chat_request(messages, tools, kwargs))
        tape, reply = self._answer(request)
        if reply is not None:
            return reply
        try:
            reply = await self.get_inner().achat(messages, tools, **kwargs)
        except Exception as exc:
            if tape.records:
                tape.record(request, error=exc)
            raise
        if tape.records:
            tape.record(request, response=reply.model_dump(mode="json"))
        return reply


class CassetteEmbeddingModelConnection(_Wrapper, BaseEmbeddingModelConnection):
    """An embedding connection answered from a cassette."""

    KIND: ClassVar[str] = "embed"

    def _answer(self, request: dict[str, Any]) -> tuple[Tape, list[list[float]] | None]:
        tape = self.get_tape()
        if tape.replays:
            found = tape.lookup(request)
            if found is not None:
                return tape, [list(v) for v in _replayed(found)]
            if tape.mode == REPLAY:
                raise tape.mismatch(request)
        return tape, None

    def embed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        tape = self.get_tape()
        request = tape.request(embed_request(texts, kwargs))
        tape, vectors = self._answer(request)
        if vectors is not None:
            return vectors
        try:
            vectors = self.get_inner().embed(texts, **kwargs)
        except Exception as exc:
            if tape.records:
                tape.record(request, error=exc)
            raise
        if tape.records:
            tape.record(request, response=[list(v) for v in vectors])
        return vectors

    async def aembed(self, texts: Sequence[str], **kwargs: Any) -> list[list[float]]:
        tape = self.get_tape()
        request = tape.request(embed_request(texts, kwargs))
        tape, vectors = self._answer(request)
        if vectors is not None:
            return vectors
        try:
            vectors = await self.get_inner().aembed(texts, **kwargs)
        except Exception as exc:
            if tape.records:
                tape.record(request, error=exc)
            raise
        if tape.records:
            tape.record(request, response=[list(v) for v in vectors])
        return vectors


class CassetteTool(_Wrapper, Tool):
    """A tool answered from a cassette; it shows the model the wrapped tool's metadata."""

    KIND: ClassVar[str] = "tool"

    def _answer(self, request: dict[str, Any]) -> tuple[Tape, bool, Any]:
        tape = self.get_tape()
        if tape.replays:
            found = tape.lookup(request)
            if found is not None:
                return tape, True, _replayed(found)
            if tape.mode == REPLAY:
                raise tape.mismatch(request)
        return tape, False, None

    def call(self, *args: Any, **kwargs: Any) -> Any:
        tape = self.get_tape()
        request = tape.request(tool_request(args, kwargs))
        tape, answered, result = self._answer(request)
        if answered:
            return result
        try:
            result = self.get_inner().call(*args, **kwargs)
        except Exception as exc:
            if tape.records:
                tape.record(request, error=exc)
            raise
        if tape.records:
            tape.record(request, response=_result_json(result))
        return result

    async def acall(self, **kwargs: Any) -> Any:
        tape = self.get_tape()
        request = tape.request(tool_request((), kwargs))
        tape, answered, result = self._answer(request)
        if answered:
            return result
        try:
            result = await self.get_inner().acall(**kwargs)
        except Exception as exc:
            if tape.records:
                tape.record(request, error=exc)
            raise
        if tape.records:
            tape.record(request, response=_result_json(result))
        return result


def _result_json(result: Any) -> Any:
    """A tool result as stored (JSON-like; a replay returns this form)."""
    from flink_agents.testing.cassette._format import jsonable

    return jsonable(result)
