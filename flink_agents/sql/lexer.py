"""Tokens of Flink SQL text, with positions, and the split of a script into statements.

The lexer knows just enough of Flink SQL to find statement boundaries and our own
statements: words, ```quoted``` identifiers, ``'strings'`` (``''`` escapes a quote),
numbers, symbols, ``-- line`` and ``/* block */`` comments. Everything else of Flink's
grammar is left to Flink: a statement we do not own is passed on as its original text.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from flink_agents.errors import SqlParseError


class TokenKind(str, Enum):
    """Kinds of tokens."""

    WORD = "word"  # identifier or keyword (keywords are recognised by the parser)
    QUOTED = "quoted identifier"  # `name`
    STRING = "string"  # 'text'
    NUMBER = "number"
    SYMBOL = "symbol"
    END = "end of statement"


@dataclass(frozen=True)
class Token:
    """One token.

    Attributes:
        kind: what it is.
        value: the text (a string's or quoted identifier's content, unescaped).
        start: offset of its first character in the text it came from.
        end: offset just after it.
        line: its line (1-based).
        column: its column (1-based).
    """

    kind: TokenKind
    value: str
    start: int
    end: int
    line: int
    column: int

    def is_word(self, *words: str) -> bool:
        """Whether this is an unquoted word equal (case-insensitively) to one of ``words``."""
        return self.kind is TokenKind.WORD and self.value.upper() in words

    def is_symbol(self, symbol: str) -> bool:
        """Whether this is the symbol ``symbol``."""
        return self.kind is TokenKind.SYMBOL and self.value == symbol

    def describe(self) -> str:
        """How the token is named in an error message."""
        if self.kind is TokenKind.END:
            return "the end of the statement"
        if self.kind is TokenKind.STRING:
            return f"string '{self.value}'"
        if self.kind is TokenKind.QUOTED:
            return f"`{self.value}`"
        return f"'{self.value}'"


_TWO_CHAR_SYMBOLS = ("=>", "<>", "<=", ">=", "!=", "||", "::")


class _Positions:
    """Line and column of an offset (line starts found once)."""

    def __init__(self, text: str, line: int = 1, column: int = 1) -> None:
        self._starts = [0]
        self._starts.extend(i + 1 for i, ch in enumerate(text) if ch == "\n")
        self._line = line
        self._column = column

    def at(self, offset: int) -> tuple[int, int]:
        lo, hi = 0, len(self._starts) - 1
        while lo < hi:  # the last line start <= offset
            mid = (lo + hi + 1) // 2
            if self._starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        column = offset - self._starts[lo] + 1
        if lo == 0:
            column += self._column - 1
        return self._line + lo, column


def tokenize(text: str, *, line: int = 1, column: int = 1) -> list[Token]:
    """The tokens of ``text`` (comments dropped), ending with an END token.

    Args:
        text: SQL text.
        line: the line ``text`` starts on (positions are reported relative to a script).
        column: the column ``text`` starts at.

    Raises:
        SqlParseError: an unterminated string, quoted identifier or comment.
    """
    pos = _Positions(text, line, column)
    tokens: list[Token] = []
    i, n = 0, len(text)

    def fail(message: str, at: int, expected: str) -> SqlParseError:
        ln, col = pos.at(at)
        return SqlParseError(message, line=ln, column=col, expected=expected)

    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if text.startswith("--", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline + 1
            continue
        if text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close < 0:
                raise fail("unterminated comment", i, "'*/'")
            i = close + 2
            continue
        start = i
        if ch == "'" or ch == "`":
            quote = ch
            parts: list[str] = []
            i += 1
            while True:
                close = text.find(quote, i)
                if close < 0:
                    what = "string" if quote == "'" else "quoted identifier"
                    raise fail(f"unterminated {what}", start, quote)
                parts.append(text[i:close])
                if text.startswith(quote * 2, close):  # '' or `` escapes the quote
                    parts.append(quote)
                    i = close + 2
                    continue
                i = close + 1
                break
            kind = TokenKind.STRING if quote == "'" else TokenKind.QUOTED
            value = "".join(parts)
        elif ch.isalpha() or ch == "_" or ch == "$":
            while i < n and (text[i].isalnum() or text[i] in "_$"):
                i += 1
            kind, value = TokenKind.WORD, text[start:i]
        elif ch.isdigit():
            while i < n and (text[i].isalnum() or text[i] == "."):
                i += 1
            kind, value = TokenKind.NUMBER, text[start:i]
        else:
            two = text[i : i + 2]
            i += 2 if two in _TWO_CHAR_SYMBOLS else 1
            kind, value = TokenKind.SYMBOL, text[start:i]
        ln, col = pos.at(start)
        tokens.append(Token(kind, value, start, i, ln, col))
    ln, col = pos.at(n)
    tokens.append(Token(TokenKind.END, "", n, n, ln, col))
    return tokens


@dataclass(frozen=True)
class Statement:
    """One statement of a script.

    Attributes:
        text: its text, without the terminating ``;`` (comments inside are kept).
        tokens: its tokens, positions relative to the script, ending with END.
        line: the line it starts on.
        column: the column it starts at.
        offset: the offset in the script where ``text`` starts.
    """

    text: str
    tokens: tuple[Token, ...]
    line: int
    column: int
    offset: int

    def local(self, token: Token) -> tuple[int, int]:
        """``token``'s start and end offsets inside :attr:`text`."""
        return token.start - self.offset, token.end - self.offset


def split_statements(script: str, *, line: int = 1, column: int = 1) -> list[Statement]:
    """Split a script at ``;`` into statements (empty ones dropped).

    ``line`` and ``column`` are where ``script`` starts (for a part of a larger text).

    A ``;`` inside strings, comments and ``BEGIN ... END`` blocks (Flink's ``EXECUTE
    STATEMENT SET BEGIN ... END``) does not end a statement.

    Raises:
        SqlParseError: an unterminated string or comment, or a ``BEGIN`` without ``END``.
    """
    tokens = tokenize(script, line=line, column=column)
    statements: list[Statement] = []
    current: list[Token] = []
    depth = 0  # open BEGIN ... END blocks
    cases = 0  # open CASE ... END expressions (their END closes no block)
    begin: Token | None = None

    def flush(end_offset: int) -> None:
        if not current:
            return
        first = current[0]
        text = script[first.start : end_offset].rstrip()
        last = current[-1]
        width = len(script[last.start : last.end].splitlines()[-1] or " ")
        column = last.column + width if "\n" not in script[last.start : last.end] else width + 1
        end = Token(TokenKind.END, "", last.end, last.end, last.line, column)
        statements.append(Statement(text, (*current, end), first.line, first.column, first.start))
        current.clear()

    for token in tokens:
        if token.kind is TokenKind.END:
            if depth:
                assert begin is not None
                raise SqlParseError(
                    "BEGIN without END",
                    line=begin.line,
                    column=begin.column,
                    expected="END",
                )
            flush(token.start)
            break
        if token.is_word("BEGIN") and _starts_block(current):
            depth += 1
            begin = token
        elif token.is_word("CASE"):
            cases += 1
        elif token.is_word("END") and cases:
            cases -= 1
        elif token.is_word("END") and depth:
            depth -= 1
        if token.is_symbol(";") and not depth:
            flush(token.start)
            continue
        current.append(token)
    return statements


def _starts_block(current: list[Token]) -> bool:
    """Whether ``BEGIN`` opens a block: ``[EXECUTE] STATEMENT SET BEGIN``."""
    words = [t.value.upper() for t in current[-2:] if t.kind is TokenKind.WORD]
    return words == ["STATEMENT", "SET"] and len(current) > 2
