"""The agent catalog: tools, agents and connections, by ``catalog.database.name``.

Flink's catalogs keep tables, functions and models; this catalog keeps what Flink's do not
know yet (FLIP-548's tools and agents, and connections, which PyFlink 2.3 parses but cannot
run). Its operations follow the draft's catalog API: ``list_tools(database)``,
``get_tool(path)``, ``tool_exists``, ``create_tool``, ``drop_tool``, ``rename_tool``,
``alter_tool``, and the same for agents and connections.

Objects live in memory by default, like Flink's default catalog, or in a directory
(``sql.catalog-dir``): one JSON file per object, ``<dir>/<catalog>/<database>/<kind>s/<name>.json``,
so definitions survive across sessions and jobs. A name too long for a file name once
quoted (a 28-character CJK name, 251 ASCII characters) is stored under a hash of it
(``%h-<sha256>``) with the full identifier inside the file. Temporary objects are always in
memory and hide a permanent object of the same identifier, as in Flink. Connection files hold their
options as given (secrets included): they are written readable by their owner only.

The catalog checks identities and dependencies (an agent's tools exist; a tool an agent uses
cannot be dropped or renamed; a connection a tool uses cannot be dropped or renamed). Whether
a Flink function or model exists is checked by the statement layer, which sees Flink's
catalogs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from flink_agents.errors import CatalogError

log = logging.getLogger(__name__)

Kind = Literal["tool", "agent", "connection"]
KINDS: tuple[Kind, ...] = ("tool", "agent", "connection")


@dataclass(frozen=True, order=True)
class ObjectIdentifier:
    """A fully qualified name: ``catalog.database.name``."""

    catalog: str
    database: str
    name: str

    def __str__(self) -> str:
        return f"{self.catalog}.{self.database}.{self.name}"

    def as_sql(self) -> str:
        """The identifier quoted for SQL: ```catalog`.`database`.`name```."""
        return ".".join(quote_identifier(p) for p in (self.catalog, self.database, self.name))


def quote_identifier(part: str) -> str:
    """``part`` in backquotes (a backquote inside doubled), as Flink prints identifiers."""
    return "`" + part.replace("`", "``") + "`"


@dataclass(frozen=True)
class CatalogTool:
    """A tool: a Python function of Flink's catalog, or the tools of an MCP connection.

    Attributes:
        function: the Flink function it calls (``USING FUNCTION``), fully qualified when the
            statement layer could resolve it (a temporary system function has one part).
        connection: the connection whose MCP tools it offers (``USING CONNECTION``).
        options: the ``WITH`` options (``description``, ``allowed_tools``, ...).
        comment: the ``COMMENT``.
    """

    function: str | None = None
    connection: ObjectIdentifier | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None

    @property
    def tool_type(self) -> str:
        """``function`` or ``mcp``."""
        return "function" if self.function is not None else "mcp"

    def copy_with(self, **changes: Any) -> CatalogTool:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)


@dataclass(frozen=True)
class CatalogAgent:
    """An agent: a model of Flink's catalog, a system prompt and tools of this catalog.

    Attributes:
        model: the Flink model (``USING MODEL``), fully qualified.
        prompt: the system prompt (``USING PROMPT``).
        tools: the tools it may call (``USING TOOLS``), fully qualified.
        options: the ``WITH`` options (``max-iterations``, ...).
        comment: the ``COMMENT``.
    """

    model: ObjectIdentifier
    prompt: str
    tools: tuple[ObjectIdentifier, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None

    def copy_with(self, **changes: Any) -> CatalogAgent:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)


@dataclass(frozen=True)
class CatalogConnection:
    """A connection: an endpoint and its credentials, used by tools (MCP servers) and models.

    Attributes:
        options: the ``WITH`` options (``type``, ``endpoint``, ``api-key``, ...).
        comment: the ``COMMENT``.
    """

    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None

    @property
    def connection_type(self) -> str:
        """The ``type`` option (lower case), or ``""``."""
        return str(self.options.get("type", "")).lower()

    def copy_with(self, **changes: Any) -> CatalogConnection:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)


CatalogObject = CatalogTool | CatalogAgent | CatalogConnection
_CLASSES: dict[Kind, type] = {
    "tool": CatalogTool,
    "agent": CatalogAgent,
    "connection": CatalogConnection,
}


# -- storage -----------------------------------------------------------------------------------


def _identifier(data: Any) -> ObjectIdentifier:
    return ObjectIdentifier(*data)


def to_json(obj: CatalogObject) -> dict[str, Any]:
    """The JSON form of a catalog object (as stored in a catalog directory)."""
    base: dict[str, Any] = {"options": dict(obj.options), "comment": obj.comment}
    if isinstance(obj, CatalogTool):
        connection = obj.connection
        conn = [connection.catalog, connection.database, connection.name] if connection else None
        return {"kind": "tool", "function": obj.function, "connection": conn, **base}
    if isinstance(obj, CatalogAgent):
        return {
            "kind": "agent",
            "model": [obj.model.catalog, obj.model.database, obj.model.name],
            "prompt": obj.prompt,
            "tools": [[t.catalog, t.database, t.name] for t in obj.tools],
            **base,
        }
    return {"kind": "connection", **base}


def from_json(data: Mapping[str, Any]) -> CatalogObject:
    """A catalog object from :func:`to_json`'s form."""
    kind = data.get("kind")
    options = {str(k): str(v) for k, v in (data.get("options") or {}).items()}
    comment = data.get("comment")
    if kind == "tool":
        conn = data.get("connection")
        return CatalogTool(
            function=data.get("function"),
            connection=_identifier(conn) if conn else None,
            options=options,
            comment=comment,
        )
    if kind == "agent":
        return CatalogAgent(
            model=_identifier(data["model"]),
            prompt=str(data.get("prompt", "")),
            tools=tuple(_identifier(t) for t in data.get("tools") or ()),
            options=options,
            comment=comment,
        )
    if kind == "connection":
        return CatalogConnection(options=options, comment=comment)
    raise ValueError(f"unknown catalog object kind {kind!r}")


