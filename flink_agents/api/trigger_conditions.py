"""Trigger conditions of actions, as Apache Flink Agents' main branch defines them.

An action's trigger condition is either an **exact event type** or a **condition
expression** over the event, in the subset of CEL (Common Expression Language) upstream
supports; conditions of one action are alternatives (OR)::

    @action(EventType.InputEvent)                               # an exact type
    @action("order-created", "'order:created'")                 # bare or quoted type names
    @action("type == EventType.InputEvent && score > 5")        # an expression

Classification (:func:`classify`): a bare name (``a``, ``order.created``, ``order-created``)
or a quoted name without whitespace (``'order:created'``) is an event type, except the
literals ``true`` / ``false`` / ``null`` and names starting ``EventType.``; anything else is
an expression.

Expressions see ``type`` (the event type), ``id`` (the event id as text), ``EventType`` (the
built-in type constants) and ``attributes`` (the event's attributes); top-level attributes
are also plain variables (``score`` is ``attributes.score``; the framework's three names win).
``has(x.y)`` tests presence (``has(score)`` is ``has(attributes.score)``; ``has(a.b.c)`` tests
each step); reading a missing attribute is an evaluation error (see
``AgentConfigOptions.CONDITION_EVALUATION_FAILURE_STRATEGY``). Supported: literals (numbers,
strings, bytes, booleans, null, lists, maps), ``! - * / % + - < <= > >= == != in && || ?:``,
field and index access, and the standard functions ``size``, ``contains``, ``startsWith``,
``endsWith``, ``matches``, ``int``, ``uint``, ``double``, ``string``, ``bytes``, ``bool``,
``dyn``. Not supported, as upstream: the comprehension macros (``all``, ``exists``,
``exists_one``, ``filter``, ``map``), a whole ``attributes`` map (``size(attributes)``,
``attributes[expr]``), a bare path as the condition (``a.b``: compare it), a result that is
not Boolean.

Why our own small evaluator and not ``cel-python``: upstream's dialect differs from standard
CEL exactly where a library would be in the way (its ``has()`` accepts a bare attribute name
and desugars chains; attributes are promoted to variables; compile-time rules on macros,
paths and the ``attributes`` map; errors must name the position), and a condition is
evaluated for every event of a plan that has one: it is compiled once into Python closures
here, with no conversion of the event into another value model. Errors name the
expression's column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from flink_agents.errors import TriggerConditionError

__all__ = [
    "CompiledCondition",
    "ConditionEvaluationError",
    "classify",
    "compile_condition",
]

_EVENT_TYPE_NAME = re.compile(
    r"^(?:([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*)"
    r"|(['\"])([^\s'\"\\\x00-\x1f\x7f]+)\2)$"
)
_EXPRESSION_LITERALS = frozenset({"true", "false", "null"})
_FRAMEWORK = frozenset({"type", "id", "EventType"})
_RESERVED = frozenset(
    {"type", "attributes", "id", "EventType", "true", "false", "null", "in", "int", "uint"}
    | {"double", "string", "bool", "bytes", "list", "has", "exists", "exists_one", "all"}
    | {"filter", "map"}
)
_MACROS = frozenset({"all", "exists", "exists_one", "filter", "map"})
_INT64 = (-(2**63), 2**63 - 1)
_MAX_DEPTH = 32
_MAX_LENGTH = 8192


def classify(entry: str) -> tuple[str, str]:
    """``("event_type", name)`` or ``("expression", text)`` for one trigger condition.

    Raises:
        TriggerConditionError: the entry is empty or blank.
    """
    if not isinstance(entry, str) or not entry.strip():
        raise TriggerConditionError("a trigger condition must be a non-blank string", entry)
    text = entry.strip()
    match = _EVENT_TYPE_NAME.match(text)
    if match:
        bare = match.group(1)
        if bare is None:
            return "event_type", match.group(3)
        if not bare.startswith("EventType.") and bare not in _EXPRESSION_LITERALS:
            return "event_type", bare
    return "expression", text


class ConditionEvaluationError(Exception):
    """A condition failed on one event (a missing attribute, a type mismatch...)."""


# -- lexer ------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<float>(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?))
  | (?P<hex>0[xX][0-9a-fA-F]+[uU]?)
  | (?P<int>\d+[uU]?)
  | (?P<string>[rRbB]{0,2}(?:'''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"
        |'(?:\\.|[^\\'\n])*'|"(?:\\.|[^\\"\n])*"))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&|\|\||==|!=|<=|>=|[-+*/%!<>?:.,()\[\]{}])
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPE = re.compile(
    r"\\(?:x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|([0-3][0-7]{2})|(.))",
    re.DOTALL,
)
_SIMPLE_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}  # fmt: skip


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    pos: int


class _Syntax(Exception):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos


def _tokens(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise _Syntax(f"unexpected character {text[pos]!r}", pos)
        kind = m.lastgroup or ""
        if kind != "ws":
            out.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    out.append(_Tok("end", "", len(text)))
    return out


def _string_value(tok: _Tok) -> str | bytes:
    raw = tok.text
    prefix = ""
    while raw[0] in "rRbB":
        prefix += raw[0].lower()
        raw = raw[1:]
    quote = raw[:3] if raw[:3] in ("'''", '"""') else raw[0]
    body = raw[len(quote) : -len(quote)]
    if "r" not in prefix:

        def unescape(m: re.Match[str]) -> str:
            hex2, u4, u8, octal, simple = m.groups()
            if hex2 or u4 or u8:
                return chr(int(hex2 or u4 or u8, 16))
            if octal:
                return chr(int(octal, 8))
            if simple in _SIMPLE_ESCAPES:
                return _SIMPLE_ESCAPES[simple]
            raise _Syntax(f"invalid escape sequence \\{simple}", tok.pos)

        body = _ESCAPE.sub(unescape, body)
    if "b" in prefix:
        return body.encode("latin-1" if all(ord(c) < 256 for c in body) else "utf-8")
    return body


