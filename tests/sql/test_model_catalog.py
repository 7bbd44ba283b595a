"""Models kept by the SQL layer where Flink has no CREATE MODEL (Flink 1.20 and 2.0): the
statements parse, the catalog resolves names as Flink would, checks providers at once and
keeps secrets out of SHOW CREATE / DESC; ML_PREDICT is refused with what to use instead.
(End to end on those versions: tests/sql/test_agent_run_flink.py and tests/versions.)"""

from __future__ import annotations

import pytest

from flink_agents.errors import CatalogError, ConfigurationError, SqlError, SqlParseError
from flink_agents.sql.catalog import ObjectIdentifier
from flink_agents.sql.lexer import split_statements
from flink_agents.sql.model_catalog import ModelCatalog, ml_predict_error
from flink_agents.sql.models import model_resources
from flink_agents.sql.parser import parse_model_statement
from flink_agents.sql.statements import CreateModel, ModelStatement, Name


def catalog() -> ModelCatalog:
    current = {"value": ("default_catalog", "default_database")}
    models = ModelCatalog(lambda: current["value"], "1.20.5")
    models.current = current  # type: ignore[attr-defined]
    return models


def run(models: ModelCatalog, sql: str):
    statement = parse_model_statement(sql)
    assert statement is not None, sql
    return models.execute(statement)


def test_create_model_parses_every_clause() -> None:
    statement = parse_model_statement(
        "CREATE TEMPORARY MODEL IF NOT EXISTS db.gpt INPUT (q STRING, n DECIMAL(10, 2)) "
        "OUTPUT (a STRING) COMMENT 'the model' WITH ('provider' = 'openai', 'model' = 'm')"
    )
    assert isinstance(statement, CreateModel)
    assert statement.name.parts == ("db", "gpt")
    assert (statement.temporary, statement.if_not_exists) == (True, True)
    assert statement.input_schema == "(q STRING, n DECIMAL(10, 2))"
    assert statement.output_schema == "(a STRING)"
    assert statement.comment == "the model"
    assert statement.options == (("provider", "openai"), ("model", "m"))


@pytest.mark.parametrize(
    ("sql", "action"),
    [
        ("DROP MODEL IF EXISTS gpt", "drop"),
        ("DROP TEMPORARY MODEL gpt", "drop"),
        ("SHOW MODELS", "show"),
        ("show create model gpt", "show-create"),
        ("DESCRIBE MODEL gpt", "describe"),
        ("DESC MODEL gpt", "describe"),
    ],
)
def test_other_model_statements_parse(sql: str, action: str) -> None:
    statement = parse_model_statement(sql)
    assert isinstance(statement, ModelStatement) and statement.action == action


@pytest.mark.parametrize(
    "sql", ["CREATE TABLE t (a INT)", "SHOW TABLES", "DROP VIEW v", "SELECT 1", "CREATE TOOL t"]
)
def test_other_statements_are_not_model_statements(sql: str) -> None:
    assert parse_model_statement(sql) is None


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("CREATE MODEL gpt", "WITH"),
        ("CREATE MODEL gpt INPUT (q STRING WITH ('provider' = 'x')", r"'\)' closing the INPUT"),
        ("SHOW MODELS LIKE 'g%'", "the end of the statement after SHOW MODELS"),
    ],
)
def test_a_malformed_model_statement_names_what_was_expected(sql: str, expected: str) -> None:
    with pytest.raises(SqlParseError, match=expected):
        parse_model_statement(sql)


def test_models_resolve_in_the_current_database_and_feed_agents() -> None:
    models = catalog()
    run(
        models,
        "CREATE MODEL gpt WITH ('provider' = 'openai', 'endpoint' = 'http://127.0.0.1:1/v1', "
        "'model' = 'fake', 'api-key' = 'sk-never-shown')",
    )
    ident = models.resolve(Name(("gpt",)))
    assert ident == ObjectIdentifier("default_catalog", "default_database", "gpt")
    assert models.resolve(Name(("default_database", "gpt"))) == ident
    assert models.options(ident)["model"] == "fake"
    assert run(models, "SHOW MODELS").rows == [("gpt",)]
    # Another database (USE db): not listed there, not found by its short name.
    models.current["value"] = ("default_catalog", "other")  # type: ignore[attr-defined]
    assert run(models, "SHOW MODELS").rows == []
    with pytest.raises(CatalogError, match=r"unknown model gpt \(models: none\); create it"):
        models.resolve(Name(("gpt",)))


def test_secrets_stay_out_of_show_create_and_describe() -> None:
    models = catalog()
    run(
        models,
        "CREATE TEMPORARY MODEL gpt INPUT (q STRING) OUTPUT (a STRING) COMMENT 'it''s ours' "
        "WITH ('provider' = 'openai', 'model' = 'fake', 'api-key' = 'sk-never-shown')",
    )
    text = run(models, "SHOW CREATE MODEL gpt").to_text()
    assert text.startswith(
        "CREATE TEMPORARY MODEL `default_catalog`.`default_database`.`gpt`\n"
        "INPUT (q STRING)\nOUTPUT (a STRING)\nCOMMENT 'it''s ours'\nWITH ("
    )
    assert "sk-never-shown" not in text and "'api-key' = '***'" in text
    rows = dict(run(models, "DESC MODEL gpt").rows)
    assert rows["option api-key"] == "***" and rows["temporary"] == "true"


def test_create_twice_drop_and_if_clauses() -> None:
    models = catalog()
    create = "CREATE MODEL m WITH ('provider' = 'scripted', 'respond' = 'x:y')"
    run(models, create)
    with pytest.raises(CatalogError, match="already exists"):
        run(models, create)
    run(models, create.replace("MODEL m", "MODEL IF NOT EXISTS m"))
    run(models, "DROP MODEL m")
    with pytest.raises(CatalogError, match="unknown model m"):
        run(models, "DROP MODEL m")
    run(models, "DROP MODEL IF EXISTS m")


def test_options_are_checked_when_an_agent_uses_the_model_as_with_flinks_models() -> None:
    """Flink's CREATE MODEL (2.1+) takes any options; so does ours: a script fails at the
    same statement (CREATE AGENT, naming the model and the option) on every version."""
    models = catalog()
    run(models, "CREATE MODEL m WITH ('provider' = 'openai', 'temprature' = '1')")
    options = models.options(models.resolve(Name(("m",))))
    with pytest.raises(ConfigurationError, match="unknown option 'temprature'"):
        model_resources("default_catalog.default_database.m", options)


def test_ml_predict_is_refused_with_what_to_use_instead() -> None:
    (statement,) = split_statements(
        "SELECT * FROM ML_PREDICT(TABLE questions, MODEL gpt, DESCRIPTOR(q))"
    )
    error = ml_predict_error(statement, "2.0.2")
    assert isinstance(error, SqlError)
    assert "ML_PREDICT needs Flink 2.1 or later (this is Flink 2.0.2" in str(error)
    assert "agent_run(" in str(error) and error.column == 15
    (plain,) = split_statements("SELECT 'ML_PREDICT' FROM t")
    assert ml_predict_error(plain, "2.0.2") is None
