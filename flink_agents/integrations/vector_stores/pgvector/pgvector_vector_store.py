"""PostgreSQL with the pgvector extension as a vector store
(``pip install 'flink-agents-py[pgvector]'``: psycopg 3 and the pgvector adapter).

Example::

    ResourceDescriptor(clazz=PGVectorStore, host="db.internal", dbname="agents",
                       user="agent", embedding_model="embedder", collection="docs")
    # the password: password= (kept out of the plan) or PGPASSWORD / ~/.pgpass

Each collection is a table ``<table_prefix><collection>`` with ``id text primary key``,
``content text``, ``metadata jsonb`` and ``embedding vector(<dimension>)``, plus an HNSW
index with cosine distance (``score`` is the cosine similarity, ``1 - distance``). The
store runs ``CREATE EXTENSION IF NOT EXISTS vector`` once (the extension must be installed
on the server; creating it needs the right privilege). Filters become SQL over the
``jsonb`` metadata, with parameters (never spliced text); they keep the common semantics:
``true`` is not ``1`` (jsonb compares types), a missing field matches ``$ne`` / ``$nin``.

Connection settings: ``host``, ``port``, ``dbname``, ``user``, ``password`` (secret), or
``conninfo`` for anything else libpq takes (``sslmode=require ...``); a ``conninfo`` with a
password in it is refused, so the password never lands in the plan.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from pydantic import Field, PrivateAttr, SecretStr, field_validator

from flink_agents.api.vector_stores._filters import Condition, Node
from flink_agents.api.vector_stores.vector_store import Document
from flink_agents.errors import ConfigurationError, VectorStoreError
from flink_agents.integrations._common import secret_value
from flink_agents.integrations._extras import require
from flink_agents.integrations.vector_stores._base import SizedCollectionStore
from flink_agents.integrations.vector_stores._common import chunks, kept, render_filter

DEFAULT_COLLECTION = "flink_agents_pgvector_collection"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_BATCH = 500


def to_sql(node: Node | None, params: list[Any]) -> str:
    """The filter as a SQL condition over ``metadata`` (jsonb); values go to ``params`` in
    the order of their placeholders.

    ``metadata -> 'f' = v`` is NULL for a missing field, so ``$ne`` / ``$nin`` are the
    equality ``IS NOT TRUE`` (a missing field, or a JSON null, matches them); order
    comparisons hold only for numbers.
    """
    from psycopg.types.json import Jsonb

    def junction(op: str, parts: list[str]) -> str:
        return "(" + (" AND " if op == "$and" else " OR ").join(parts) + ")"

    def leaf(cond: Condition) -> str:
        def field(arrow: str = "->") -> str:
            params.append(cond.field)
            return f"(metadata {arrow} %s)"

        def value(v: Any) -> str:
            params.append(v)
            return "%s"

        op = cond.op
        if op in ("$eq", "$ne"):
            test = f"({field()} = {value(Jsonb(cond.value))})"
            return test if op == "$eq" else f"({test} IS NOT TRUE)"
        if op in ("$in", "$nin"):
            test = f"({field()} = ANY({value([Jsonb(v) for v in cond.value])}::jsonb[]))"
            return test if op == "$in" else f"({test} IS NOT TRUE)"
        symbol = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
        return (
            f"(CASE WHEN jsonb_typeof({field()}) = 'number' "
            f"THEN ({field('->>')})::float8 {symbol} {value(float(cond.value))} ELSE FALSE END)"
        )

    return render_filter(node, leaf, junction) or "TRUE"


def _floats(vector: Any) -> list[float]:
    """A stored vector (pgvector's ``Vector``, or a numpy array) as floats."""
    values = vector.to_list() if hasattr(vector, "to_list") else vector
    return [float(x) for x in values]


class PGVectorStore(SizedCollectionStore):
    """PostgreSQL + pgvector.

    ``get`` by filter returns the oldest documents first and also takes ``offset``.

    Attributes:
        host: the server's host (default: libpq's: ``PGHOST`` or the local socket).
        port: its port.
        dbname: the database.
        user: the user.
        password: the password (kept out of the plan; default: ``PGPASSWORD`` / ``.pgpass``).
        conninfo: further libpq settings (``"sslmode=require application_name=agent"``), no
            password in it.
        schema_name: the schema of the tables (default ``public``).
        table_prefix: prefix of the collection tables.
        hnsw_index: create an HNSW index (cosine) with each table.
        embedding_model: name of the embedding model setup for texts without vectors.
        collection: the default collection.
        dimension: vector size of collections created before a vector was seen.
        auto_create_collection: create missing collections on write and query.
    """

    host: str | None = None
    port: int | None = None
    dbname: str | None = None
    user: str | None = None
    password: SecretStr | None = Field(default=None, repr=False)
    conninfo: str = ""
    schema_name: str = "public"
    table_prefix: str = "fa_"
    hnsw_index: bool = True
    collection: str | None = DEFAULT_COLLECTION

    _pool: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _extension_ready: bool = PrivateAttr(default=False)

    @field_validator("conninfo")
    @classmethod
    def _no_password(cls, value: str) -> str:
        if re.search(r"(^|\s)password\s*=", value) or re.search(r"://[^/@\s]*:[^/@\s]*@", value):
            raise ConfigurationError(
                "PGVectorStore: do not put the password into conninfo (it would be stored "
                "in the plan); pass password= or set PGPASSWORD"
            )
        return value

    @field_validator("schema_name", "table_prefix")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if value and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", value):
            raise ValueError(f"{value!r} must be a plain SQL identifier (letters, digits, _)")
        return value

    def _default_collection(self) -> str:
        return DEFAULT_COLLECTION

    def _location(self) -> str:
        return f"PostgreSQL {self.host or 'localhost'}:{self.port or 5432}/{self.dbname or ''}"

    def _table(self, collection: str) -> str:
        name = f"{self.table_prefix}{collection}"
        if not _NAME.match(name):
            raise VectorStoreError(
                f"collection name {collection!r} cannot be a table name ({name!r}: letters, "
                "digits and _, at most 63 characters, not starting with a digit)"
            )
        return name

    def _connect(self) -> Any:
        psycopg = require("psycopg", extra="pgvector", user=type(self).__name__)
        pgvector_psycopg = require("pgvector.psycopg", extra="pgvector", user="PGVectorStore")
        kwargs = {
            k: v
            for k, v in {
                "host": self.host,
                "port": self.port,
                "dbname": self.dbname,
                "user": self.user,
                "password": secret_value(self.password),
            }.items()
            if v is not None
        }
        try:
            conn = psycopg.connect(self.conninfo, autocommit=True, **kwargs)
        except psycopg.Error as exc:
            raise VectorStoreError(
                f"cannot connect to {self._location()}: {str(exc).strip()}"
            ) from None
        if not self._extension_ready:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            self._extension_ready = True
        pgvector_psycopg.register_vector(conn)
        return conn

    def _run(self, sql: Any, params: Any = None, *, fetch: bool = False, many: bool = False) -> Any:
        """Run one statement on this store's connection (one at a time)."""
        psycopg = require("psycopg", extra="pgvector", user=type(self).__name__)
        with self._lock:
            if self._pool is None or self._pool.closed:
                self._pool = self._connect()
            try:
                with self._pool.cursor() as cur:
                    if many:
                        cur.executemany(sql, params)
                        return None
                    cur.execute(sql, params)
                    return cur.fetchall() if fetch else None
            except psycopg.errors.DataException as exc:
                message = str(exc).strip()
                if "dimensions" in message:
                    raise VectorStoreError(
                        f"{message} (vectors of one collection come from one embedding model)"
                    ) from None
                raise VectorStoreError(message) from None
            except psycopg.OperationalError:
                self._pool = None  # reconnect next time
                raise

    def _sql(self, text: str, collection: str) -> Any:
        from psycopg import sql

        return sql.SQL(text).format(
            table=sql.Identifier(self.schema_name, self._table(collection)),
            index=sql.Identifier(self._table(collection) + "_hnsw"),
        )

    # -- collections ---------------------------------------------------------------------
    def list_collections(self) -> list[str]:
        """The collection names, sorted."""
        rows = self._run(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
            "AND table_name LIKE %s",
            (self.schema_name, self.table_prefix.replace("_", r"\_") + "%"),
            fetch=True,
        )
        return sorted(r[0][len(self.table_prefix) :] for r in rows)

    def _dimension(self, name: str) -> int | None:
        if name in self._dims:
            return self._dims[name]
        rows = self._run(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) "
            "AND attname = 'embedding'",
            (f'"{self.schema_name}"."{self._table(name)}"',),
            fetch=True,
        )
        if not rows:
            return None
        self._dims[name] = int(rows[0][0])
        return self._dims[name]

    def _create(self, name: str, size: int) -> None:
        self._run(
            self._sql(
                "CREATE TABLE IF NOT EXISTS {table} (id text PRIMARY KEY, content text NOT NULL, "
                "metadata jsonb NOT NULL DEFAULT '{{}}', "
                f"embedding vector({int(size)}) NOT NULL)",
                name,
            )
        )
        if self.hnsw_index:
            self._run(
                self._sql(
                    "CREATE INDEX IF NOT EXISTS {index} ON {table} "
                    "USING hnsw (embedding vector_cosine_ops)",
                    name,
                )
            )
        self._dims.pop(name, None)
        self._dimension(name)

    def _drop(self, name: str) -> None:
        self._run(self._sql("DROP TABLE {table}", name))

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            conn, self._pool = self._pool, None
        if conn is not None:
            conn.close()

    # -- writing ---------------------------------------------------------------------------
    def _write(self, name: str, docs: list[Document]) -> None:
        import numpy as np
        from psycopg.types.json import Jsonb

        statement = self._sql(
            "INSERT INTO {table} (id, content, metadata, embedding) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content, "
            "metadata = EXCLUDED.metadata, embedding = EXCLUDED.embedding",
            name,
        )
        for part in chunks(docs, _BATCH):
            rows = [
                (
                    str(d.id),
                    d.content,
                    Jsonb(d.metadata),
                    np.asarray(d.embedding, dtype=np.float32),
                )
                for d in part
            ]
            self._run(statement, rows, many=True)

    def _stored_vectors(self, name: str, ids: list[str]) -> dict[str, list[float]]:
        rows = self._run(
            self._sql("SELECT id, embedding FROM {table} WHERE id = ANY(%s)", name),
            (ids,),
            fetch=True,
        )
        return {r[0]: _floats(r[1]) for r in rows}

    # -- reading ---------------------------------------------------------------------------
    def _fetch(self, name: str, ids: list[str], where: Node | None) -> list[Document]:
        params: list[Any] = []
        condition = to_sql(where, params)
        params.append(ids)
        rows = self._run(
            self._sql(
                "SELECT id, content, metadata FROM {table} WHERE "
                + condition
                + " AND id = ANY(%s)",
                name,
            ),
            params,
            fetch=True,
        )
        return [Document(id=r[0], content=r[1], metadata=r[2]) for r in rows]

    def _scan(
        self, name: str, where: Node | None, limit: int | None, kwargs: dict[str, Any]
    ) -> list[Document]:
        params: list[Any] = []
        condition = to_sql(where, params)
        tail = ""
        if limit is not None:
            tail = " LIMIT %s OFFSET %s"
            params.extend([int(limit), int(kwargs.get("offset") or 0)])
        rows = self._run(
            self._sql(
                "SELECT id, content, metadata FROM {table} WHERE "
                + condition
                + " ORDER BY ctid"
                + tail,
                name,
            ),
            params,
            fetch=True,
        )
        return kept([Document(id=r[0], content=r[1], metadata=r[2]) for r in rows], where)

    def _delete(
        self,
        name: str,
        wanted: list[str] | None,
        where: Node | None,
        filters: dict[str, Any] | None,
        kwargs: dict[str, Any],
    ) -> None:
        params: list[Any] = []
        condition = to_sql(where, params)
        if wanted is not None:
            if not wanted:
                return
            condition += " AND id = ANY(%s)"
            params.append(wanted)
        self._run(self._sql("DELETE FROM {table} WHERE " + condition, name), params)

    def _search(
        self, name: str, embedding: list[float], limit: int, where: Node | None
    ) -> list[Document]:
        import numpy as np

        vector = np.asarray(embedding, dtype=np.float32)
        params: list[Any] = [vector]
        condition = to_sql(where, params)
        params.extend([vector, int(limit)])
        rows = self._run(
            self._sql(
                "SELECT id, content, metadata, 1 - (embedding <=> %s) AS score FROM {table} "
                "WHERE " + condition + " ORDER BY embedding <=> %s LIMIT %s",
                name,
            ),
            params,
            fetch=True,
        )
        return kept(
            [Document(id=r[0], content=r[1], metadata=r[2], score=float(r[3])) for r in rows],
            where,
        )
