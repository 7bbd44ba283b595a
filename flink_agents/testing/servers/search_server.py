"""A stand-in for Elasticsearch and OpenSearch: an in-memory search engine behind the subset
of their REST API that the vector stores' clients use (no Elasticsearch or OpenSearch server
can run on every test machine).

What it serves: index create / exists / delete / get (with ``*`` patterns) / mapping,
``_bulk`` (index and delete actions), ``_mget``, ``_search`` with ``bool`` (``must``,
``filter``, ``should``, ``must_not``), ``term``, ``terms``, ``range``, ``exists``, ``ids``
and ``match_all`` queries, sorting by a field, ``from`` / ``size``, and vector search: the
Elasticsearch ``knn`` section (``field``, ``query_vector``, ``k``, ``filter``) and the
OpenSearch ``knn`` query (``{"knn": {field: {"vector", "k", "filter"}}}``), scored
``(1 + cosine) / 2`` as both engines score cosine similarity; ``_delete_by_query``,
``_refresh``. Elasticsearch answers carry ``X-Elastic-Product: Elasticsearch`` (its client
checks it). Errors use the engines' shape (``index_not_found_exception``,
``resource_already_exists_exception``, a vector of the wrong size is a 400).

What it is not: a text search engine (no analysis, scoring of text queries or aggregations),
and its term matching is Python equality (Elasticsearch's is type-coercing).

Example::

    with SearchServer(flavor="opensearch") as server:
        store = OpenSearchVectorStore(hosts=[server.url], embedding_model="embedder")
"""

from __future__ import annotations

import fnmatch
import json
import operator
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np

__all__ = ["SearchServer"]


class _Index:
    def __init__(self, mappings: dict[str, Any], settings: dict[str, Any]) -> None:
        self.mappings = mappings
        self.settings = settings
        self.docs: dict[str, dict[str, Any]] = {}

    def vector_field(self) -> tuple[str, int] | None:
        for name, spec in (self.mappings.get("properties") or {}).items():
            if spec.get("type") in ("dense_vector", "knn_vector"):
                return name, int(spec.get("dims") or spec.get("dimension"))
        return None


def _value(source: dict[str, Any], path: str) -> Any:
    current: Any = source
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return None
        current = current[part]
    return current


def _matches(query: dict[str, Any] | None, doc_id: str, source: dict[str, Any]) -> bool:
    if not query:
        return True
    (kind, spec), *_ = query.items()
    if kind == "match_all":
        return True
    if kind == "ids":
        return doc_id in spec.get("values", [])
    if kind == "term":
        ((field, wanted),) = spec.items()
        wanted = wanted.get("value") if isinstance(wanted, dict) else wanted
        return _value(source, field) == wanted
    if kind == "terms":
        ((field, wanted),) = spec.items()
        return _value(source, field) in wanted
    if kind == "exists":
        return _value(source, spec["field"]) is not None
    if kind == "range":
        ((field, bounds),) = spec.items()
        value = _value(source, field)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        checks = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}
        return all(checks[op](value, bound) for op, bound in bounds.items() if op in checks)
    if kind == "bool":

        def listed(key: str) -> list[dict[str, Any]]:
            found = spec.get(key) or []
            return found if isinstance(found, list) else [found]

        if not all(_matches(q, doc_id, source) for q in listed("must") + listed("filter")):
            return False
        if any(_matches(q, doc_id, source) for q in listed("must_not")):
            return False
        should = listed("should")
        if should:
            needed = int(spec.get("minimum_should_match", 1))
            return sum(_matches(q, doc_id, source) for q in should) >= needed
        return True
    raise ValueError(f"query [{kind}] is not supported by the stand-in")