class _MemoryStore:
    """Objects in a dict."""

    def __init__(self) -> None:
        self._objects: dict[tuple[Kind, ObjectIdentifier], CatalogObject] = {}

    def get(self, kind: Kind, ident: ObjectIdentifier) -> CatalogObject | None:
        return self._objects.get((kind, ident))

    def put(self, kind: Kind, ident: ObjectIdentifier, obj: CatalogObject) -> None:
        self._objects[(kind, ident)] = obj

    def delete(self, kind: Kind, ident: ObjectIdentifier) -> None:
        self._objects.pop((kind, ident), None)

    def list(self, kind: Kind) -> list[ObjectIdentifier]:
        return [ident for (k, ident) in self._objects if k == kind]


#: Quoted names longer than this are stored under a hash of the name (file systems allow
#: 255 bytes per path component: a 28-character CJK name quotes to 252).
_MAX_PART = 200
#: How a hashed part starts: ``%`` followed by no hex digits, which quoting never writes.
_HASHED = "%h-"


def _file_part(name: str) -> str:
    """A safe file name for ``name`` ('/' and '.' included): quoted (back with unquote),
    or, when that is too long for a file system, ``%h-`` and its SHA-256 (the name is
    then read from inside the object's file)."""
    quoted = urllib.parse.quote(name, safe="").replace(".", "%2E")
    if len(quoted) <= _MAX_PART:
        return quoted
    return _HASHED + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


