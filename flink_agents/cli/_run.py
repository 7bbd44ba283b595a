"""``flink-agents plan`` and ``flink-agents run``: compile an agent, or run it in this
process over a JSONL file, and the file I/O of both."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flink_agents.cli._loading import build_environment, compile_plan
from flink_agents.errors import CommandFailure, FlinkAgentsError, UsageError


def cmd_plan(args: argparse.Namespace) -> None:
    """``flink-agents plan``: write the plan JSON (secrets are replaced by markers)."""
    env = build_environment(args.config, args.resources)
    plan = compile_plan(args.agent, env)
    text = plan.model_dump_json(indent=2)
    if args.output and args.output != "-":
        try:
            Path(args.output).write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.output!r}: {exc.strerror or exc}") from exc
        print(
            f"wrote the plan of {args.agent} ({len(plan.actions)} actions) to {args.output}",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text + "\n")


@dataclass(frozen=True)
class InputRecord:
    """One line of the input file.

    Attributes:
        line: its 1-based line number.
        key: the key it runs under.
        value: the parsed JSON value.
    """

    line: int
    key: Any
    value: Any


def read_jsonl(path: str, key_field: str | None) -> list[InputRecord]:
    """Read and check the whole input file (blank lines are skipped).

    Raises:
        UsageError: the file is missing or unreadable, a line is not JSON, or a record
            lacks ``key_field``.
    """
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"input file {path!r} does not exist")
    records: list[InputRecord] = []
    try:
        with file.open(encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UsageError(
                        f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno}); "
                        "the input must hold one JSON value per line"
                    ) from None
                if key_field is None:
                    key: Any = number
                elif isinstance(value, dict) and key_field in value:
                    key = value[key_field]
                    if not isinstance(key, (str, int, float, bool)):
                        raise UsageError(
                            f"{path}:{number}: key field {key_field!r} holds a "
                            f"{type(key).__name__}; keys must be strings or numbers"
                        )
                else:
                    raise UsageError(
                        f"{path}:{number}: the record has no field {key_field!r} "
                        "(given by --key-field)"
                    )
                records.append(InputRecord(number, key, value))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    return records


def to_json_value(value: Any) -> Any:
    """``value`` in a strict JSON form: pydantic models dumped, Rows as dicts, NaN and
    infinities as null (JSON has no such numbers; ``json.loads`` in other languages
    rejects them), anything else as its text."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return to_json_value(value.model_dump(mode="json"))
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict):  # a pyflink Row
        return to_json_value(as_dict())
    return str(value)


def _batches(records: list[InputRecord], size: int) -> Iterator[list[InputRecord]]:
    for start in range(0, len(records), size):
        yield records[start : start + size]


def cmd_run(args: argparse.Namespace) -> None:
    """``flink-agents run``: run the agent locally over a JSONL file.

    The whole input is read and checked first; then the batches run one after another on
    one :class:`~flink_agents.runtime.local.runner.LocalRunner` (one loop, one thread pool,
    memory kept across batches), closed at the end also when a batch fails.
    """
    from tqdm import tqdm

    from flink_agents.runtime.local.runner import LocalRunner

    if args.batch_size < 1:
        raise UsageError(f"--batch-size must be >= 1, got {args.batch_size}")
    records = read_jsonl(args.input, args.key_field)
    env = build_environment(args.config, args.resources)
    plan = compile_plan(args.agent, env)
    output = Path(args.output)
    if output.resolve() == Path(args.input).resolve():
        raise UsageError("--output must not be the input file")
    try:
        out_fh = output.open("w", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {args.output!r}: {exc.strerror or exc}") from exc

    done = written = 0
    bar = tqdm(
        total=len(records),
        unit="rec",
        desc="flink-agents run",
        file=sys.stderr,
        disable=args.no_progress,
        dynamic_ncols=True,
    )
    try:
        with out_fh, LocalRunner(plan) as runner:
            for batch in _batches(records, args.batch_size):
                try:
                    results = runner.run([(r.key, r.value) for r in batch])
                except FlinkAgentsError as exc:
                    first = batch[0].line
                    raise CommandFailure(
                        f"the agent failed in the batch of input lines {first}-{batch[-1].line} "
                        f"({done} records done, {written} outputs written to {args.output}): "
                        f"{exc}"
                    ) from exc
                except Exception as exc:
                    raise CommandFailure(
                        f"the agent failed on input lines {batch[0].line}-{batch[-1].line}: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                for result in results:
                    for out in result.outputs:
                        line = {"key": to_json_value(result.key), "output": to_json_value(out)}
                        text = json.dumps(line, ensure_ascii=False, allow_nan=False)
                        out_fh.write(text + "\n")
                        written += 1
                out_fh.flush()
                done += len(batch)
                bar.update(len(batch))
    finally:
        bar.close()
    print(
        f"{done} records in, {written} outputs written to {args.output}",
        file=sys.stderr,
    )