# -- parser (nodes are tuples: (kind, pos, ...)) -------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def accept(self, text: str) -> _Tok | None:
        tok = self.peek()
        if tok.kind in ("op", "ident") and tok.text == text:
            self.i += 1
            return tok
        return None

    def expect(self, text: str, what: str) -> _Tok:
        tok = self.accept(text)
        if tok is None:
            found = self.peek()
            shown = "the end" if found.kind == "end" else repr(found.text)
            raise _Syntax(f"expected {what}, found {shown}", found.pos)
        return tok

    def parse(self) -> tuple[Any, ...]:
        node = self.expr()
        tok = self.peek()
        if tok.kind != "end":
            raise _Syntax(f"unexpected {tok.text!r} after the expression", tok.pos)
        return node

    def expr(self) -> tuple[Any, ...]:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Syntax(f"nested more than {_MAX_DEPTH} levels deep", self.peek().pos)
        try:
            cond = self.binary(0)
            q = self.accept("?")
            if q is None:
                return cond
            then = self.binary(0)
            self.expect(":", "':' of the conditional")
            return ("cond", q.pos, cond, then, self.expr())
        finally:
            self.depth -= 1

    _LEVELS = (
        ("||",),
        ("&&",),
        ("==", "!=", "<", "<=", ">", ">=", "in"),
        ("+", "-"),
        ("*", "/", "%"),
    )

    def binary(self, level: int) -> tuple[Any, ...]:
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        ops = self._LEVELS[level]
        while True:
            tok = self.peek()
            if tok.kind in ("op", "ident") and tok.text in ops:
                self.i += 1
                left = ("bin", tok.pos, tok.text, left, self.binary(level + 1))
                if level == 2 and self.peek().text in ops and self.peek().kind == "op":
                    # CEL relations do not chain (a < b < c): parsed left to right, as CEL
                    continue
            else:
                return left

    def unary(self) -> tuple[Any, ...]:
        tok = self.peek()
        if tok.kind == "op" and tok.text in ("!", "-"):
            self.i += 1
            operand = self.unary()
            value = operand[2] if operand[0] == "lit" else None
            if tok.text == "-" and type(value) in (int, float):
                return ("lit", tok.pos, -value)  # type: ignore[operator]
            return ("not" if tok.text == "!" else "neg", tok.pos, operand)
        return self.member()

    def member(self) -> tuple[Any, ...]:
        node = self.primary()
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text == ".":
                self.i += 1
                name = self.take()
                if name.kind != "ident":
                    raise _Syntax("expected a field name after '.'", name.pos)
                if self.accept("("):
                    node = ("call", name.pos, name.text, node, self.args(")"))
                else:
                    node = ("select", name.pos, node, name.text)
            elif tok.kind == "op" and tok.text == "[":
                self.i += 1
                index = self.expr()
                self.expect("]", "']'")
                node = ("index", tok.pos, node, index)
            else:
                return node

    def args(self, close: str) -> list[tuple[Any, ...]]:
        items: list[tuple[Any, ...]] = []
        if self.accept(close):
            return items
        while True:
            items.append(self.expr())
            if self.accept(close):
                return items
            self.expect(",", f"',' or {close!r}")
            if self.accept(close):  # a trailing comma
                return items

    def primary(self) -> tuple[Any, ...]:
        tok = self.take()
        if tok.kind == "int" or tok.kind == "hex":
            text = tok.text.rstrip("uU")
            value = int(text, 16 if tok.kind == "hex" else 10)
            if not _INT64[0] <= value <= (2**64 - 1 if text != tok.text else _INT64[1]):
                raise _Syntax(f"integer {tok.text} is out of range", tok.pos)
            return ("lit", tok.pos, value)
        if tok.kind == "float":
            return ("lit", tok.pos, float(tok.text))
        if tok.kind == "string":
            return ("lit", tok.pos, _string_value(tok))
        if tok.kind == "ident":
            if tok.text in ("true", "false"):
                return ("lit", tok.pos, tok.text == "true")
            if tok.text == "null":
                return ("lit", tok.pos, None)
            if self.accept("("):
                return ("call", tok.pos, tok.text, None, self.args(")"))
            return ("ident", tok.pos, tok.text)
        if tok.kind == "op":
            if tok.text == "(":
                node = self.expr()
                self.expect(")", "')'")
                return ("paren", tok.pos, node)
            if tok.text == "[":
                return ("list", tok.pos, self.args("]"))
            if tok.text == "{":
                entries: list[tuple[Any, Any]] = []
                if not self.accept("}"):
                    while True:
                        key = self.expr()
                        self.expect(":", "':' in a map literal")
                        entries.append((key, self.expr()))
                        if self.accept("}"):
                            break
                        self.expect(",", "',' or '}'")
                        if self.accept("}"):
                            break
                return ("map", tok.pos, entries)
            if tok.text == ".":
                name = self.take()
                if name.kind == "ident":  # a leading dot: the root scope
                    return ("ident", name.pos, name.text)
        shown = "the end" if tok.kind == "end" else repr(tok.text)
        raise _Syntax(f"expected an expression, found {shown}", tok.pos)