class _DirectoryStore:
    """One JSON file per object under ``root/<catalog>/<database>/<kind>s/``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CatalogError(
                f"cannot use {str(self.root)!r} as the catalog directory: {exc}"
            ) from None

    def _path(self, kind: Kind, ident: ObjectIdentifier) -> Path:
        return (
            self.root
            / _file_part(ident.catalog)
            / _file_part(ident.database)
            / f"{kind}s"
            / (_file_part(ident.name) + ".json")
        )

    def get(self, kind: Kind, ident: ObjectIdentifier) -> CatalogObject | None:
        path = self._path(kind, ident)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CatalogError(f"cannot read the catalog file {str(path)!r}: {exc}") from None
        try:
            return from_json(json.loads(text))
        except (ValueError, KeyError, TypeError) as exc:
            raise CatalogError(f"the catalog file {str(path)!r} is damaged: {exc}") from None

    def put(self, kind: Kind, ident: ObjectIdentifier, obj: CatalogObject) -> None:
        path = self._path(kind, ident)
        data = to_json(obj)
        # The identifier inside too: a hashed file name cannot be read back into it.
        data["identifier"] = [ident.catalog, ident.database, ident.name]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Write a private temporary file, then rename: readers never see half a file,
            # and a connection's secrets are never readable by others.
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        except OSError as exc:
            raise CatalogError(f"cannot write the catalog file {str(path)!r}: {exc}") from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=2, sort_keys=True)
            os.replace(tmp, path)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise CatalogError(f"cannot write the catalog file {str(path)!r}: {exc}") from None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def delete(self, kind: Kind, ident: ObjectIdentifier) -> None:
        path = self._path(kind, ident)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise CatalogError(f"cannot delete the catalog file {str(path)!r}: {exc}") from None

    def list(self, kind: Kind) -> list[ObjectIdentifier]:
        found = []
        for path in self.root.glob(f"*/*/{kind}s/*.json"):
            database = path.parent.parent
            parts = (database.parent.name, database.name, path.name[: -len(".json")])
            if any(part.startswith(_HASHED) for part in parts):
                ident = self._stored_identifier(path)
                if ident is not None:
                    found.append(ident)
                continue
            found.append(ObjectIdentifier(*(urllib.parse.unquote(part) for part in parts)))
        return found

    @staticmethod
    def _stored_identifier(path: Path) -> ObjectIdentifier | None:
        """The identifier written inside an object's file (None: unreadable, logged)."""
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))["identifier"]
            return ObjectIdentifier(*(str(part) for part in stored))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("skipping the catalog file %s: no identifier inside (%s)", path, exc)
            return None


# -- the catalog -------------------------------------------------------------------------------

#: ``(catalog, database)`` the catalog resolves partial names against.
Defaults = Callable[[], tuple[str, str]]


def like_pattern(pattern: str) -> re.Pattern[str]:
    """A SQL ``LIKE`` pattern (``%`` any text, ``_`` one character) as a regex."""
    parts = []
    for ch in pattern:
        parts.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
    return re.compile("".join(parts), re.S)


