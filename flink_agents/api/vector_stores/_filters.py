"""Metadata filters: one language for every vector store (private; see ``BaseVectorStore``).

The language is Chroma's ``where`` dialect, plus an implicit AND of several keys, so the
equality shorthand of Apache Flink Agents (``{"user_id": "u1", "run_id": "r1"}``) is a
valid filter too::

    {"field": value}                            equality (str, int, float or bool)
    {"field": {"$eq" | "$ne": value}}
    {"field": {"$gt" | "$gte" | "$lt" | "$lte": number}}
    {"field": {"$in" | "$nin": [value, ...]}}    a non-empty list of values of one type
    {"$and": [filter, ...]}, {"$or": [filter, ...]}
    {"a": 1, "b": {"$gt": 2}}                   several keys: all must hold
    {"n": {"$gt": 1, "$lt": 5}}                 several operators: all must hold

Semantics, the same in every store (they are Chroma's): a field missing from a document's
metadata matches only ``$ne`` and ``$nin``; order comparisons need numbers; ``True`` is not
``1`` (``1`` and ``1.0`` are equal).

A filter is checked once, when parsed, and every mistake is a
:class:`~flink_agents.errors.VectorStoreError` that says what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flink_agents.errors import VectorStoreError

_SCALARS = (str, int, float, bool)
_EQUALITY = ("$eq", "$ne")
_ORDER = ("$gt", "$gte", "$lt", "$lte")
_MEMBERSHIP = ("$in", "$nin")
_OPERATORS = _EQUALITY + _ORDER + _MEMBERSHIP
_LOGICAL = ("$and", "$or")


@dataclass(frozen=True)
class Condition:
    """``field <op> value`` on one metadata field."""

    field: str
    op: str
    value: Any


@dataclass(frozen=True)
class Junction:
    """All (``$and``) or any (``$or``) of ``parts``."""

    op: str
    parts: tuple[Node, ...]


Node = Condition | Junction


def _kind(value: Any) -> type:
    # bool is an int subclass, but Chroma keeps them apart (True does not equal 1).
    if isinstance(value, bool):
        return bool
    return float if isinstance(value, (int, float)) else str


def _bad(problem: str, where: Any) -> VectorStoreError:
    return VectorStoreError(
        f"invalid metadata filter {where!r}: {problem}. Filters are {{'field': value}}, "
        "{'field': {'$op': value}} with $eq $ne $gt $gte $lt $lte $in $nin, or "
        "{'$and' | '$or': [filter, ...]}"
    )


def _condition(field: str, op: str, value: Any, where: Any) -> Condition:
    if op in _EQUALITY:
        if not isinstance(value, _SCALARS):
            raise _bad(f"{op} on {field!r} needs a str, int, float or bool", where)
    elif op in _ORDER:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(f"{op} on {field!r} needs a number, got {value!r}", where)
    elif op in _MEMBERSHIP:
        if not isinstance(value, (list, tuple)) or not value:
            raise _bad(f"{op} on {field!r} needs a non-empty list", where)
        if not all(isinstance(v, _SCALARS) for v in value):
            raise _bad(f"{op} on {field!r} takes str, int, float or bool values", where)
        if len({_kind(v) for v in value}) > 1:
            raise _bad(f"the values of {op} on {field!r} must all have one type", where)
        value = tuple(value)
    else:
        raise _bad(f"unknown operator {op!r} on {field!r}", where)
    return Condition(field, op, value)


def _parse(where: Any) -> Node:
    if not isinstance(where, Mapping) or not where:
        raise _bad("a filter is a non-empty dict", where)
    parts: list[Node] = []
    for key, value in where.items():
        if not isinstance(key, str):
            raise _bad(f"field names are strings, got {key!r}", where)
        if key in _LOGICAL:
            if not isinstance(value, (list, tuple)) or not value:
                raise _bad(f"{key} takes a non-empty list of filters", where)
            parts.append(Junction(key, tuple(_parse(v) for v in value)))
        elif key.startswith("$"):
            raise _bad(f"unknown operator {key!r} (logical operators: $and, $or)", where)
        elif isinstance(value, Mapping):
            if not value:
                raise _bad(f"empty operator dict on {key!r}", where)
            parts.extend(_condition(key, op, v, where) for op, v in value.items())
        else:
            parts.append(_condition(key, "$eq", value, where))
    return parts[0] if len(parts) == 1 else Junction("$and", tuple(parts))


def parse_filter(*filters: Mapping[str, Any] | None) -> Node | None:
    """The filters given (None ones skipped), checked and joined by AND; None if none.

    Raises:
        VectorStoreError: a filter is malformed.
    """
    nodes = [_parse(f) for f in filters if f is not None]
    if not nodes:
        return None
    return nodes[0] if len(nodes) == 1 else Junction("$and", tuple(nodes))


def _equal(stored: Any, wanted: Any) -> bool:
    return _kind(stored) is _kind(wanted) and stored == wanted


def _holds(cond: Condition, metadata: Mapping[str, Any]) -> bool:
    present = cond.field in metadata and metadata[cond.field] is not None
    stored = metadata.get(cond.field)
    op = cond.op
    if op == "$eq":
        return present and _equal(stored, cond.value)
    if op == "$ne":
        return not (present and _equal(stored, cond.value))
    if op == "$in":
        return present and any(_equal(stored, v) for v in cond.value)
    if op == "$nin":
        return not (present and any(_equal(stored, v) for v in cond.value))
    if not present or isinstance(stored, bool) or not isinstance(stored, (int, float)):
        return False
    if op == "$gt":
        return bool(stored > cond.value)
    if op == "$gte":
        return bool(stored >= cond.value)
    if op == "$lt":
        return bool(stored < cond.value)
    return bool(stored <= cond.value)


def matches(node: Node | None, metadata: Mapping[str, Any] | None) -> bool:
    """Whether a document with ``metadata`` passes the filter (None: every document)."""
    if node is None:
        return True
    metadata = metadata or {}
    if isinstance(node, Condition):
        return _holds(node, metadata)
    if node.op == "$and":
        return all(matches(p, metadata) for p in node.parts)
    return any(matches(p, metadata) for p in node.parts)


def to_chroma_where(node: Node | None) -> dict[str, Any] | None:
    """The filter in Chroma's ``where`` form (one operator per dict, 2+ parts per
    ``$and``/``$or``)."""
    if node is None:
        return None
    if isinstance(node, Condition):
        value = list(node.value) if isinstance(node.value, tuple) else node.value
        return {node.field: {node.op: value}}
    if len(node.parts) == 1:
        return to_chroma_where(node.parts[0])
    return {node.op: [to_chroma_where(p) for p in node.parts]}