# -- checks -----------------------------------------------------------------------------------


def _unparen(node: tuple[Any, ...]) -> tuple[Any, ...]:
    while node[0] == "paren":
        node = node[2]
    return node


def _walk(node: Any, parent: Any = None) -> Any:
    """(node, parent) pairs, depth first."""
    if not isinstance(node, tuple) or not node or not isinstance(node[0], str):
        return
    yield node, parent
    kind = node[0]
    children: list[Any] = []
    if kind in ("bin",):
        children = [node[3], node[4]]
    elif kind in ("not", "neg", "paren"):
        children = [node[2]]
    elif kind == "cond":
        children = [node[2], node[3], node[4]]
    elif kind == "select":
        children = [node[2]]
    elif kind == "index":
        children = [node[2], node[3]]
    elif kind == "call":
        children = ([node[3]] if node[3] is not None else []) + list(node[4])
    elif kind == "list":
        children = list(node[2])
    elif kind == "map":
        children = [x for pair in node[2] for x in pair]
    elif kind == "has":
        children = [node[2]]
    for child in children:
        yield from _walk(child, node)


def _desugar_has(node: tuple[Any, ...], text: str) -> tuple[Any, ...]:
    """``has(...)`` calls into presence tests (upstream's macro): ``has(score)`` is
    ``has(attributes.score)``; ``has(a.b.c)`` tests each step."""
    kind = node[0]
    if kind == "call" and node[2] == "has" and node[3] is None:
        args = node[4]
        if len(args) != 1:
            raise _Syntax("has() takes one argument", node[1])
        arg = _unparen(args[0])
        if arg[0] == "ident" and arg[2] not in _RESERVED:
            return ("has", node[1], ("select", arg[1], ("ident", arg[1], "attributes"), arg[2]))
        if arg[0] == "select":
            return _has_chain(arg)
        raise _Syntax(
            "invalid argument to has(): expected a field selection like has(a.b) or an "
            "attribute name like has(score)",
            node[1],
        )
    if kind in ("lit", "ident"):
        return node
    if kind == "bin":
        return (*node[:3], _desugar_has(node[3], text), _desugar_has(node[4], text))
    if kind in ("not", "neg", "paren"):
        return (*node[:2], _desugar_has(node[2], text))
    if kind == "cond":
        return (*node[:2], *(_desugar_has(n, text) for n in node[2:]))
    if kind == "select":
        return ("select", node[1], _desugar_has(node[2], text), node[3])
    if kind == "index":
        return ("index", node[1], _desugar_has(node[2], text), _desugar_has(node[3], text))
    if kind == "call":
        target = None if node[3] is None else _desugar_has(node[3], text)
        return ("call", node[1], node[2], target, [_desugar_has(a, text) for a in node[4]])
    if kind == "list":
        return ("list", node[1], [_desugar_has(a, text) for a in node[2]])
    if kind == "map":
        pairs = [(_desugar_has(k, text), _desugar_has(v, text)) for k, v in node[2]]
        return ("map", node[1], pairs)
    return node