class AgentCatalog:
    """Tools, agents and connections by identifier.

    Args:
        directory: keep permanent objects in this directory (None: in memory).
        defaults: returns the current ``(catalog, database)`` that partial identifiers
            (``name``, ``database.name``) are resolved against; default
            ``("default_catalog", "default_database")``.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] | None = None,
        *,
        defaults: Defaults | None = None,
    ) -> None:
        self._permanent: _MemoryStore | _DirectoryStore = (
            _DirectoryStore(directory) if directory is not None else _MemoryStore()
        )
        self._temporary = _MemoryStore()
        self._defaults = defaults or (lambda: ("default_catalog", "default_database"))
        self._lock = threading.RLock()

    @property
    def directory(self) -> Path | None:
        """The directory permanent objects are kept in (None: in memory)."""
        return self._permanent.root if isinstance(self._permanent, _DirectoryStore) else None

    # -- identifiers ---------------------------------------------------------------------------
    def identifier(self, path: str | ObjectIdentifier | Iterable[str]) -> ObjectIdentifier:
        """``path`` as a full identifier: ``name``, ``database.name`` and
        ``catalog.database.name`` strings (or their parts) are completed with the current
        catalog and database."""
        if isinstance(path, ObjectIdentifier):
            return path
        parts = path.split(".") if isinstance(path, str) else list(path)
        if not 1 <= len(parts) <= 3 or not all(parts):
            raise CatalogError(
                f"invalid identifier {'.'.join(parts)!r}: use name, database.name or "
                "catalog.database.name"
            )
        catalog, database = self._defaults()
        if len(parts) == 3:
            return ObjectIdentifier(*parts)
        if len(parts) == 2:
            return ObjectIdentifier(catalog, parts[0], parts[1])
        return ObjectIdentifier(catalog, database, parts[0])

    def _database(self, database: str | None) -> tuple[str, str]:
        catalog, current = self._defaults()
        if database is None:
            return catalog, current
        parts = database.split(".")
        if len(parts) == 2 and all(parts):
            return parts[0], parts[1]
        if len(parts) == 1 and parts[0]:
            return catalog, parts[0]
        raise CatalogError(f"invalid database {database!r}: use database or catalog.database")

    # -- generic operations --------------------------------------------------------------------
    def get(self, kind: Kind, path: str | ObjectIdentifier) -> CatalogObject:
        """The object, the temporary one first.

        Raises:
            CatalogError: there is none; the message lists the objects of that database.
        """
        ident = self.identifier(path)
        with self._lock:
            found = self._temporary.get(kind, ident) or self._permanent.get(kind, ident)
            if found is None:
                raise self._unknown(kind, ident)
            return found

    def exists(self, kind: Kind, path: str | ObjectIdentifier) -> bool:
        """Whether the object exists (temporary or permanent)."""
        ident = self.identifier(path)
        with self._lock:
            return (
                self._temporary.get(kind, ident) is not None
                or self._permanent.get(kind, ident) is not None
            )

    def is_temporary(self, kind: Kind, path: str | ObjectIdentifier) -> bool:
        """Whether the object is a temporary one."""
        return self._temporary.get(kind, self.identifier(path)) is not None

    def list_objects(self, kind: Kind, database: str | None = None) -> list[str]:
        """Names of the objects of ``database`` (default: the current one), sorted."""
        catalog, db = self._database(database)
        with self._lock:
            idents = set(self._temporary.list(kind)) | set(self._permanent.list(kind))
        return sorted(i.name for i in idents if i.catalog == catalog and i.database == db)

    def create(
        self,
        kind: Kind,
        path: str | ObjectIdentifier,
        obj: CatalogObject,
        *,
        ignore_if_exists: bool = False,
        temporary: bool = False,
    ) -> None:
        """Add an object.

        Raises:
            CatalogError: it exists (unless ``ignore_if_exists``), or it refers to an
                unknown tool or connection.
        """
        if not isinstance(obj, _CLASSES[kind]):
            raise TypeError(f"a {kind} must be a {_CLASSES[kind].__name__}, got {obj!r}")
        ident = self.identifier(path)
        with self._lock:
            store = self._temporary if temporary else self._permanent
            if store.get(kind, ident) is not None:
                if ignore_if_exists:
                    return
                what = "temporary " if temporary else ""
                raise CatalogError(f"{what}{kind} {ident} already exists")
            self._check_references(obj)
            store.put(kind, ident, obj)

    def drop(
        self,
        kind: Kind,
        path: str | ObjectIdentifier,
        *,
        ignore_if_not_exists: bool = False,
        temporary: bool | None = None,
    ) -> None:
        """Remove an object (the temporary one when both exist; ``temporary=True/False``
        chooses).

        Raises:
            CatalogError: it does not exist (unless ``ignore_if_not_exists``), or another
                object still uses it (the message names the users).
        """
        ident = self.identifier(path)
        with self._lock:
            store = self._store_of(kind, ident, temporary)
            if store is None:
                if ignore_if_not_exists:
                    return
                raise self._unknown(kind, ident)
            other = self._permanent if store is self._temporary else self._temporary
            if other.get(kind, ident) is None:  # no other object of that name remains
                self._check_unused(kind, ident, "dropped")
            store.delete(kind, ident)

    def rename(
        self,
        kind: Kind,
        path: str | ObjectIdentifier,
        new_name: str,
        *,
        ignore_if_not_exists: bool = False,
    ) -> None:
        """Rename an object inside its database (``new_name`` is a plain name or a full
        identifier of the same database).

        Raises:
            CatalogError: it does not exist (unless ``ignore_if_not_exists``), the new name
                is taken, or another object uses it.
        """
        ident = self.identifier(path)
        target = self.identifier(new_name)
        if "." not in new_name:
            target = ObjectIdentifier(ident.catalog, ident.database, new_name)
        if (target.catalog, target.database) != (ident.catalog, ident.database):
            raise CatalogError(
                f"cannot rename {kind} {ident} to {target}: a rename stays in database "
                f"{ident.catalog}.{ident.database}"
            )
        with self._lock:
            store = self._store_of(kind, ident, None)
            if store is None:
                if ignore_if_not_exists:
                    return
                raise self._unknown(kind, ident)
            if store.get(kind, target) is not None:
                raise CatalogError(f"cannot rename {kind} {ident}: {kind} {target} exists")
            self._check_unused(kind, ident, "renamed")
            obj = store.get(kind, ident)
            assert obj is not None
            store.put(kind, target, obj)
            store.delete(kind, ident)

    def alter(
        self,
        kind: Kind,
        path: str | ObjectIdentifier,
        new_obj: CatalogObject,
        *,
        ignore_if_not_exists: bool = False,
    ) -> None:
        """Replace an object's definition (the temporary one when both exist).

        Raises:
            CatalogError: it does not exist (unless ``ignore_if_not_exists``), or the new
                definition refers to an unknown tool or connection.
        """
        if not isinstance(new_obj, _CLASSES[kind]):
            raise TypeError(f"a {kind} must be a {_CLASSES[kind].__name__}, got {new_obj!r}")
        ident = self.identifier(path)
        with self._lock:
            store = self._store_of(kind, ident, None)
            if store is None:
                if ignore_if_not_exists:
                    return
                raise self._unknown(kind, ident)
            self._check_references(new_obj)
            store.put(kind, ident, new_obj)

    # -- typed operations (the draft's catalog API) -------------------------------------------
    def list_tools(self, database: str | None = None) -> list[str]:
        """Tool names of ``database`` (``db`` or ``catalog.db``; default: the current)."""
        return self.list_objects("tool", database)

    def get_tool(self, path: str | ObjectIdentifier) -> CatalogTool:
        """The tool at ``path`` (``name``, ``db.name`` or ``catalog.db.name``)."""
        tool = self.get("tool", path)
        assert isinstance(tool, CatalogTool)
        return tool

    def tool_exists(self, path: str | ObjectIdentifier) -> bool:
        """Whether the tool exists."""
        return self.exists("tool", path)

    def create_tool(
        self,
        path: str | ObjectIdentifier,
        tool: CatalogTool,
        ignore_if_exists: bool = False,
        *,
        temporary: bool = False,
    ) -> None:
        """Add a tool (see :meth:`create`)."""
        self.create("tool", path, tool, ignore_if_exists=ignore_if_exists, temporary=temporary)

    def drop_tool(self, path: str | ObjectIdentifier, ignore_if_not_exists: bool = False) -> None:
        """Remove a tool; refused while an agent uses it (see :meth:`drop`)."""
        self.drop("tool", path, ignore_if_not_exists=ignore_if_not_exists)

    def rename_tool(
        self, path: str | ObjectIdentifier, new_name: str, ignore_if_not_exists: bool = False
    ) -> None:
        """Rename a tool; refused while an agent uses it (see :meth:`rename`)."""
        self.rename("tool", path, new_name, ignore_if_not_exists=ignore_if_not_exists)

    def alter_tool(
        self,
        path: str | ObjectIdentifier,
        new_tool: CatalogTool,
        ignore_if_not_exists: bool = False,
    ) -> None:
        """Replace a tool's definition (see :meth:`alter`)."""
        self.alter("tool", path, new_tool, ignore_if_not_exists=ignore_if_not_exists)

    def list_agents(self, database: str | None = None) -> list[str]:
        """Agent names of ``database`` (default: the current)."""
        return self.list_objects("agent", database)

    def get_agent(self, path: str | ObjectIdentifier) -> CatalogAgent:
        """The agent at ``path``."""
        agent = self.get("agent", path)
        assert isinstance(agent, CatalogAgent)
        return agent

    def agent_exists(self, path: str | ObjectIdentifier) -> bool:
        """Whether the agent exists."""
        return self.exists("agent", path)

    def create_agent(
        self,
        path: str | ObjectIdentifier,
        agent: CatalogAgent,
        ignore_if_exists: bool = False,
        *,
        temporary: bool = False,
    ) -> None:
        """Add an agent; its tools must exist (see :meth:`create`)."""
        self.create("agent", path, agent, ignore_if_exists=ignore_if_exists, temporary=temporary)

    def drop_agent(self, path: str | ObjectIdentifier, ignore_if_not_exists: bool = False) -> None:
        """Remove an agent."""
        self.drop("agent", path, ignore_if_not_exists=ignore_if_not_exists)

    def rename_agent(
        self, path: str | ObjectIdentifier, new_name: str, ignore_if_not_exists: bool = False
    ) -> None:
        """Rename an agent."""
        self.rename("agent", path, new_name, ignore_if_not_exists=ignore_if_not_exists)

    def alter_agent(
        self,
        path: str | ObjectIdentifier,
        new_agent: CatalogAgent,
        ignore_if_not_exists: bool = False,
    ) -> None:
        """Replace an agent's definition; its tools must exist."""
        self.alter("agent", path, new_agent, ignore_if_not_exists=ignore_if_not_exists)

    def list_connections(self, database: str | None = None) -> list[str]:
        """Connection names of ``database`` (default: the current)."""
        return self.list_objects("connection", database)

    def get_connection(self, path: str | ObjectIdentifier) -> CatalogConnection:
        """The connection at ``path``."""
        conn = self.get("connection", path)
        assert isinstance(conn, CatalogConnection)
        return conn

    def connection_exists(self, path: str | ObjectIdentifier) -> bool:
        """Whether the connection exists."""
        return self.exists("connection", path)

    def create_connection(
        self,
        path: str | ObjectIdentifier,
        connection: CatalogConnection,
        ignore_if_exists: bool = False,
        *,
        temporary: bool = False,
    ) -> None:
        """Add a connection."""
        self.create(
            "connection", path, connection, ignore_if_exists=ignore_if_exists, temporary=temporary
        )

    def drop_connection(
        self, path: str | ObjectIdentifier, ignore_if_not_exists: bool = False
    ) -> None:
        """Remove a connection; refused while a tool uses it."""
        self.drop("connection", path, ignore_if_not_exists=ignore_if_not_exists)

    # -- internals -----------------------------------------------------------------------------
    def _store_of(
        self, kind: Kind, ident: ObjectIdentifier, temporary: bool | None
    ) -> _MemoryStore | _DirectoryStore | None:
        if temporary is not False and self._temporary.get(kind, ident) is not None:
            return self._temporary
        if temporary is not True and self._permanent.get(kind, ident) is not None:
            return self._permanent
        return None

    def _unknown(self, kind: Kind, ident: ObjectIdentifier) -> CatalogError:
        names = self.list_objects(kind, f"{ident.catalog}.{ident.database}")
        listed = ", ".join(names) if names else "none"
        return CatalogError(
            f"unknown {kind} {ident} ({kind}s in {ident.catalog}.{ident.database}: {listed})"
        )

    def _all(self, kind: Kind) -> list[tuple[ObjectIdentifier, CatalogObject]]:
        found: list[tuple[ObjectIdentifier, CatalogObject]] = []
        for store in (self._temporary, self._permanent):
            for ident in store.list(kind):
                obj = store.get(kind, ident)
                if obj is not None:
                    found.append((ident, obj))
        return found

    def _check_references(self, obj: CatalogObject) -> None:
        if isinstance(obj, CatalogAgent):
            missing = [t for t in obj.tools if not self.exists("tool", t)]
            if missing:
                raise self._unknown("tool", missing[0])
        connection = obj.connection if isinstance(obj, CatalogTool) else None
        if connection is not None and not self.exists("connection", connection):
            raise self._unknown("connection", connection)

    def _check_unused(self, kind: Kind, ident: ObjectIdentifier, verb: str) -> None:
        users: list[str] = []
        if kind == "tool":
            users = [
                f"agent {i}" for i, a in self._all("agent") if ident in getattr(a, "tools", ())
            ]
            hint = "remove it first (ALTER AGENT ... REMOVE TOOL ...) or drop the agent"
        elif kind == "connection":
            users = [
                f"tool {i}" for i, t in self._all("tool") if getattr(t, "connection", 0) == ident
            ]
            hint = "drop the tool first"
        if users:
            raise CatalogError(
                f"{kind} {ident} cannot be {verb}: {', '.join(sorted(set(users)))} "
                f"use{'s' if len(set(users)) == 1 else ''} it; {hint}"
            )
