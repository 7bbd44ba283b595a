"""``flink-agents trace``: show what runs did, from an event log directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flink_agents.errors import UsageError
from flink_agents.runtime.observability.trace import load_trace, render_html, render_text


def add_parser(
    commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]
) -> None:
    """Register the ``trace`` sub-command."""
    trace = commands.add_parser(
        "trace",
        parents=parents,
        help="show runs from an event log directory (tree, or an HTML timeline)",
    )
    trace.add_argument("log_dir", metavar="LOG_DIR", help="the event log directory (baseLogDir)")
    trace.add_argument("--key", help="only the runs of this key")
    trace.add_argument("--html", metavar="OUT", help="also write a self-contained HTML page")
    trace.add_argument("--limit", type=int, default=50, help="runs printed at most (50; 0: all)")
    trace.set_defaults(handler=cmd_trace)


def cmd_trace(args: argparse.Namespace) -> None:
    """Print the runs as trees; with ``--html``, write the timeline page. Lines of the log
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