def _has_chain(select: tuple[Any, ...]) -> tuple[Any, ...]:
    operand = _unparen(select[2])
    presence = ("has", select[1], select)
    if operand[0] == "select":
        return ("bin", select[1], "&&", _has_chain(operand), presence)
    if operand[0] == "ident" and operand[2] not in _RESERVED:
        root = (
            "has",
            operand[1],
            ("select", operand[1], ("ident", operand[1], "attributes"), operand[2]),
        )
        return ("bin", select[1], "&&", root, presence)
    return presence


_FUNCTIONS = {
    "size": "int", "contains": "bool", "startsWith": "bool", "endsWith": "bool",
    "matches": "bool", "int": "int", "uint": "int", "double": "double", "string": "string",
    "bytes": "bytes", "bool": "bool", "dyn": "dyn",
}  # fmt: skip


def _static_type(node: tuple[Any, ...]) -> str:
    """The result type known before evaluation (``dyn`` when it depends on the event)."""
    kind = node[0]
    if kind == "paren":
        return _static_type(node[2])
    if kind == "lit":
        value = node[2]
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "bool"
        return {int: "int", float: "double", str: "string", bytes: "bytes"}[type(value)]
    if kind in ("not", "has"):
        return "bool"
    if kind == "bin":
        if node[2] in ("&&", "||", "==", "!=", "<", "<=", ">", ">=", "in"):
            return "bool"
        left, right = _static_type(node[3]), _static_type(node[4])
        return left if left == right else "dyn"
    if kind == "neg":
        return _static_type(node[2])
    if kind == "cond":
        a, b = _static_type(node[3]), _static_type(node[4])
        return a if a == b else "dyn"
    if kind == "list":
        return "list"
    if kind == "map":
        return "map"
    if kind == "call":
        return _FUNCTIONS.get(node[2], "dyn")
    if kind == "ident" and node[2] in ("type", "id"):
        return "string"
    if kind == "select" and _unparen(node[2])[0:3:2] == ("ident", "EventType"):
        return "string"
    return "dyn"


