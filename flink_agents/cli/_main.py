"""``main``: parse the arguments, run the command, turn its errors into one line and an
exit code."""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Sequence

from flink_agents.cli._parser import build_parser
from flink_agents.errors import CommandError, CommandFailure, UsageError

#: Exit code of a command that succeeded (``UsageError``: 2, ``CommandFailure``: 1).
EXIT_OK = 0
#: Exit code after Ctrl-C.
EXIT_INTERRUPTED = 130


class _NoTracebackFormatter(logging.Formatter):
    """Log lines without tracebacks (``--debug`` shows them)."""

    def format(self, record: logging.LogRecord) -> str:
        record = logging.makeLogRecord(record.__dict__)
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return super().format(record)


def _configure_logging(*, debug: bool) -> tuple[logging.Handler, int]:
    """Log to stderr (tracebacks with ``--debug`` only); returns what to undo."""
    handler = logging.StreamHandler(sys.stderr)
    fmt = "%(levelname)s %(name)s: %(message)s"
    handler.setFormatter(logging.Formatter(fmt) if debug else _NoTracebackFormatter(fmt))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO if debug else logging.WARNING)
    return handler, level


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit code: 0, or the failing command's
        (:attr:`~flink_agents.errors.CommandError.exit_code`: 2 usage, 1 failure), 130
        after Ctrl-C. Argument errors found by the parser exit with 2 (``SystemExit``).
    """
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    tail: list[str] = []
    if "--" in argv:  # what follows goes to the job, verbatim (argparse would parse it)
        cut = argv.index("--")
        argv, tail = argv[:cut], argv[cut + 1 :]
    args = parser.parse_args(argv)
    if tail:
        if args.command != "submit":
            parser.error("`--` is only for the job arguments of `submit`")
        args.job_args = [*args.job_args, *tail]
    handler, level = _configure_logging(debug=args.debug)
    try:
        code = args.handler(args)
        # A handler raises a CommandError, or returns its exit code (the `sql` command
        # prints its own errors, with the script line and a caret).
        return code if isinstance(code, int) else EXIT_OK
    except CommandError as exc:
        if args.debug:
            traceback.print_exc()
        kind = "error" if isinstance(exc, UsageError) else "failed"
        print(f"flink-agents {args.command}: {kind}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"flink-agents {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, no traceback
        if args.debug:
            traceback.print_exc()
        else:
            print(
                f"flink-agents {args.command}: failed: {type(exc).__name__}: {exc} "
                "(run with --debug for the traceback)",
                file=sys.stderr,
            )
        return CommandFailure.exit_code
    finally:  # main may run more than once in a process (tests): leave logging as it was
        root = logging.getLogger()
        root.removeHandler(handler)
        root.setLevel(level)
