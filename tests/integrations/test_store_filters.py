"""The shared filter walk (``render_filter``) with each database store's rendering of one
condition: one table of filters, the syntax each backend gets. Pure functions, no database."""

from __future__ import annotations

from typing import Any

import pytest

from flink_agents.api.vector_stores._filters import Condition, parse_filter
from flink_agents.integrations.vector_stores._common import render_filter, to_document
from flink_agents.integrations.vector_stores.elasticsearch._search_engine import to_bool_query
from flink_agents.integrations.vector_stores.milvus.milvus_vector_store import to_milvus_expr

NESTED = {"$and": [{"a": {"$gt": 1}}, {"$or": [{"b": "x"}, {"c": {"$ne": True}}]}]}


def test_the_walk_renders_parts_left_to_right_depth_first() -> None:
    seen: list[str] = []

    def leaf(cond: Condition) -> str:
        seen.append(cond.field)
        return f"{cond.field}{cond.op}{cond.value!r}"

    def junction(op: str, parts: list[str]) -> str:
        return op + "(" + ",".join(parts) + ")"

    node = parse_filter(NESTED)
    assert render_filter(node, leaf, junction) == "$and(a$gt1,$or(b$eq'x',c$neTrue))"
    assert seen == ["a", "b", "c"]  # the order stores that collect parameters rely on
    assert render_filter(None, leaf, junction) is None
    assert render_filter(parse_filter({"a": 1}), leaf, junction) == "a$eq1"


#: filter -> (Milvus expression, Elasticsearch/OpenSearch query)
TABLE: list[tuple[dict[str, Any], str | None, dict[str, Any]]] = [
    ({"a": 1}, '(metadata["a"] == 1)', {"term": {"metadata.a": 1}}),
    ({"a": {"$ne": "x"}}, None, {"bool": {"must_not": [{"term": {"metadata.a": "x"}}]}}),
    (
        {"a": {"$in": [1, 2]}},
        '(metadata["a"] == 1 or metadata["a"] == 2)',
        {"terms": {"metadata.a": [1, 2]}},
    ),
    ({"a": {"$lte": 2.5}}, '(metadata["a"] <= 2.5)', {"range": {"metadata.a": {"lte": 2.5}}}),
    (
        {"a": True, "b": {"$nin": ["x"]}},
        '((metadata["a"] == true))',  # $nin is checked by the store, not sent
        {
            "bool": {
                "filter": [
                    {"term": {"metadata.a": True}},
                    {"bool": {"must_not": [{"terms": {"metadata.b": ["x"]}}]}},
                ]
            }
        },
    ),
    (
        NESTED,
        '((metadata["a"] > 1))',  # an OR holding a $ne is dropped whole
        {
            "bool": {
                "filter": [
                    {"range": {"metadata.a": {"gt": 1}}},
                    {
                        "bool": {
                            "should": [
                                {"term": {"metadata.b": "x"}},
                                {"bool": {"must_not": [{"term": {"metadata.c": True}}]}},
                            ],
                            "minimum_should_match": 1,
                        }
                    },
                ]
            }
        },
    ),
    (
        {"$or": [{"a": 1}, {"b": "x"}]},
        '((metadata["a"] == 1) or (metadata["b"] == "x"))',
        {
            "bool": {
                "should": [{"term": {"metadata.a": 1}}, {"term": {"metadata.b": "x"}}],
                "minimum_should_match": 1,
            }
        },
    ),
]


@pytest.mark.parametrize(("where", "milvus", "search_engine"), TABLE)
def test_each_backend_renders_the_filter(
    where: dict[str, Any], milvus: str | None, search_engine: dict[str, Any]
) -> None:
    node = parse_filter(where)
    assert to_milvus_expr(node) == milvus
    assert to_bool_query(node) == search_engine


def test_pgvector_renders_sql_with_parameters_in_placeholder_order() -> None:
    pytest.importorskip("psycopg", reason="pip install 'flink-agents-py[pgvector]'")
    from flink_agents.integrations.vector_stores.pgvector.pgvector_vector_store import to_sql

    params: list[Any] = []
    sql = to_sql(parse_filter(NESTED), params)
    assert sql == (
        "((CASE WHEN jsonb_typeof((metadata -> %s)) = 'number' THEN ((metadata ->> %s))::float8 "
        "> %s ELSE FALSE END) AND (((metadata -> %s) = %s) OR (((metadata -> %s) = %s) "
        "IS NOT TRUE)))"
    )
    assert sql.count("%s") == len(params)
    assert [p if isinstance(p, (str, float)) else p.obj for p in params] == [
        "a",
        "a",
        1.0,
        "b",
        "x",
        "c",
        True,
    ]
    assert to_sql(None, params) == "TRUE"


def test_qdrant_renders_filter_models() -> None:
    models = pytest.importorskip("qdrant_client.models", reason="pip install '...[qdrant]'")
    from flink_agents.integrations.vector_stores.qdrant.qdrant_vector_store import to_qdrant_filter

    found = to_qdrant_filter(parse_filter({"$or": [{"a": 2.5}, {"b": {"$nin": [1]}}]}), models)
    exact = models.FieldCondition(key="metadata.a", range=models.Range(gte=2.5, lte=2.5))
    member = models.FieldCondition(key="metadata.b", match=models.MatchValue(value=1))
    assert found == models.Filter(
        should=[
            models.Filter(must=[exact]),  # float equality is a closed range
            models.Filter(must_not=[models.Filter(should=[member])]),
        ]
    )
    assert to_qdrant_filter(None, models) is None


def test_to_document_shapes_a_stored_record() -> None:
    doc = to_document(7, {"content": "text", "metadata": {"k": 1}, "other": 2}, 0.5)
    assert (doc.id, doc.content, doc.metadata, doc.score) == ("7", "text", {"k": 1}, 0.5)
    bare = to_document("x", {"metadata": None})
    assert (bare.content, bare.metadata, bare.score) == ("", {}, None)