def _check(root: tuple[Any, ...], event_types: Mapping[str, str]) -> set[str]:
    """Upstream's rules; the top-level attribute keys the expression reads."""
    bare = _unparen(root)
    if bare[0] == "ident" or bare[0] == "select":
        raise _Syntax(
            "a standalone path is not a Boolean condition; use an explicit comparison "
            "(for example 'ready == true')",
            bare[1],
        )
    keys: set[str] = set()
    for node, parent in _walk(root):
        kind = node[0]
        if kind == "call":
            name, target, args = node[2], node[3], node[4]
            if name in _MACROS and target is not None and args and _unparen(args[0])[0] == "ident":
                raise _Syntax(
                    f"unsupported construct '{name}': has() is the only supported macro", node[1]
                )
            if name not in _FUNCTIONS:
                raise _Syntax(f"unknown function '{name}'", node[1])
        elif kind == "select" and _unparen(node[2])[0:3:2] == ("ident", "EventType"):
            if node[3] not in event_types:
                raise _Syntax(
                    f"unknown EventType constant: EventType.{node[3]} (known: "
                    f"{', '.join(sorted(event_types))})",
                    node[1],
                )
        elif kind == "ident":
            name = node[2]
            if name in _FRAMEWORK:
                if name == "EventType" and (parent is None or parent[0] != "select"):
                    raise _Syntax("EventType is used only as EventType.<constant>", node[1])
                continue
            if name != "attributes":
                keys.add(name)
                continue
            key = _attribute_key(node, parent)
            if key is None:
                raise _Syntax(
                    "the whole 'attributes' map cannot be used (e.g. dynamic index "
                    "attributes[expr], size(attributes), or attributes == ...); reference "
                    "attributes by a literal key such as attributes['key'], 'key' in "
                    "attributes, or has(attributes.key)",
                    node[1],
                )
            keys.add(key)
    result = _static_type(root)
    if result not in ("bool", "dyn"):
        raise _Syntax(
            f"a trigger condition must have a Boolean result; this one has type {result}",
            root[1],
        )
    return keys


def _attribute_key(node: tuple[Any, ...], parent: Any) -> str | None:
    if parent is None:
        return None
    if parent[0] == "select" and parent[2] is node:
        return str(parent[3])
    if parent[0] == "index" and parent[2] is node:
        key = parent[3]
        return key[2] if key[0] == "lit" and isinstance(key[2], str) else None
    if parent[0] == "bin" and parent[2] == "in" and parent[4] is node:
        key = parent[3]
        return key[2] if key[0] == "lit" and isinstance(key[2], str) else None
    return None


# -- evaluation -------------------------------------------------------------------------------

_Eval = Callable[[dict[str, Any]], Any]


def _fail(message: str) -> ConditionEvaluationError:
    return ConditionEvaluationError(message)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    return _kind(value)


