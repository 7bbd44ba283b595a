"""Trigger conditions: classification, the expression language and its rules, as Apache
Flink Agents' main branch defines them (its conformance cases, written here as our own
table: cel_conformance_cases.yaml and trigger_condition_conformance.json upstream)."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.api.events.event_type import event_type_constants
from flink_agents.api.trigger_conditions import (
    ConditionEvaluationError,
    classify,
    compile_condition,
)
from flink_agents.errors import TriggerConditionError

CONSTANTS = event_type_constants()


def evaluate(condition: str, attributes: dict[str, Any], type_: str = "test", id_: str = "abc"):
    compiled = compile_condition(condition, CONSTANTS)
    attrs = {k: v for k, v in attributes.items() if k in compiled.attribute_keys}
    variables = dict(attrs)
    variables.update(type=type_, id=id_, EventType=CONSTANTS, attributes=attrs)
    return compiled.evaluate(variables)


# (condition, event type, attributes, expected): upstream's evaluation corpus
CASES = [
    ('type == "_input_event"', "_input_event", {}, True),
    ('type == "other"', "test", {}, False),
    ("has(attributes.score) && attributes.score >= 3", "test", {"score": 5}, True),
    ("has(attributes.missing) && attributes.missing == true", "test", {}, False),
    (
        'has(attributes.meta) && attributes.meta.source == "api"',
        "t",
        {"meta": {"source": "api"}},
        True,
    ),
    (
        'type == "review" && has(attributes.score) && attributes.score >= 3',
        "review",
        {"score": 4},
        True,
    ),
    ("has(attributes.success) && attributes.success == true", "t", {"success": True}, True),
    ('has(attributes.model) && attributes.model == "gpt-4"', "t", {"model": "gpt-4"}, True),
    ("has(attributes.retry_count) && attributes.retry_count < 3", "t", {"retry_count": 1}, True),
    ("has(attributes.retry_count) && attributes.retry_count < 3", "t", {"retry_count": 5}, False),
    (
        'has(attributes.input) && has(attributes.input.id) && attributes.input.id == "B000YFSR4W"',
        "_input_event",
        {"input": {"id": "B000YFSR4W", "review": "comfy fit"}},
        True,
    ),
    (
        'has(attributes.tags) && attributes.tags[0] == "sports"',
        "t",
        {"tags": ["sports", "shoes"]},
        True,
    ),
    ("has(attributes.tags) && attributes.tags == '[1, 2, 3]'", "t", {"tags": "[1, 2, 3]"}, True),
    (
        'has(attributes.broken) && attributes.broken == "{not json"',
        "t",
        {"broken": "{not json"},
        True,
    ),
    ("has(attributes.key)", "t", {}, False),
    (
        'has(attributes.data) && has(attributes.data.order) && attributes.data.order.id == "O100"',
        "t",
        {"data": {"order": {"id": "O100", "amount": 500}}},
        True,
    ),
    ("has(attributes.count) && attributes.count == 42", "t", {"count": 42}, True),
    (
        "has(attributes.a) && attributes.a == 1 || has(attributes.b) && attributes.b == 2",
        "t",
        {"a": 1},
        True,
    ),
    (
        "(has(attributes.a) && attributes.a == 1) || (has(attributes.b) && attributes.b == 2)",
        "t",
        {"b": 2},
        True,
    ),
    (
        "has(region.width) && region.width.score >= 80",
        "t",
        {"region": {"width": {"score": 95}}},
        True,
    ),
    (
        "has(region.width) && region.width.score >= 80",
        "t",
        {"region": {"width": {"score": 50}}},
        False,
    ),
    (
        "has(input.region) && input.region.width.score.month12 == 88",
        "t",
        {"input": {"region": {"width": {"score": {"month12": 88}}}}},
        True,
    ),
    ('(type == "hit") || (attributes.nope.deep > 3)', "hit", {}, True),
    ("has(attributes.missing) && (attributes.missing.deep > 3)", "t", {}, False),
    ("has(attributes.config.missing_key)", "t", {"config": {}}, False),
    (
        "has(attributes.outer.inner) && attributes.outer.inner.id == 1",
        "t",
        {"outer": {"inner": {"id": 1}}},
        True,
    ),
    ("type == EventType.InputEvent", "_input_event", {}, True),
    ("attributes.x == 9223372036854775807", "t", {"x": 9223372036854775807}, True),
    ("score >= 3", "t", {"score": 5}, True),
    ("has(score) && score >= 3", "t", {"score": 5}, True),
    ("has(score) && score >= 3", "t", {}, False),
    ('input.k == "in"', "_input_event", {"input": {"k": "in"}}, True),
    ("has(k)", "_input_event", {"input": {"k": "in"}}, False),
    ('output.k == "out"', "_output_event", {"output": {"k": "out"}}, True),
    ('mylist.name == "x"', "t", {"mylist": {"name": "x"}}, True),
    ("type == EventType.InputEvent && score > 0.8", "_input_event", {"score": 0.9}, True),
    ("has(attributes.meta.source)", "t", {}, False),
    ("has(attributes.meta.source)", "t", {"meta": {"source": "api"}}, True),
    (
        'has(attributes.meta.source) && attributes.meta.source == "api"',
        "t",
        {"meta": {"source": "api"}},
        True,
    ),
    ("has(value.user.tier)", "t", {"value": {"other": 1}}, False),
    ("has(value.user.tier)", "t", {}, False),
    ("true", "other", {}, True),
    ("false", "other", {}, False),
    ("a.b.c == true", "other", {"a": {"b": {"c": True}}}, True),
    ("has(score)", "other", {"score": 7}, True),
    # the example, and the standard functions
    ("type == EventType.InputEvent && score > 5", "_input_event", {"score": 7}, True),
    ('name.startsWith("ab") && size(name) == 3 && "b" in ["a", "b"]', "t", {"name": "abc"}, True),
    ('"a.b.c" in attributes && attributes["a.b.c"] == 1', "t", {"a.b.c": 1}, True),
    ("score * 2 + 1 == 11 && double(score) / 2.0 == 2.5", "t", {"score": 5}, True),
    ('tier == "gold" ? score > 1 : score > 10', "t", {"tier": "gold", "score": 2}, True),
]


@pytest.mark.parametrize(("condition", "event_type", "attributes", "expected"), CASES)
def test_upstream_evaluation_cases(condition, event_type, attributes, expected):
    assert evaluate(condition, attributes, event_type) is expected


def test_framework_variables_win_and_attributes_stay_reachable():
    ident = "550e8400-e29b-41d4-a716-446655440000"
    assert evaluate(f'id == "{ident}"', {"id": "tenant-42"}, id_=ident)
    assert evaluate('attributes.id == "tenant-42"', {"id": "tenant-42"}, id_=ident)
    assert evaluate('type == "real"', {"type": "fake"}, "real")
    assert evaluate('attributes.type == "fake"', {"type": "fake"}, "real")


@pytest.mark.parametrize(
    ("condition", "attributes"),
    [
        ("attributes.nope.deep > 3", {}),
        ("score > 3", {}),
        ('score > "3"', {"score": 5}),
        ("score + 1.5 > 3", {"score": 5}),
        ("tags[3] == 1", {"tags": [1]}),
        ("x / 0 == 1", {"x": 1}),
    ],
)
def test_evaluation_errors(condition, attributes):
    with pytest.raises(ConditionEvaluationError):
        evaluate(condition, attributes)


# (entry, classification, value): upstream's classification cases
CLASSIFIED = [
    ("a", "event_type", "a"),
    ("a.b.c", "event_type", "a.b.c"),
    ("  my_event  ", "event_type", "my_event"),
    ("'order-created.v1'", "event_type", "order-created.v1"),
    ('"order-created.v1"', "event_type", "order-created.v1"),
    ("'true'", "event_type", "true"),
    ("'EventType.custom'", "event_type", "EventType.custom"),
    ("in", "event_type", "in"),
    ("order-created", "event_type", "order-created"),
    ('"order\\"created"', "expression", '"order\\"created"'),
    ("''", "expression", "''"),
    ("true", "expression", "true"),
    ("false", "expression", "false"),
    ("type == EventType.InputEvent", "expression", "type == EventType.InputEvent"),
    ("'order created'", "expression", "'order created'"),
]


@pytest.mark.parametrize(("entry", "kind", "value"), CLASSIFIED)
def test_classification(entry, kind, value):
    assert classify(entry) == (kind, value)


# (expression, message part, column): rejected when the plan is compiled
REJECTED = [
    ("type ==", "expected an expression, found the end", 8),
    ("EventType.InputEvent", "standalone path", 11),
    ("(a.b.c)", "standalone path", 6),
    ("a . b . c", "standalone path", 9),
    ("type == EventType.NotARealEvent", "unknown EventType constant", 19),
    ("[1, 2].all(value, value > 0)", "unsupported construct 'all'", 8),
    ("items.exists(i, i > 2)", "unsupported construct 'exists'", 7),
    ("noSuchFn(1)", "unknown function 'noSuchFn'", 1),
    ("attributes[key_name] == 5", "whole 'attributes' map", 1),
    ("size(attributes) > 1", "whole 'attributes' map", 6),
    ("null", "Boolean result", 1),
    ("42", "Boolean result", 1),
    ("'order created'", "Boolean result", 1),
    ('"order\\"created"', "Boolean result", 1),
    ("''", "Boolean result", 1),
    ("score > 5 &&", "expected an expression", 13),
    ("score >> 5", "expected an expression", 8),
    ("has(type)", "invalid argument to has()", 1),
]


@pytest.mark.parametrize(("expression", "message", "column"), REJECTED)
def test_rejected_expressions_name_the_column(expression, message, column):
    with pytest.raises(TriggerConditionError) as info:
        compile_condition(expression, CONSTANTS)
    assert message in info.value.reason
    assert info.value.column == column
    caret_line = str(info.value).splitlines()[-1]
    assert caret_line.index("^") - 4 == column - 1  # the caret points at the column


def test_blank_entries_are_errors():
    with pytest.raises(TriggerConditionError, match="non-blank"):
        classify("   ")
