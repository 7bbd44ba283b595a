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
- Java functions: a tool over one is described by the bridge's ``ScalarFunctionTool``
  (loaded through the function's class loader, which sees the session's jars).
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from pyflink.java_gateway import get_gateway

from flink_agents.errors import CatalogError
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.sql.catalog import ObjectIdentifier
from flink_agents.sql.model_catalog import ModelCatalog
from flink_agents.sql.statements import Name

_PYTHON_SCALAR = "org.apache.flink.table.functions.python.PythonScalarFunction"
_SCALAR_FUNCTION_TOOL = "org.flinkagents.bridge.ScalarFunctionTool"
_SCALAR_FUNCTION = "org.apache.flink.table.functions.ScalarFunction"
log = logging.getLogger("flink_agents.sql")


def _listed(names: list[str]) -> str:
    return ", ".join(sorted(names)) if names else "none"


def _root(exc: Exception) -> str:
    """The message of the innermost Java cause of a py4j error (the reason ``describe``
    gave), else the error's first line."""
    java = getattr(exc, "java_exception", None)
    try:
        while java is not None and java.getCause() is not None:
            java = java.getCause()
        if java is not None and java.getMessage():
            return str(java.getMessage())
    except Exception:  # noqa: BLE001 - the gateway may be gone; use the text
        pass
    found = re.findall(r"IllegalArgumentException: ([^\n]+)", str(exc))
    return found[-1] if found else str(exc).strip().splitlines()[0]


class FlinkHost:
    """Flink's side of the statement layer (see :class:`flink_agents.sql.executor.Host`).

    Args:
        t_env: the PyFlink table environment.
    """

    def __init__(self, t_env: Any, *, execution_mode: Any = None) -> None:
        self.t_env = t_env
        self._set_keys: dict[str, str] = {}
        #: () -> the agents environment's ``python.execution-mode`` (None: ``thread``).
        self._execution_mode = execution_mode
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

    def _definition(self, function: str) -> Any:
        found = self._lookup_function(function.split("."))
        if found is None:
            raise CatalogError(
                f"function {function} no longer exists (functions: "
                f"{_listed(list(self.t_env.list_user_defined_functions()))})"
            )
        return found.getDefinition()

    def function_language(self, function: str) -> str:
        """``python`` for a Python scalar function, ``java`` for any other definition
        (a Java function; :meth:`java_function` says whether it can be a tool)."""
        name = str(self._definition(function).getClass().getName())
        return "python" if name.startswith("org.apache.flink.table.functions.python.") else "java"

    def java_function(
        self, function: str, name: str, description: str
    ) -> tuple[str, dict[str, Any]]:
        """The class of a Java scalar function and its tool metadata, read from the class
        by the bridge's ``ScalarFunctionTool.describe`` (through the function's own class
        loader, which sees the jars of ``USING JAR`` / ``ADD JAR`` and the bridge jar).

        Raises:
            CatalogError: the function cannot be a tool (the reason from the class: not a
                scalar function, several ``eval`` methods, a parameter type a model cannot
                pass), or the bridge jar is not visible to Flink's SQL.
        """
        definition = self._definition(function)
        cls = definition.getClass()
        class_name = str(cls.getName())
        gateway = get_gateway()
        jvm = gateway.jvm
        if not jvm.java.lang.Class.forName(_SCALAR_FUNCTION).isInstance(definition):
            raise CatalogError(
                f"function {function} is not a Python or Java scalar function ({class_name}); "
                "a tool calls a scalar function (Python: LANGUAGE PYTHON or "
                "create_temporary_function; Java: a ScalarFunction class)"
            )
        tool_class = None
        for loader in self._loaders(cls):
            try:
                tool_class = loader.loadClass(_SCALAR_FUNCTION_TOOL)
                break
            except Exception:  # noqa: BLE001 - py4j: ClassNotFoundException
                continue
        if tool_class is None:
            raise CatalogError(
                f"function {function} ({class_name}) is a Java function, but the flink-agents "
                "bridge jar is not on Flink's SQL class path to call it: run SQL through "
                "AgentsExecutionEnvironment (it adds the jar), or ADD JAR "
                "flink_agents.runtime.java.bridge_jars()[0]"
            ) from None
        types = gateway.new_array(jvm.java.lang.Class, 4)
        types[0] = jvm.java.lang.Class.forName("java.lang.Class")
        for i in (1, 2, 3):
            types[i] = jvm.java.lang.Class.forName("java.lang.String")
        args = gateway.new_array(jvm.java.lang.Object, 4)
        args[0], args[1], args[2], args[3] = cls, name, description, function
        try:
            text = tool_class.getMethod("describe", types).invoke(None, args)
        except Exception as exc:  # noqa: BLE001 - py4j: InvocationTargetException
            raise CatalogError(f"function {function} cannot be a tool: {_root(exc)}") from None
        metadata = json.loads(str(text))
        if metadata.pop("unnamed", False):
            log.warning(
                "tool %s: the parameters of %s.eval have no names (the model sees arg0, "
                'arg1, ...); name them with @ArgumentHint(name = "...") or compile with '
                "javac -parameters",
                name,
                class_name,
            )
        return class_name, metadata

    def _loaders(self, cls: Any) -> list[Any]:
        """Class loaders that may see the bridge jar: the function's, then the session's
        (which holds the jars of ADD JAR)."""
        loaders = [cls.getClassLoader(), internals.user_class_loader(self.t_env)]
        return [loader for loader in loaders if loader is not None]

    def execution_mode(self) -> str:
        """``python.execution-mode`` of the job: the table configuration's (``SET``), else
        the agents environment's, else ``thread``."""
        mode = self.config_value("python.execution-mode")
        if not mode and self._execution_mode is not None:
            mode = self._execution_mode()
        return str(mode or "thread").lower()

    def python_function(self, function: str) -> bytes:
        """The serialized Python function of ``function`` (as PyFlink ships it).

        Raises:
            CatalogError: unknown, or not a Python scalar function.
        """
        definition = self._definition(function)
        class_name = definition.getClass().getName()
        if class_name != _PYTHON_SCALAR:
            raise CatalogError(
                f"function {function} is not a Python scalar function ({class_name}); a tool "
                "calls a scalar function (Python: LANGUAGE PYTHON or create_temporary_function; "
                "Java: a ScalarFunction class)"
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
