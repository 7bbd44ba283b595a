"""The result of one of our statements, printed like Flink's ``TableResult``."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any, TextIO

#: Result kinds, as Flink's ``ResultKind``.
SUCCESS = "SUCCESS"
SUCCESS_WITH_CONTENT = "SUCCESS_WITH_CONTENT"


class RowIterator:
    """Rows of a result; also a context manager, like Flink's ``CloseableIterator``."""

    def __init__(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self._rows = iter(rows)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return self

    def __next__(self) -> tuple[Any, ...]:
        return next(self._rows)

    def close(self) -> None:
        """Nothing to release (the rows are in memory)."""

    def __enter__(self) -> RowIterator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _width(text: str) -> int:
    """Display width (East Asian wide characters take two columns)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _cell(value: Any) -> str:
    if value is None:
        return "<NULL>"
    text = str(value)
    return text.replace("\n", "\\n")


class SqlResult:
    """What one of our statements returned: ``OK`` or a table of rows.

    Args:
        columns: column names (none: a statement without content, printed as ``OK``).
        rows: the rows, as tuples.
        raw: print the single cell as it is, not as a table (``SHOW CREATE``).
    """

    def __init__(
        self,
        columns: Sequence[str] = (),
        rows: Sequence[Sequence[Any]] = (),
        *,
        raw: bool = False,
    ) -> None:
        self.columns = tuple(columns)
        self.rows = [tuple(r) for r in rows]
        self.raw = raw

    def get_result_kind(self) -> str:
        """``SUCCESS`` (no content) or ``SUCCESS_WITH_CONTENT``."""
        return SUCCESS_WITH_CONTENT if self.columns else SUCCESS

    def collect(self) -> RowIterator:
        """The rows (``with result.collect() as rows: ...`` works, as for Flink)."""
        return RowIterator(self.rows)

    def wait(self, timeout_ms: int | None = None) -> None:
        """Nothing to wait for: our statements run when they are executed."""

    def get_job_client(self) -> None:
        """None: our statements run no job."""
        return None

    def to_text(self) -> str:
        """The result as Flink prints it: a box table and the row count, or ``OK``."""
        if not self.columns:
            return "OK"
        if self.raw and len(self.rows) == 1 and len(self.rows[0]) == 1:
            return str(self.rows[0][0])
        cells = [[_cell(v) for v in row] for row in self.rows]
        widths = [
            max([_width(c), *(_width(row[i]) for row in cells)]) for i, c in enumerate(self.columns)
        ]
        rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

        def line(values: Sequence[str]) -> str:
            padded = (" " * (w - _width(v)) + v for v, w in zip(values, widths, strict=True))
            return "| " + " | ".join(padded) + " |"

        out = [rule, line(self.columns), rule, *(line(r) for r in cells)]
        if cells:
            out.append(rule)
        count = len(cells)
        out.append(f"{count} row{'s' if count != 1 else ''} in set" if count else "Empty set")
        return "\n".join(out)

    def print(self, file: TextIO | None = None) -> None:
        """Print :meth:`to_text` (to stdout by default)."""
        import sys

        print(self.to_text(), file=file or sys.stdout)

    def __repr__(self) -> str:
        return f"SqlResult(columns={self.columns!r}, rows={len(self.rows)})"
