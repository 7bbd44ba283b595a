"""A real OTLP/HTTP trace receiver on 127.0.0.1 for the tests (no collector runs here).

It is the testing kit's scripted HTTP server answering ``POST /v1/traces``: each request's
body (protobuf, gzip'd or not) is decoded as an opentelemetry-proto
``ExportTraceServiceRequest`` and its spans are kept as :class:`ReceivedSpan` records;
the answer is an empty ``ExportTraceServiceResponse``. ``refuse=N`` answers the first N
export requests with 400 (a permanent failure: the exporter does not retry it).
"""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2

from flink_agents.testing.servers import Reply, Request, ScriptedServer

_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


def _value(value: common_pb2.AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


@dataclass
class ReceivedSpan:
    """One span as the receiver decoded it (ids as hex)."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status: str
    status_message: str
    resource: dict[str, Any]
    scope: str
    path: str = field(default="")


class OTLPReceiver(ScriptedServer):
    """Receives OTLP/HTTP trace exports; :attr:`spans` are what arrived."""

    def __init__(self, *, refuse: int = 0) -> None:
        super().__init__()
        self.spans: list[ReceivedSpan] = []
        self.refuse = refuse
        self.bad_requests: list[str] = []
        self._spans_lock = threading.Condition()

    @property
    def endpoint(self) -> str:
        """The base URL (the exporter adds ``/v1/traces``)."""
        return self.url

    def reply_for(self, request: Request, index: int) -> Reply:
        if request.route != "/v1/traces" or request.method != "POST":
            self.bad_requests.append(f"{request.method} {request.path}")
            return Reply(b"", status=404, content_type="text/plain")
        if index < self.refuse:
            return Reply(b"refused by the test", status=400, content_type="text/plain")
        raw = request.raw
        if request.headers.get("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        message = trace_service_pb2.ExportTraceServiceRequest()
        message.ParseFromString(raw)
        received = []
        for resource_spans in message.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex() or None,
                            kind=_KINDS.get(span.kind, str(span.kind)),
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            attributes=_attributes(span.attributes),
                            status=_STATUS.get(span.status.code, str(span.status.code)),
                            status_message=span.status.message,
                            resource=resource,
                            scope=scope_spans.scope.name,
                            path=request.path,
                        )
                    )
        with self._spans_lock:
            self.spans.extend(received)
            self._spans_lock.notify_all()
        body = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        return Reply(body, content_type="application/x-protobuf")

    def wait_for_spans(self, count: int, *, timeout: float = 30.0) -> list[ReceivedSpan]:
        """Block until ``count`` spans have arrived (then a moment more, for stragglers)."""
        deadline = time.monotonic() + timeout
        with self._spans_lock:
            while len(self.spans) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.spans)} of {count} spans arrived in {timeout} s")
                self._spans_lock.wait(left)
            return list(self.spans)

    def traces(self) -> dict[str, list[ReceivedSpan]]:
        """The spans by trace id."""
        out: dict[str, list[ReceivedSpan]] = {}
        for span in self.spans:
            out.setdefault(span.trace_id, []).append(span)
        return out


def tree(spans: list[ReceivedSpan]) -> list[str]:
    """One trace's spans as indented names, children in start order (for assertions)."""
    by_parent: dict[str | None, list[ReceivedSpan]] = {}
    for span in spans:
        by_parent.setdefault(span.parent_id, []).append(span)
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        for span in sorted(by_parent.get(parent, []), key=lambda s: (s.start_ns, s.name)):
            lines.append("  " * depth + span.name)
            walk(span.span_id, depth + 1)

    walk(None, 0)
    return lines
