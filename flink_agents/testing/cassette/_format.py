"""The cassette file: its models, the request forms that are matched, masking, YAML, diffs.

A request is matched by its normal form, the same in every process: a chat call by its
messages (role, content, tool calls, and a tool message's ``tool_call_id`` / ``name``: other
``extra_args``, such as a reply's usage and latency, are left out), the tools offered
(name, description, argument schema) and the options (``model``, ``temperature``,
``output_schema``...); an embedding call by its texts and options; a tool call by its
arguments. Masked values are masked in the live request too before it is compared.
"""

from __future__ import annotations

import difflib
import enum
import importlib
import inspect
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from flink_agents.errors import CassetteError, FlinkAgentsError
from flink_agents.secret_names import SECRET_NAME

VERSION = 1
MASK = "***"
#: Text patterns masked wherever they occur: bearer tokens and OpenAI/Anthropic-style keys.
_PATTERNS = (
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + MASK),
    (re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_-]{16,}"), "sk-" + MASK),
)
#: ``extra_args`` of a message that take part in matching.
_MATCHED_EXTRA = ("tool_call_id", "name")

Kind = Literal["chat", "embed", "tool"]


class RecordedError(BaseModel):
    """An exception a recorded call raised.

    Attributes:
        type: its class, ``module.QualName``.
        message: its text (masked).
        attributes: its JSON-like attributes (a ``ModelCallError``'s provider, model,
            status...).
    """

    type: str
    message: str
    attributes: dict[str, Any] = Field(default_factory=dict)


class Interaction(BaseModel):
    """One recorded call.

    Attributes:
        kind: ``chat`` (a chat model connection), ``embed`` (an embedding connection) or
            ``tool``.
        resource: the name of the resource it was made on.
        request: the request's normal form (see the module docstring).
        response: what the call returned (a chat message, vectors, a tool result).
        error: what it raised instead.
    """

    kind: Kind
    resource: str
    request: dict[str, Any]
    response: Any = None
    error: RecordedError | None = None

    def matches(self, kind: str, resource: str, canonical_request: str) -> bool:
        """Whether this recording answers that request."""
        return (
            self.kind == kind
            and self.resource == resource
            and canonical(self.request) == canonical_request
        )


class CassetteFile(BaseModel):
    """A cassette file's content."""

    version: int = VERSION
    interactions: list[Interaction] = Field(default_factory=list)


