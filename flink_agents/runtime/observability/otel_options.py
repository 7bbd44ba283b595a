"""The OpenTelemetry export's options (``otel.*``) and :func:`attach_otel`.

Kept apart from ``otel.py`` so that a host can ask whether the export is on without
importing OpenTelemetry: with ``otel.enabled`` false nothing of it is imported and no
observer is added, so the run loop pays nothing (docs/user-guide/opentelemetry.md).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flink_agents.api.core_options import ConfigOption, register_options

#: The exporters ``otel.exporter`` can name.
EXPORTERS = ("otlp-http", "otlp-grpc", "console")


def _exporter(value: Any) -> str:
    name = str(value).strip().lower().replace("_", "-")
    if name not in EXPORTERS:
        raise ValueError(f"must be one of {', '.join(EXPORTERS)}")
    return name


def parse_endpoint(value: Any) -> str:
    """An OTLP endpoint URL, checked (no credentials: they would travel in the plan)."""
    text = str(value).strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL, e.g. http://127.0.0.1:4318")
    if parts.password is not None or parts.username is not None:
        # The configuration travels in the plan: credentials must not.
        raise ValueError(
            "must not hold credentials (they would travel in the plan); set them as headers "
            "in the OTEL_EXPORTER_OTLP_HEADERS environment variable of the TaskManagers"
        )
    return text


def _ratio_problem(value: float) -> str | None:
    return None if 0.0 <= value <= 1.0 else "must be from 0.0 to 1.0"


def _positive(value: int) -> str | None:
    return None if value > 0 else "must be positive"


class OtelOptions:
    """Options of the OpenTelemetry trace export (see docs/user-guide/opentelemetry.md)."""

    ENABLED: ConfigOption[bool] = ConfigOption(
        key="otel.enabled",
        config_type=bool,
        default=False,
        description="export runs, actions, model and tool calls as OpenTelemetry spans "
        "(GenAI conventions) from every subtask; needs the otel extra",
    )
    EXPORTER: ConfigOption[str] = ConfigOption(
        key="otel.exporter",
        config_type=str,
        parse=_exporter,
        default="otlp-http",
        description="where spans go: otlp-http (OTLP/HTTP protobuf, port 4318), otlp-grpc "
        "(port 4317) or console (JSON lines on standard output)",
    )
    ENDPOINT: ConfigOption[str | None] = ConfigOption(
        key="otel.endpoint",
        config_type=str,
        parse=parse_endpoint,
        default=None,
        description="the collector's URL (otlp-http: the base URL or the full /v1/traces "
        "URL); default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT, "
        "else localhost. Credentials go into OTEL_EXPORTER_OTLP_HEADERS, never here",
    )
    SAMPLE_RATIO: ConfigOption[float] = ConfigOption(
        key="otel.sample-ratio",
        config_type=float,
        default=1.0,
        check=_ratio_problem,
        description="share of runs exported (0.0-1.0), decided per run from its trace id "
        "(the same runs as `flink-agents trace --otlp --sample-ratio` would pick)",
    )
    SERVICE_NAME: ConfigOption[str] = ConfigOption(
        key="otel.service-name",
        config_type=str,
        default="flink-agents",
        description="the service.name resource attribute of the spans (OTEL_SERVICE_NAME "
        "and OTEL_RESOURCE_ATTRIBUTES are honoured too)",
    )
    FLUSH_MS: ConfigOption[int] = ConfigOption(
        key="otel.flush-ms",
        config_type=int,
        default=1000,
        check=_positive,
        description="how often the export thread takes the ended runs and exports them (ms)",
    )
    QUEUE_SIZE: ConfigOption[int] = ConfigOption(
        key="otel.queue-size",
        config_type=int,
        default=20_000,
        check=_positive,
        description="spans waiting for export per subtask; more are dropped and counted in "
        "otelSpansDropped",
    )
    BATCH_SIZE: ConfigOption[int] = ConfigOption(
        key="otel.batch-size",
        config_type=int,
        default=512,
        check=_positive,
        description="spans per export request",
    )
    EXPORT_TIMEOUT_MS: ConfigOption[int] = ConfigOption(
        key="otel.export-timeout-ms",
        config_type=int,
        default=10_000,
        check=_positive,
        description="how long one export request may take, its retries included (ms)",
    )


register_options(OtelOptions)


def attach_otel(runner: Any, *, job_id: Any, task_name: Any, subtask: Any) -> Any:
    """Add the OpenTelemetry export to ``runner`` (an ``AgentRunner``) when
    ``otel.enabled``; the runner flushes and closes it. Returns the observer, or None when
    the export is off (then OpenTelemetry is not imported).

    Raises:
        MissingExtraError: the export is on and the ``otel`` extra is not installed.
    """
    config = runner.config
    if not config.get(OtelOptions.ENABLED):
        return None
    from flink_agents.runtime.observability.otel import OtelObserver

    observer = OtelObserver.for_runner(runner, job_id=job_id, task_name=task_name, subtask=subtask)
    runner.add_observer(observer, observer.close)
    return observer
