"""Models kept by the SQL layer itself, where Flink has no ``CREATE MODEL`` (1.20 and 2.0).

Flink 2.1 added models to its catalogs (``CREATE MODEL``, ``SHOW MODELS``...). On Flink 1.20
these statements are "Unsupported query", and on 2.0 the catalog has models but its SQL
still refuses the statements. There the statement layer runs them itself, against this
catalog, so that ``CREATE AGENT ... USING MODEL m`` works on every supported version:

- ``CREATE [TEMPORARY] MODEL [IF NOT EXISTS] name [INPUT (...)] [OUTPUT (...)] [COMMENT '...']
  WITH ('provider' = ..., ...)``: kept as written; like Flink's own, the options are
  checked when an agent uses the model (``CREATE AGENT ... USING MODEL``, which names the
  model and the option), so a script fails at the same statement on every version;
- ``DROP [TEMPORARY] MODEL [IF EXISTS] name``, ``SHOW MODELS``, ``SHOW CREATE MODEL name``,
  ``DESC MODEL name``.

Models live as long as the session (like models in Flink's default in-memory catalog);
``TEMPORARY`` is accepted and shown. Names resolve against the current catalog and database.
``ML_PREDICT`` needs Flink's own models: on these versions a query using it is refused with
a message saying to use ``agent_run`` (see :func:`ml_predict_error`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flink_agents.errors import CatalogError, SqlError
from flink_agents.sql.catalog import ObjectIdentifier
from flink_agents.sql.lexer import Statement
from flink_agents.sql.options import masked
from flink_agents.sql.result import SqlResult
from flink_agents.sql.statements import CreateModel, ModelStatement, Name, SqlStatement


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True)
class OwnModel:
    """A model of :class:`ModelCatalog` (the parts of its ``CREATE MODEL``)."""

    options: dict[str, str]
    temporary: bool = False
    comment: str | None = None
    input_schema: str | None = None
    output_schema: str | None = None


class ModelCatalog:
    """The models of a session on a Flink without models of its own.

    Args:
        current: the current catalog and database (``USE`` changes them).
        flink_version: named in messages (e.g. ``1.20.5``).
    """

    def __init__(self, current: Callable[[], tuple[str, str]], flink_version: str) -> None:
        self._current = current
        self.flink_version = flink_version
        self._models: dict[ObjectIdentifier, OwnModel] = {}

    # -- names ---------------------------------------------------------------------------------
    def identifier(self, name: Name) -> ObjectIdentifier:
        """``name`` completed with the current catalog and database."""
        catalog, database = self._current()
        parts = name.parts
        if len(parts) == 3:
            return ObjectIdentifier(*parts)
        if len(parts) == 2:
            return ObjectIdentifier(catalog, parts[0], parts[1])
        return ObjectIdentifier(catalog, database, parts[0])

    def names(self) -> list[str]:
        """The models of the current database, sorted."""
        catalog, database = self._current()
        return sorted(
            i.name for i in self._models if (i.catalog, i.database) == (catalog, database)
        )

    def resolve(self, name: Name) -> ObjectIdentifier:
        """The model's identifier.

        Raises:
            CatalogError: no such model (the message lists the models).
        """
        ident = self.identifier(name)
        if ident not in self._models:
            listed = ", ".join(self.names()) or "none"
            raise CatalogError(
                f"unknown model {name} (models: {listed}); create it with CREATE MODEL "
                f"{name} WITH ('provider' = ...) (on Flink {self.flink_version} this package "
                "keeps the models itself)",
                line=name.line or None,
                column=name.column or None,
            )
        return ident

    def options(self, model: ObjectIdentifier) -> dict[str, str]:
        """The options of ``model``.

        Raises:
            CatalogError: it no longer exists.
        """
        found = self._models.get(model)
        if found is None:
            raise CatalogError(
                f"model {model} no longer exists (models: {', '.join(self.names()) or 'none'})"
            )
        return dict(found.options)

    # -- statements ----------------------------------------------------------------------------
    def execute(self, statement: SqlStatement) -> SqlResult:
        """Run a model statement.

        Raises:
            CatalogError: an existing (CREATE) or unknown (DROP, SHOW CREATE, DESC) model.
        """
        if isinstance(statement, CreateModel):
            return self._create(statement)
        assert isinstance(statement, ModelStatement)
        if statement.action == "show":
            return SqlResult(["model name"], [(n,) for n in self.names()])
        assert statement.name is not None
        if statement.action == "drop":
            ident = self.identifier(statement.name)
            if ident not in self._models:
                if statement.if_exists:
                    return SqlResult()
                self.resolve(statement.name)
            del self._models[ident]
            return SqlResult()
        ident = self.resolve(statement.name)
        model = self._models[ident]
        if statement.action == "show-create":
            return SqlResult(["result"], [(self.show_create(ident, model),)], raw=True)
        rows = [("name", str(ident)), ("temporary", str(model.temporary).lower())]
        if model.comment:
            rows.append(("comment", model.comment))
        rows += [(f"option {k}", v) for k, v in sorted(masked(model.options).items())]
        return SqlResult(["name", "value"], rows)

    def _create(self, statement: CreateModel) -> SqlResult:
        ident = self.identifier(statement.name)
        if ident in self._models:
            if statement.if_not_exists:
                return SqlResult()
            raise CatalogError(
                f"model {ident} already exists (DROP MODEL it first, or CREATE MODEL IF NOT "
                "EXISTS)",
                line=statement.name.line or None,
                column=statement.name.column or None,
            )
        self._models[ident] = OwnModel(
            dict(statement.options),
            statement.temporary,
            statement.comment,
            statement.input_schema,
            statement.output_schema,
        )
        return SqlResult()

    @staticmethod
    def show_create(ident: ObjectIdentifier, model: OwnModel) -> str:
        """The model's ``CREATE MODEL`` statement (secret options as ``****``)."""
        temporary = "TEMPORARY " if model.temporary else ""
        lines = [f"CREATE {temporary}MODEL {ident.as_sql()}"]
        if model.input_schema:
            lines.append(f"INPUT {model.input_schema}")
        if model.output_schema:
            lines.append(f"OUTPUT {model.output_schema}")
        if model.comment:
            lines.append(f"COMMENT {_sql_string(model.comment)}")
        items = [f"  {_sql_string(k)} = {_sql_string(v)}" for k, v in masked(model.options).items()]
        lines += ["WITH (", ",\n".join(items), ")"]
        return "\n".join(lines)


def ml_predict_error(statement: Statement, flink_version: str) -> SqlError | None:
    """The error for a statement calling ``ML_PREDICT`` on a Flink without models, else
    None."""
    for token in statement.tokens:
        if token.is_word("ML_PREDICT"):
            return SqlError(
                f"ML_PREDICT needs Flink 2.1 or later (this is Flink {flink_version}, whose SQL "
                "has no models); call the model through an agent instead: CREATE AGENT a USING "
                "MODEL m USING PROMPT '...', then agent_run(INPUT => TABLE t, AGENT => AGENT a, "
                "COL => DESCRIPTOR(c))",
                line=token.line,
                column=token.column,
            )
    return None