def _equal(a: Any, b: Any) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return False
    if ka == "list":
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if ka == "map":
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _order(op: str, a: Any, b: Any) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka != kb or ka not in ("number", "string", "bytes", "bool"):
        raise _fail(f"no such overload: {_type_name(a)} {op} {_type_name(b)}")
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def _arith(op: str, a: Any, b: Any) -> Any:
    ta, tb = _type_name(a), _type_name(b)
    if ta != tb:
        raise _fail(f"no such overload: {ta} {op} {tb}")
    if op == "+":
        if ta in ("int", "double", "string", "bytes", "list"):
            result = a + b
        else:
            raise _fail(f"no such overload: {ta} + {tb}")
    elif ta not in ("int", "double"):
        raise _fail(f"no such overload: {ta} {op} {tb}")
    elif op == "-":
        result = a - b
    elif op == "*":
        result = a * b
    elif b == 0 and ta == "int":
        raise _fail("division by zero" if op == "/" else "modulus by zero")
    elif op == "/":
        if ta == "int":
            result = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        else:
            result = a / b if b else (float("nan") if a == 0 else float("inf") * (a > 0 or -1))
    else:
        if ta == "double":
            raise _fail("no such overload: double % double")
        result = abs(a) % abs(b) * (1 if a >= 0 else -1)
    if ta == "int" and not _INT64[0] <= result <= _INT64[1]:
        raise _fail("integer overflow")
    return result


def _call(name: str, target: Any, args: list[Any]) -> Any:
    values = ([target] if target is not _NO_TARGET else []) + args
    if name == "dyn" and len(values) == 1:
        return values[0]
    if name == "size" and len(values) == 1:
        value = values[0]
        if isinstance(value, (str, bytes, list, dict)):
            return len(value)
    elif name in ("contains", "startsWith", "endsWith") and len(values) == 2:
        s, sub = values
        if isinstance(s, str) and isinstance(sub, str):
            if name == "contains":
                return sub in s
            return s.startswith(sub) if name == "startsWith" else s.endswith(sub)
    elif name == "matches" and len(values) == 2:
        s, pattern = values
        if isinstance(s, str) and isinstance(pattern, str):
            try:
                return re.search(pattern, s) is not None
            except re.error as exc:
                raise _fail(f"invalid regular expression {pattern!r}: {exc}") from None
    elif name in ("int", "uint") and len(values) == 1:
        value = values[0]
        try:
            if isinstance(value, bool):
                raise ValueError
            result = int(value) if not isinstance(value, str) else int(value, 10)
        except (TypeError, ValueError, OverflowError):
            raise _fail(f"cannot convert {_type_name(value)} to {name}") from None
        if not _INT64[0] <= result <= (2**64 - 1 if name == "uint" else _INT64[1]) or (
            name == "uint" and result < 0
        ):
            raise _fail(f"{name} out of range")
        return result
    elif name == "double" and len(values) == 1:
        value = values[0]
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            try:
                return float(value)
            except ValueError:
                raise _fail(f"cannot convert {value!r} to double") from None
    elif name == "string" and len(values) == 1:
        value = values[0]
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (int, float, str)):
            return str(value)
        if isinstance(value, bytes):
            return value.decode("utf-8", errors="strict")
    elif name == "bytes" and len(values) == 1 and isinstance(values[0], (str, bytes)):
        value = values[0]
        return value.encode() if isinstance(value, str) else value
    elif name == "bool" and len(values) == 1:
        value = values[0]
        if isinstance(value, bool):
            return value
        if value in ("true", "True", "TRUE", "t", "1"):
            return True
        if value in ("false", "False", "FALSE", "f", "0"):
            return False
    shown = ", ".join(_type_name(v) for v in values)
    raise _fail(f"no such overload: {name}({shown})")


_NO_TARGET = object()