# --- normal forms -----------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data, the same in every process (models dumped, classes by
    their schema, other objects by type name)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [jsonable(v) for v in value]
        return sorted(items, key=canonical) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, BaseModel):
        return jsonable(value.model_dump(mode="json"))
    if isinstance(value, type) and issubclass(value, BaseModel):
        return {"pydantic_model": value.__qualname__, "schema": value.model_json_schema()}
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if inspect.isfunction(value) or inspect.isclass(value):
        return f"{value.__module__}.{value.__qualname__}"
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def canonical(value: Any) -> str:
    """The JSON text a request is compared by."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def chat_request(messages: Sequence[Any], tools: Sequence[Any] | None, options: Any) -> dict:
    """The normal form of a chat call."""
    normal = []
    for message in messages:
        role = getattr(message, "role", "user")
        item: dict[str, Any] = {
            "role": getattr(role, "value", role),
            "content": getattr(message, "content", str(message)),
        }
        calls = getattr(message, "tool_calls", None)
        if calls:
            item["tool_calls"] = jsonable(calls)
        extra = getattr(message, "extra_args", None) or {}
        kept = {k: extra[k] for k in _MATCHED_EXTRA if k in extra}
        if kept:
            item["extra_args"] = jsonable(kept)
        normal.append(item)
    request: dict[str, Any] = {"messages": normal}
    described = [jsonable(getattr(t, "metadata", t)) for t in tools or []]
    if described:
        request["tools"] = described
    if options:
        request["options"] = jsonable(options)
    return request


def embed_request(texts: Sequence[str], options: Any) -> dict:
    """The normal form of an embedding call."""
    request: dict[str, Any] = {"texts": [str(t) for t in texts]}
    if options:
        request["options"] = jsonable(options)
    return request


def tool_request(args: Sequence[Any], arguments: Mapping[str, Any]) -> dict:
    """The normal form of a tool call."""
    request: dict[str, Any] = {"arguments": jsonable(dict(arguments))}
    if args:
        request["args"] = jsonable(list(args))
    return request


# --- masking ------------------------------------------------------------------------------------


def secrets_in(value: Any) -> list[str]:
    """Strings under secret-like keys (``api_key``, ``token``...) anywhere in ``value``."""
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and SECRET_NAME.search(key) and isinstance(item, str):
                if item:
                    found.append(item)
            else:
                found += secrets_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found += secrets_in(item)
    return found


def mask(value: Any, secrets: Iterable[str] = ()) -> Any:
    """``value`` with secrets replaced by ``***``: the given strings anywhere, strings
    under secret-like keys, bearer tokens and API-key-like strings."""
    known = sorted({s for s in secrets if isinstance(s, str) and len(s) >= 4}, key=len)[::-1]
    return _mask(value, known)


def _mask(value: Any, known: list[str]) -> Any:
    if isinstance(value, str):
        for secret in known:
            value = value.replace(secret, MASK)
        for pattern, replacement in _PATTERNS:
            value = pattern.sub(replacement, value)
        return value
    if isinstance(value, Mapping):
        return {
            k: (
                MASK
                if isinstance(k, str) and SECRET_NAME.search(k) and isinstance(v, str) and v
                else _mask(v, known)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask(v, known) for v in value]
    return value


# --- errors -------------------------------------------------------------------------------------


def recorded_error(exc: BaseException, secrets: Iterable[str] = ()) -> RecordedError:
    """What to store of an exception a call raised."""
    cls = type(exc)
    attributes = {k: v for k, v in vars(exc).items() if not k.startswith("_") and _is_json_like(v)}
    return RecordedError(
        type=f"{cls.__module__}.{cls.__qualname__}",
        message=mask(str(exc), secrets),
        attributes=mask(attributes, secrets),
    )


def _is_json_like(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def rebuild_error(error: RecordedError) -> BaseException:
    """The exception a recorded call raised, rebuilt (a ``RuntimeError`` naming the class
    when the class cannot be imported or built from its message)."""
    module, _, name = error.type.rpartition(".")
    try:
        cls: Any = importlib.import_module(module)
        for part in name.split("."):
            cls = getattr(cls, part)
    except (ImportError, AttributeError, ValueError):
        cls = None
    if isinstance(cls, type) and issubclass(cls, FlinkAgentsError):
        exc = cls.__new__(cls)
        Exception.__init__(exc, error.message)
        exc.__dict__.update(error.attributes)
        return exc
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(error.message)
        except Exception:  # noqa: BLE001 - a class that needs other arguments
            pass
    return RuntimeError(f"{error.type}: {error.message}")


# --- the file -----------------------------------------------------------------------------------

HEADER = (
    "# flink-agents cassette: recorded model, embedding and tool calls, replayed by\n"
    "# flink_agents.testing.cassette.Cassette. Re-record with mode='record' (or\n"
    "# FLINK_AGENTS_CASSETTE_MODE=record, pytest --cassette-mode=record). Secrets are masked.\n"
)


class _Dumper(yaml.SafeDumper):
    """Readable YAML: multi-line text as blocks, number lists (vectors) on one line."""


def _str(dumper: yaml.SafeDumper, data: str) -> Any:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _list(dumper: yaml.SafeDumper, data: list) -> Any:
    flow = bool(data) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(str, _str)
_Dumper.add_representer(list, _list)


def dump(cassette: CassetteFile) -> str:
    """The file's text."""
    data = cassette.model_dump(mode="json", exclude_none=True)
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100, indent=2)
    return HEADER + body


def load(path: Path) -> CassetteFile:
    """Read a cassette file.

    Raises:
        CassetteError: it is missing, not YAML, or not a cassette (the problem is named).
    """
    if not path.exists():
        raise CassetteError(
            f"cassette {str(path)!r} does not exist: record it first (mode='record', or "
            "FLINK_AGENTS_CASSETTE_MODE=record, or pytest --cassette-mode=record) against "
            "the real models and tools"
        )
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise CassetteError(f"cassette {str(path)!r} cannot be read: {exc}") from None
    try:
        cassette = CassetteFile.model_validate(data or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<file>'}: {e['msg']}" for e in exc.errors()
        )
        raise CassetteError(f"cassette {str(path)!r} is not a valid cassette: {problems}") from None
    if cassette.version != VERSION:
        raise CassetteError(
            f"cassette {str(path)!r} has version {cassette.version}; this flink-agents reads "
            f"version {VERSION}: record it again"
        )
    return cassette


# --- diffs --------------------------------------------------------------------------------------


def _pretty(request: Any) -> list[str]:
    return json.dumps(request, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def closest_diff(request: dict, candidates: Sequence[dict], *, limit: int = 200) -> str:
    """A unified diff from the closest of ``candidates`` to ``request`` (empty: none)."""
    if not candidates:
        return ""
    wanted = _pretty(request)
    best = max(
        candidates[:limit],
        key=lambda c: difflib.SequenceMatcher(None, _pretty(c), wanted, autojunk=False).ratio(),
    )
    lines = difflib.unified_diff(
        _pretty(best), wanted, fromfile="recorded", tofile="this call", lineterm="", n=2
    )
    return "\n".join(lines)
