"""What the SQL layer needs of Flink's catalogs, read through a table environment.

- Functions: Flink's ``FunctionCatalog`` (``planner.getFlinkContext().getFunctionCatalog()``,
  public methods) resolves a name as SQL would (temporary system functions, temporary
  catalog functions, catalog functions) and gives the function definition; a Python scalar
  function's definition is a ``PythonScalarFunction`` with the serialized Python function.
- Models: the ``CatalogManager`` resolves model identifiers (temporary models first) and
  holds their options; where Flink's SQL has no models (1.20, 2.0) the session's own
  :class:`~flink_agents.sql.model_catalog.ModelCatalog` does.
- Configuration: ``SET`` / ``RESET`` change the table configuration (PyFlink's
  ``execute_sql`` refuses them).
"""

from __future__ import annotations

from typing import Any

from pyflink.java_gateway import get_gateway

from flink_agents.errors import CatalogError
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.sql.catalog import ObjectIdentifier
from flink_agents.sql.model_catalog import ModelCatalog
from flink_agents.sql.statements import Name

_PYTHON_SCALAR = "org.apache.flink.table.functions.python.PythonScalarFunction"


def _listed(names: list[str]) -> str:
    return ", ".join(sorted(names)) if names else "none"


class FlinkHost:
    """Flink's side of the statement layer (see :class:`flink_agents.sql.executor.Host`).

    Args:
        t_env: the PyFlink table environment.
    """

    def __init__(self, t_env: Any) -> None:
        self.t_env = t_env
        self._set_keys: dict[str, str] = {}
        #: The models of the session where Flink's SQL has none (1.20, 2.0); None where
        #: Flink keeps them (2.1 and later).
        self.own_models: ModelCatalog | None = (
            None
            if internals.sql_has_models()
            else ModelCatalog(self.current, internals.pyflink_version())
        )

    # -- names ---------------------------------------------------------------------------------
    def current(self) -> tuple[str, str]:
        """The current catalog and database (``USE ...`` changes them)."""
        return self.t_env.get_current_catalog(), self.t_env.get_current_database()

    def _unresolved(self, parts: tuple[str, ...] | list[str]) -> Any:
        jvm = get_gateway().jvm
        return jvm.org.apache.flink.table.catalog.UnresolvedIdentifier.of(list(parts))

    def _catalog_manager(self) -> Any:
        return internals.catalog_manager(self.t_env)

    # -- functions -----------------------------------------------------------------------------
    def _function_catalog(self) -> Any:
        return internals.function_catalog(self.t_env)

    def _lookup_function(self, parts: tuple[str, ...] | list[str]) -> Any:
        try:
            found = self._function_catalog().lookupFunction(self._unresolved(parts))
        except Exception as exc:  # noqa: BLE001 - py4j reports Java errors generically
            raise CatalogError(
                f"cannot look up function {'.'.join(parts)}: {str(exc).splitlines()[0]}"
            ) from None
        return found.get() if found.isPresent() else None

    def resolve_function(self, name: Name) -> str:
        """The function's identifier (``catalog.db.f``, or ``f`` for a temporary system
        function).

        Raises:
            CatalogError: no such function (the message lists the user functions).
        """
        found = self._lookup_function(name.parts)
        if found is None:
            raise CatalogError(
                f"unknown function {name} (functions: "
                f"{_listed(list(self.t_env.list_user_defined_functions()))}); register a "
                "Python function with CREATE FUNCTION ... LANGUAGE PYTHON or "
                "create_temporary_function",
                line=name.line or None,
                column=name.column or None,
            )
        ident = found.getIdentifier()  # Optional<FunctionIdentifier>; empty: inline
        if not ident.isPresent():
            raise CatalogError(f"function {name} has no identifier to refer to it by")
        ident = ident.get()
        if ident.getIdentifier().isPresent():
            oi = ident.getIdentifier().get()
            return f"{oi.getCatalogName()}.{oi.getDatabaseName()}.{oi.getObjectName()}"
        return str(ident.getSimpleName().get())

    def python_function(self, function: str) -> bytes:
        """The serialized Python function of ``function`` (as PyFlink ships it).

        Raises:
            CatalogError: unknown, or not a Python scalar function.
        """
        parts = function.split(".")
        found = self._lookup_function(parts)
        if found is None:
            raise CatalogError(
                f"function {function} no longer exists (functions: "
                f"{_listed(list(self.t_env.list_user_defined_functions()))})"
            )
        definition = found.getDefinition()
        class_name = definition.getClass().getName()
        if class_name != _PYTHON_SCALAR:
            raise CatalogError(
                f"function {function} is not a Python scalar function ({class_name}); a tool "
                "calls a Python function registered with LANGUAGE PYTHON or "
                "create_temporary_function"
            )
        return bytes(definition.getSerializedPythonFunction())

    # -- models --------------------------------------------------------------------------------
    def _models(self) -> list[str]:
        names = list(self.t_env.list_models())
        if hasattr(self.t_env, "list_temporary_models"):
            names += list(self.t_env.list_temporary_models())
        return sorted(set(names))

    def resolve_model(self, name: Name) -> ObjectIdentifier:
        """The model's identifier.

        Raises:
            CatalogError: no such model (the message lists the models).
        """
        if self.own_models is not None:
            return self.own_models.resolve(name)
        manager = self._catalog_manager()
        try:
            oi = manager.qualifyIdentifier(self._unresolved(name.parts))
            present = manager.getModel(oi).isPresent()
        except Exception as exc:  # noqa: BLE001 - an unknown catalog, a bad identifier
            raise CatalogError(f"cannot look up model {name}: {str(exc).splitlines()[0]}") from None
        if not present:
            raise CatalogError(
                f"unknown model {name} (models: {_listed(self._models())}); create it with "
                "CREATE MODEL ... WITH ('provider' = ...)",
                line=name.line or None,
                column=name.column or None,
            )
        return ObjectIdentifier(oi.getCatalogName(), oi.getDatabaseName(), oi.getObjectName())

    def model_options(self, model: ObjectIdentifier) -> dict[str, str]:
        """The options of ``model`` in Flink's catalog.

        Raises:
            CatalogError: the model no longer exists.
        """
        if self.own_models is not None:
            return self.own_models.options(model)
        manager = self._catalog_manager()
        oi = get_gateway().jvm.org.apache.flink.table.catalog.ObjectIdentifier.of(
            model.catalog, model.database, model.name
        )
        found = manager.getModel(oi)
        if not found.isPresent():
            raise CatalogError(
                f"model {model} no longer exists (models: {_listed(self._models())})"
            )
        return {
            str(k): str(v) for k, v in dict(found.get().getResolvedModel().getOptions()).items()
        }

    # -- tables --------------------------------------------------------------------------------
    def table(self, name: Name) -> Any:
        """The table or view ``name`` as a PyFlink ``Table``.

        Raises:
            CatalogError: no such table (the message lists tables and views).
        """
        try:
            return self.t_env.from_path(".".join(f"`{p}`" for p in name.parts))
        except Exception as exc:  # noqa: BLE001 - py4j: ValidationException
            text = str(exc)
            if "not found" not in text and "does not exist" not in text:
                raise CatalogError(
                    f"cannot read table {name}: {text.splitlines()[0]}",
                    line=name.line or None,
                    column=name.column or None,
                ) from None
            names = sorted(set(self.t_env.list_tables()) | set(self.t_env.list_views()))
            raise CatalogError(
                f"unknown table {name} (tables and views: {_listed(names)})",
                line=name.line or None,
                column=name.column or None,
            ) from None

    # -- configuration -------------------------------------------------------------------------
    def set_config(self, key: str | None, value: str | None) -> list[tuple[str, str]]:
        """``SET 'key' = 'value'`` on the table configuration; ``SET`` lists the keys set."""
        if key is None:
            return sorted(self._set_keys.items())
        self.t_env.get_config().set(key, value)
        self._set_keys[key] = str(value)
        return []

    def reset_config(self, key: str | None) -> None:
        """``RESET 'key'`` or ``RESET`` (every key set with ``SET``)."""
        keys = list(self._set_keys) if key is None else [key]
        configuration = self.t_env.get_config().get_configuration()
        for k in keys:
            configuration.remove_config(k)
            self._set_keys.pop(k, None)

    def config_value(self, key: str) -> str | None:
        """The table configuration's value of ``key`` (None when unset)."""
        value = self.t_env.get_config().get(key, None)
        return None if value is None else str(value)