def _compile(node: tuple[Any, ...]) -> _Eval:
    kind = node[0]
    if kind == "paren":
        return _compile(node[2])
    if kind == "lit":
        value = node[2]
        return lambda env: value
    if kind == "ident":
        name = node[2]

        def ident(env: dict[str, Any]) -> Any:
            try:
                return env[name]
            except KeyError:
                raise _fail(f"no attribute {name!r} on the event") from None

        return ident
    if kind == "select":
        operand, field = _compile(node[2]), node[3]

        def select(env: dict[str, Any]) -> Any:
            value = operand(env)
            if isinstance(value, dict):
                try:
                    return value[field]
                except KeyError:
                    raise _fail(f"no such key: {field}") from None
            raise _fail(f"cannot select field {field!r} of a {_type_name(value)}")

        return select
    if kind == "has":
        select_node = node[2]
        operand, field = _compile(select_node[2]), select_node[3]

        def has(env: dict[str, Any]) -> bool:
            value = operand(env)
            if isinstance(value, dict):
                return field in value
            raise _fail(f"has() on a {_type_name(value)}, not a map")

        return has
    if kind == "index":
        operand, index = _compile(node[2]), _compile(node[3])

        def indexed(env: dict[str, Any]) -> Any:
            value, key = operand(env), index(env)
            if isinstance(value, dict):
                for k in value:
                    if _equal(k, key):
                        return value[k]
                raise _fail(f"no such key: {key!r}")
            if isinstance(value, list):
                if isinstance(key, float) and key.is_integer():
                    key = int(key)
                if isinstance(key, int) and not isinstance(key, bool):
                    if 0 <= key < len(value):
                        return value[key]
                    raise _fail(f"index {key} out of range (size {len(value)})")
            raise _fail(f"no such overload: {_type_name(value)}[{_type_name(key)}]")

        return indexed
    if kind == "not":
        operand = _compile(node[2])

        def negate(env: dict[str, Any]) -> bool:
            value = operand(env)
            if isinstance(value, bool):
                return not value
            raise _fail(f"no such overload: !{_type_name(value)}")

        return negate
    if kind == "neg":
        operand = _compile(node[2])

        def minus(env: dict[str, Any]) -> Any:
            value = operand(env)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return -value
            raise _fail(f"no such overload: -{_type_name(value)}")

        return minus
    if kind == "cond":
        test, then, other = _compile(node[2]), _compile(node[3]), _compile(node[4])

        def conditional(env: dict[str, Any]) -> Any:
            value = test(env)
            if not isinstance(value, bool):
                raise _fail(f"the condition of ?: is a {_type_name(value)}, not a bool")
            return then(env) if value else other(env)

        return conditional
    if kind == "list":
        items = [_compile(n) for n in node[2]]
        return lambda env: [item(env) for item in items]
    if kind == "map":
        pairs = [(_compile(k), _compile(v)) for k, v in node[2]]
        return lambda env: {k(env): v(env) for k, v in pairs}
    if kind == "call":
        name = node[2]
        target = None if node[3] is None else _compile(node[3])
        args = [_compile(a) for a in node[4]]

        def call(env: dict[str, Any]) -> Any:
            return _call(
                name, _NO_TARGET if target is None else target(env), [a(env) for a in args]
            )

        return call
    assert kind == "bin"
    op, left, right = node[2], _compile(node[3]), _compile(node[4])
    if op in ("&&", "||"):
        stop = op == "||"  # the value that decides the result on its own

        def logical(env: dict[str, Any]) -> bool:
            error: ConditionEvaluationError | None = None
            try:
                a = left(env)
            except ConditionEvaluationError as exc:  # CEL: an error may be absorbed
                error, a = exc, None
            if a is stop:
                return stop
            b = right(env)
            if b is stop:
                return stop
            if error is not None:
                raise error
            for value in (a, b):
                if not isinstance(value, bool):
                    raise _fail(f"no such overload: {_type_name(value)} {op} ...")
            return not stop

        return logical
    if op == "==":
        return lambda env: _equal(left(env), right(env))
    if op == "!=":
        return lambda env: not _equal(left(env), right(env))
    if op in ("<", "<=", ">", ">="):
        return lambda env: _order(op, left(env), right(env))
    if op == "in":

        def contained(env: dict[str, Any]) -> bool:
            item, container = left(env), right(env)
            if isinstance(container, list):
                return any(_equal(item, x) for x in container)
            if isinstance(container, dict):
                return any(_equal(item, k) for k in container)
            raise _fail(f"no such overload: {_type_name(item)} in {_type_name(container)}")

        return contained
    return lambda env: _arith(op, left(env), right(env))


