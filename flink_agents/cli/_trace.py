"""``flink-agents trace``: show what runs did, from an event log directory; or export them
to an OpenTelemetry collector (``--otlp``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flink_agents.errors import CommandFailure, UsageError
from flink_agents.runtime.observability.trace import Run, load_trace, render_html, render_text


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be from 0.0 to 1.0, got {text}")
    return value


def add_parser(
    commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]
) -> None:
    """Register the ``trace`` sub-command."""
    trace = commands.add_parser(
        "trace",
        parents=parents,
        help="show runs from an event log directory (tree, HTML timeline) or export them "
        "as OpenTelemetry spans",
    )
    trace.add_argument("log_dir", metavar="LOG_DIR", help="the event log directory (baseLogDir)")
    trace.add_argument("--key", help="only the runs of this key")
    trace.add_argument("--html", metavar="OUT", help="also write a self-contained HTML page")
    trace.add_argument("--limit", type=int, default=50, help="runs printed at most (50; 0: all)")
    otlp = trace.add_argument_group("OpenTelemetry export (needs the otel extra)")
    otlp.add_argument(
        "--otlp",
        metavar="ENDPOINT",
        help="export the runs as spans (GenAI conventions) to this OTLP endpoint instead of "
        "printing them, e.g. http://127.0.0.1:4318 (headers such as credentials: "
        "OTEL_EXPORTER_OTLP_HEADERS)",
    )
    otlp.add_argument(
        "--otlp-protocol",
        choices=("http", "grpc"),
        default="http",
        help="OTLP over HTTP/protobuf (default; port 4318) or gRPC (port 4317)",
    )
    otlp.add_argument(
        "--sample-ratio",
        type=_ratio,
        default=1.0,
        help="share of runs exported, chosen by trace id as otel.sample-ratio does (1.0)",
    )
    otlp.add_argument("--service-name", help="service.name of the spans (flink-agents)")
    otlp.add_argument("--agent-name", help="gen_ai.agent.name of the runs' root spans")
    trace.set_defaults(handler=cmd_trace)


def cmd_trace(args: argparse.Namespace) -> None:
    """Print the runs as trees; with ``--html``, write the timeline page; with
    ``--otlp``, export them. Lines of the log
    that are not records are skipped; how many is said on stderr."""
    runs, stats = load_trace(args.log_dir, key=args.key)
    if stats.skipped:
        print(
            f"skipped {stats.skipped} of {stats.lines} lines ({stats.not_json} not JSON, "
            f"{stats.bad_records} not event log records)",
            file=sys.stderr,
        )
    if not runs:
        raise UsageError(
            f"no runs{f' of key {args.key!r}' if args.key else ''} in {args.log_dir!r}"
        )
    if args.otlp:
        _export(args, runs)
        return
    shown = runs if args.limit <= 0 else runs[-args.limit :]
    print(render_text(shown))
    if len(shown) < len(runs):
        print(f"({len(runs) - len(shown)} earlier runs not shown; --limit 0 shows all)")
    if args.html:
        try:
            Path(args.html).write_text(render_html(runs), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.html!r}: {exc.strerror or exc}") from exc
        print(f"wrote a timeline of {len(runs)} runs to {args.html}", file=sys.stderr)


def _export(args: argparse.Namespace, runs: list[Run]) -> None:
    from flink_agents.runtime.observability.otel import export_event_log, make_exporter
    from flink_agents.runtime.observability.otel_options import parse_endpoint

    try:
        endpoint = parse_endpoint(args.otlp)
    except ValueError as exc:
        raise UsageError(f"--otlp {args.otlp!r}: {exc}") from None
    exporter = make_exporter(f"otlp-{args.otlp_protocol}", endpoint)
    try:
        kept, exported, failed = export_event_log(
            runs,
            exporter,
            service_name=args.service_name,
            sample_ratio=args.sample_ratio,
            agent_name=args.agent_name,
        )
    finally:
        exporter.shutdown()
    if failed:
        raise CommandFailure(
            f"the collector at {endpoint} did not accept {failed} of {exported + failed} spans "
            "(is it running, and does it speak OTLP over "
            f"{args.otlp_protocol.upper() if args.otlp_protocol == 'http' else 'gRPC'}?)"
        )
    print(f"exported {exported} spans of {kept} runs to {endpoint}")
