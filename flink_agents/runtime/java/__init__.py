"""Java resources for Python agents: the pemja bridge and what the Flink host needs from it.

For the Flink host (``flink_agents.runtime.flink``):

- :func:`job_jars` (or :func:`bridge_jars`): the jars to add with ``env.add_jars``.
- :func:`check_java_resources`: call at ``apply`` time with the execution mode; raises a
  :class:`~flink_agents.errors.PlanValidationError` when the plan has Java resources and the
  mode cannot run them (anything but thread mode), or (given the py4j gateway) when a Java
  class cannot be found in the job's jars.
- :func:`init_java_bridge`: call in the function's ``open()`` (on the operator thread).

User-facing wrappers live in the API: ``flink_agents.api.tools.java_tool.JavaTool``,
``flink_agents.api.chat_models.java_chat_model.JavaChatModelConnection`` /
``JavaChatModelSetup`` and
``flink_agents.api.embedding_models.java_embedding_model.JavaEmbeddingModelConnection`` /
``JavaEmbeddingModelSetup``, and
``flink_agents.api.vector_stores.java_vector_store.JavaVectorStore`` /
``JavaCollectionManageableVectorStore``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from flink_agents.api._java import JAVA_MARKER
from flink_agents.api.core_options import AgentConfiguration, AgentExecutionOptions
from flink_agents.errors import PlanValidationError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.java.bridge import (
    MODE_HINT,
    JavaBridge,
    JavaHandle,
    get_bridge,
    in_jvm,
    init_java_bridge,
)

__all__ = [
    "MODE_HINT",
    "JavaBridge",
    "JavaHandle",
    "bridge_jars",
    "check_java_resources",
    "get_bridge",
    "in_jvm",
    "init_java_bridge",
    "java_resources",
    "job_jars",
]

_LIB = Path(__file__).resolve().parent / "lib"
_KINDS = {
    "tool": "tool",
    "chat_model_connection": "chat_model",
    "embedding_model_connection": "embedding_model",
    "vector_store": "vector_store",
}


def bridge_jars() -> list[str]:
    """Absolute paths of the bridge jar(s) shipped in this package (empty if not built).

    Building the package compiles it in (``setup.py`` runs ``java-bridge/build.py``);
    ``make java`` rebuilds it in a checkout.
    """
    return sorted(str(p) for p in _LIB.glob("*.jar"))


def job_jars(config: AgentConfiguration | dict[str, Any] | None = None) -> list[str]:
    """The jars a Flink job of agents needs: the bridge jar(s) plus ``java.jars`` from config.

    Args:
        config: the agents configuration; its ``java.jars`` option lists user jars (paths).

    Returns:
        Absolute paths, bridge jars first, without duplicates.

    Raises:
        PlanValidationError: a configured jar does not exist.
    """
    if not isinstance(config, AgentConfiguration):
        config = AgentConfiguration(config)
    jars = bridge_jars()
    missing = []
    for jar in config.get(AgentExecutionOptions.JAVA_JARS) or []:
        path = Path(str(jar).removeprefix("file://")).expanduser().resolve()
        if not path.is_file():
            missing.append(f"java.jars entry {jar!r} is not a file")
        elif str(path) not in jars:
            jars.append(str(path))
    if missing:
        raise PlanValidationError(missing)
    return jars


def java_resources(plan: AgentPlan) -> list[tuple[str, str, str]]:
    """The Java resources of a plan as ``(type, name, java_clazz)``."""
    found = []
    for rtype, providers in plan.resource_providers.items():
        for name, provider in providers.items():
            try:
                cls = provider.resource_class()
            except (ImportError, AttributeError, ValueError):
                continue  # the plan compiler reports unimportable classes
            if getattr(cls, JAVA_MARKER, False):
                args = provider.arguments or provider.serialized or {}
                found.append((rtype.value, name, str(args.get("java_clazz", "?"))))
    return found


def check_java_resources(
    plan: AgentPlan,
    execution_mode: str | None,
    *,
    jars: Iterable[str] | None = None,
    gateway: Any = None,
) -> None:
    """Fail early when the plan's Java resources cannot run.

    Args:
        plan: the compiled plan.
        execution_mode: ``"thread"`` or ``"process"`` (``python.execution-mode``) for a Flink
            job; None or ``"local"`` for the local environment.
        jars: the job's jars; with ``gateway``, each Java class is looked up in them.
        gateway: PyFlink's py4j gateway (``pyflink.java_gateway.get_gateway()``) to check
            that the classes exist before the job is submitted. Optional.

    Raises:
        PlanValidationError: listing every Java resource that cannot run, with the fix.
    """
    found = java_resources(plan)
    if not found:
        return
    mode = (execution_mode or "local").lower()
    if mode != "thread":
        where = "the local environment" if mode == "local" else f"python.execution-mode={mode}"
        raise PlanValidationError(
            [
                f"{rtype} resource {name!r} is a Java resource ({clazz}) and cannot run in "
                f"{where}. {MODE_HINT}"
                for rtype, name, clazz in found
            ]
        )
    if gateway is not None:
        problems = _missing_classes(gateway, found, list(jars or []))
        if problems:
            raise PlanValidationError(problems)


def _missing_classes(gateway: Any, found: list[tuple[str, str, str]], jars: list[str]) -> list[str]:
    """Look each Java class up in ``jars`` through py4j (client side, nothing initialized)."""
    jvm = gateway.jvm
    urls = gateway.new_array(jvm.java.net.URL, len(jars))
    for i, jar in enumerate(jars):
        urls[i] = jvm.java.io.File(jar.removeprefix("file://")).toURI().toURL()
    loader = jvm.java.net.URLClassLoader(urls, jvm.java.lang.ClassLoader.getSystemClassLoader())
    problems = []
    try:
        for rtype, name, clazz in found:
            resource = clazz.replace(".", "/") + ".class"
            if loader.getResource(resource) is None:
                problems.append(
                    f"{rtype} resource {name!r}: Java class {clazz} is not in the job's jars "
                    f"({', '.join(Path(j).name for j in jars) or 'none'}); add its jar with the "
                    "'java.jars' option or env.add_jars"
                )
    finally:
        loader.close()
    return problems