class SearchServer:
    """An in-memory Elasticsearch / OpenSearch on 127.0.0.1; use as a context manager.

    Args:
        flavor: ``"elasticsearch"`` or ``"opensearch"`` (product header, vector syntax).
        port: the port (default: any free one).

    Attributes:
        requests: ``(method, path)`` of every request, in order.
    """

    def __init__(
        self, flavor: Literal["elasticsearch", "opensearch"] = "elasticsearch", *, port: int = 0
    ) -> None:
        self.flavor = flavor
        self.indices: dict[str, _Index] = {}
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.RLock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                url = urlsplit(self.path)
                with server._lock:
                    server.requests.append((self.command, url.path))
                    try:
                        status, body = server._route(
                            self.command, unquote(url.path), parse_qs(url.query), raw
                        )
                    except ValueError as exc:
                        status, body = 400, server._error("parsing_exception", str(exc), 400)
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                if server.flavor == "elasticsearch":
                    self.send_header("X-Elastic-Product", "Elasticsearch")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> SearchServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # --- the API ---------------------------------------------------------------------------

    @staticmethod
    def _error(kind: str, reason: str, status: int, index: str | None = None) -> Any:
        error: dict[str, Any] = {"type": kind, "reason": reason}
        if index is not None:
            error["index"] = index
        return {"error": {**error, "root_cause": [dict(error)]}, "status": status}

    def _missing(self, name: str) -> tuple[int, Any]:
        return 404, self._error(
            "index_not_found_exception", f"no such index [{name}]", 404, index=name
        )

    def _route(
        self, method: str, path: str, query: dict[str, list[str]], raw: bytes
    ) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        body = json.loads(raw) if raw and not path.endswith("_bulk") else None
        if not parts:
            version = "9.0.0" if self.flavor == "elasticsearch" else "2.19.0"
            info: dict[str, Any] = {"name": "stand-in", "version": {"number": version}}
            if self.flavor == "opensearch":
                info["version"]["distribution"] = "opensearch"
            return 200, info
        if parts == ["_bulk"]:
            return self._bulk(raw)
        name = parts[0]
        if len(parts) == 1:
            if method == "HEAD":
                return (200 if name in self.indices else 404), None
            if method == "PUT":
                if name in self.indices:
                    return 400, self._error(
                        "resource_already_exists_exception", f"index [{name}] exists", 400, name
                    )
                body = body or {}
                self.indices[name] = _Index(body.get("mappings") or {}, body.get("settings") or {})
                return 200, {"acknowledged": True, "shards_acknowledged": True, "index": name}
            if method == "DELETE":
                if name not in self.indices:
                    return self._missing(name)
                del self.indices[name]
                return 200, {"acknowledged": True}
            if method == "GET":
                found = {
                    n: {"aliases": {}, "mappings": i.mappings, "settings": i.settings}
                    for n, i in self.indices.items()
                    if any(fnmatch.fnmatchcase(n, p) for p in name.split(","))
                }
                if not found and "*" not in name:
                    return self._missing(name)
                return 200, found
        if name not in self.indices:
            return self._missing(name)
        index = self.indices[name]
        action = parts[1]
        if action == "_mapping":
            return 200, {name: {"mappings": index.mappings}}
        if action == "_refresh":
            return 200, {"_shards": {"total": 1, "successful": 1, "failed": 0}}
        if action == "_mget":
            docs = [
                {"_index": name, "_id": i, "found": True, "_source": index.docs[i]}
                if i in index.docs
                else {"_index": name, "_id": i, "found": False}
                for i in (body or {}).get("ids", [])
            ]
            return 200, {"docs": docs}
        if action == "_delete_by_query":
            victims = [
                i for i, s in index.docs.items() if _matches((body or {}).get("query"), i, s)
            ]
            for i in victims:
                del index.docs[i]
            return 200, {"deleted": len(victims), "failures": []}
        if action == "_search":
            return self._search(name, index, body or {})
        return 400, self._error("illegal_argument_exception", f"unsupported {path}", 400)

    def _bulk(self, raw: bytes) -> tuple[int, Any]:
        lines = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
        items, errors, i = [], False, 0
        while i < len(lines):
            (action, meta), *_ = lines[i].items()
            name, doc_id = meta["_index"], str(meta["_id"])
            index = self.indices.get(name)
            if action in ("index", "create"):
                source = lines[i + 1]
                i += 2
                problem = self._check_vector(index, source) if index else "no such index"
                if problem:
                    errors = True
                    items.append(
                        {action: {"_index": name, "_id": doc_id, "status": 400,
                                  "error": {"type": "document_parsing_exception",
                                            "reason": problem}}}
                    )  # fmt: skip
                    continue
                assert index is not None
                index.docs[doc_id] = source
                items.append({action: {"_index": name, "_id": doc_id, "status": 201}})
            elif action == "delete":
                i += 1
                found = index is not None and index.docs.pop(doc_id, None) is not None
                items.append({action: {"_index": name, "_id": doc_id,
                                       "status": 200 if found else 404}})  # fmt: skip
            else:
                raise ValueError(f"bulk action [{action}] is not supported by the stand-in")
        return 200, {"took": 1, "errors": errors, "items": items}

    @staticmethod
    def _check_vector(index: _Index, source: dict[str, Any]) -> str | None:
        spec = index.vector_field()
        if spec is None:
            return None
        field, dims = spec
        vector = source.get(field)
        if vector is not None and len(vector) != dims:
            return (
                f"The [dense_vector] field [{field}] in doc has a different number of "
                f"dimensions [{len(vector)}] than defined in the mapping [{dims}]"
            )
        return None

    def _search(self, name: str, index: _Index, body: dict[str, Any]) -> tuple[int, Any]:
        size = int(body.get("size", 10))
        start = int(body.get("from", 0))
        query = body.get("query")
        knn = body.get("knn")
        vector_query = None
        if knn is not None:  # Elasticsearch
            vector_query = (knn["field"], knn["query_vector"], int(knn["k"]), knn.get("filter"))
        elif query and "knn" in query:  # OpenSearch
            ((field, spec),) = query["knn"].items()
            vector_query = (field, spec["vector"], int(spec["k"]), spec.get("filter"))
            query = None
        hits = []
        if vector_query is not None:
            field, vector, k, knn_filter = vector_query
            spec = index.vector_field()
            if spec is None or len(vector) != spec[1]:
                dims = spec[1] if spec else "?"
                return 400, self._error(
                    "illegal_argument_exception",
                    f"the query vector has a different number of dimensions [{len(vector)}] "
                    f"than the document vectors [{dims}]",
                    400,
                )
            q = np.asarray(vector, dtype=np.float64)
            q = q / (np.linalg.norm(q) or 1.0)
            scored = []
            for doc_id, source in index.docs.items():
                if not _matches(knn_filter, doc_id, source) or not _matches(query, doc_id, source):
                    continue
                v = np.asarray(source[field], dtype=np.float64)
                cosine = float(v @ q / (np.linalg.norm(v) or 1.0))
                scored.append(((1.0 + cosine) / 2.0, doc_id, source))
            scored.sort(key=lambda t: -t[0])
            hits = [
                {"_index": name, "_id": i, "_score": s, "_source": src} for s, i, src in scored[:k]
            ]
        else:
            matched = [(i, s) for i, s in index.docs.items() if _matches(query, i, s)]
            for key in reversed(body.get("sort") or []):
                field, order = (key, "asc") if isinstance(key, str) else next(iter(key.items()))
                order = order.get("order", "asc") if isinstance(order, dict) else order
                matched.sort(
                    key=lambda pair, f=field: (_value(pair[1], f) is None, _value(pair[1], f)),
                    reverse=order == "desc",
                )
            hits = [{"_index": name, "_id": i, "_score": 1.0, "_source": s} for i, s in matched]
        total = len(hits)
        hits = hits[start : start + size]
        return 200, {
            "took": 1,
            "timed_out": False,
            "hits": {"total": {"value": total, "relation": "eq"}, "hits": hits},
        }