@dataclass(frozen=True)
class CompiledCondition:
    """One condition expression, checked and compiled.

    Attributes:
        source: the expression as written.
        attribute_keys: the top-level attributes it reads (only these are prepared).
        program: the compiled expression.
        event_types: the event types it can be true for (a ``type == "..."`` conjunct or
            alternatives of them); None: any type. For other types it is false without an
            error (CEL's ``&&`` absorbs errors next to a false side), so the runtime need
            not evaluate it.
        reads_id: whether it reads the event's ``id``.
    """

    source: str
    attribute_keys: frozenset[str]
    program: _Eval
    event_types: frozenset[str] | None = None
    reads_id: bool = True

    def evaluate(self, variables: dict[str, Any]) -> bool:
        """The result for an event's variables (``type``, ``id``, ``EventType``,
        ``attributes`` and the promoted attributes).

        Raises:
            ConditionEvaluationError: the expression failed on these values, or its result
                is not a bool.
        """
        result = self.program(variables)
        if isinstance(result, bool):
            return result
        raise _fail(f"the condition returned a {_type_name(result)}, not a bool")


def compile_condition(text: str, event_types: Mapping[str, str]) -> CompiledCondition:
    """Parse, check and compile one condition expression.

    Args:
        text: the expression.
        event_types: the ``EventType`` constants (name -> type string).

    Raises:
        TriggerConditionError: the expression does not parse or breaks a rule; the
            message names the column and shows the expression with a caret.
    """
    if len(text) > _MAX_LENGTH:
        raise TriggerConditionError(
            f"a trigger condition may have at most {_MAX_LENGTH} characters", text
        )
    try:
        tree = _desugar_has(_Parser(text).parse(), text)
        keys = _check(tree, event_types)
    except _Syntax as exc:
        raise TriggerConditionError(str(exc), text, exc.pos) from None
    constants = dict(event_types)
    bound = _bind_event_types(tree, constants)
    program = _compile(bound)
    reads_id = any(n[0] == "ident" and n[2] == "id" for n, _ in _walk(bound))
    return CompiledCondition(text, frozenset(keys), program, _possible_types(bound), reads_id)


def _possible_types(node: Any) -> frozenset[str] | None:
    """The event types ``node`` can be true for (None: any), from ``type == "x"``
    comparisons joined by ``&&`` (intersection) and ``||`` (union)."""
    node = _unparen(node)
    if node[0] != "bin":
        return None
    op = node[2]
    if op in ("&&", "||"):
        left, right = _possible_types(node[3]), _possible_types(node[4])
        if op == "&&":
            if left is None or right is None:
                return right if left is None else left
            return left & right
        if left is None or right is None:
            return None
        return left | right
    if op == "==":
        for a, b in ((node[3], node[4]), (node[4], node[3])):
            a, b = _unparen(a), _unparen(b)
            if a[0] == "ident" and a[2] == "type" and b[0] == "lit" and isinstance(b[2], str):
                return frozenset({b[2]})
    return None


def _bind_event_types(node: Any, constants: dict[str, str]) -> Any:
    """``EventType.X`` selections folded into their type strings."""
    if not isinstance(node, tuple) or not node or not isinstance(node[0], str):
        if isinstance(node, list):
            return [_bind_event_types(n, constants) for n in node]
        return node
    if node[0] == "select" and _unparen(node[2])[0:3:2] == ("ident", "EventType"):
        return ("lit", node[1], constants[node[3]])
    if node[0] == "map":
        return (
            "map",
            node[1],
            [
                (_bind_event_types(k, constants), _bind_event_types(v, constants))
                for k, v in node[2]
            ],
        )
    return tuple(_bind_event_types(part, constants) for part in node)
