"""Resources created lazily from the plan, once per host instance (one per task slot)."""

from __future__ import annotations

import logging
import threading
from typing import Any

from flink_agents.api.resource import Resource, ResourcePlacement, ResourceType
from flink_agents.errors import FlinkAgentsError, ResourceError
from flink_agents.plan.agent_plan import AgentPlan, decode_argument, restore_secrets

# Registers the factory the Java resource wrappers create their Java objects with.
from flink_agents.runtime.java import bridge as _java_bridge  # noqa: F401

log = logging.getLogger(__name__)

#: Resource types that get a metric group of their own (``connection`` = name).
_METERED_TYPES = frozenset(
    {ResourceType.CHAT_MODEL_CONNECTION, ResourceType.EMBEDDING_MODEL_CONNECTION}
)


class ResourceCache:
    """Creates each resource on first ``get`` and keeps it until :meth:`close`.

    Thread safe: the Flink host calls it from worker threads. ``created`` counts
    instantiations per ``(type, name)`` so tests can check one-per-slot.
    """

    def __init__(self, plan: AgentPlan, *, metrics: Any = None) -> None:
        self._plan = plan
        self._lock = threading.RLock()
        self._cache: dict[tuple[ResourceType, str], Resource] = {}
        self.created: dict[tuple[ResourceType, str], int] = {}
        #: The agent metric group (a connection gets its own group in it: ``connection``).
        self.metrics = metrics
        self.parallelism = 1
        self.subtask_index = 0

    def place(self, *, parallelism: int, subtask_index: int) -> None:
        """Tell resources created from now on where they run (a host does it before the
        first run: the Flink host from the runtime context; 1 locally)."""
        self.parallelism = max(1, int(parallelism))
        self.subtask_index = int(subtask_index)

    def _placement(self, name: str, rtype: ResourceType) -> ResourcePlacement:
        group = None
        if self.metrics is not None and rtype in _METERED_TYPES:
            group = self.metrics.get_sub_group("connection", name)
        return ResourcePlacement(
            name=name,
            parallelism=self.parallelism,
            subtask_index=self.subtask_index,
            metric_group=group,
        )

    def get(self, name: str, rtype: ResourceType | str) -> Any:
        """The resource ``name`` of type ``rtype``."""
        if type(rtype) is not ResourceType:
            rtype = ResourceType(rtype)
        key = (rtype, name)
        found = self._cache.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._cache.get(key)
            if found is None:
                found = self._create(name, rtype)
                if isinstance(found, Resource):
                    found.set_placement(self._placement(name, rtype))
                self._cache[key] = found
                self.created[key] = self.created.get(key, 0) + 1
            return found

    def name_of(self, resource: Any) -> str | None:
        """The name ``resource`` (an instance this cache made) is declared under, if any."""
        for (_, name), found in list(self._cache.items()):
            if found is resource:
                return name
        return None

    def _create(self, name: str, rtype: ResourceType) -> Resource:
        provider = self._plan.get_resource_provider(name, rtype)
        if provider is None:
            if rtype is ResourceType.TOOL:
                if self._plan.get_resource_provider(name, ResourceType.AGENT) is not None:
                    return self.get(name, ResourceType.AGENT)  # a sub-agent offered as a tool
                tool = self._tool_from_mcp(name)
                if tool is not None:
                    return tool
            declared = sorted(self._plan.resource_providers.get(rtype, {}))
            raise ResourceError(
                f"no {rtype.value} resource named {name!r} (declared: {declared or 'none'}); "
                "declare it on the agent or with env.add_resource"
            )
        try:
            cls = provider.resource_class()
            secrets = self._plan.secrets
            if provider.serialized is not None:
                resource = cls.model_validate(
                    restore_secrets(provider.serialized, secrets, secret_str=False)
                )
                resource.get_resource = self.get
                return resource
            args = decode_argument(
                restore_secrets(provider.arguments or {}, secrets, secret_str=False)
            )
            return cls(**args, get_resource=self.get)
        except FlinkAgentsError:
            raise
        except Exception as exc:  # noqa: BLE001 - any constructor failure is a ResourceError
            raise ResourceError(
                f"cannot create {rtype.value} resource {name!r} ({provider.clazz}): "
                f"{type(exc).__name__}: {self._scrub(str(exc))}"
            ) from None

    def _scrub(self, text: str) -> str:
        """``text`` with every secret value of the plan masked (errors end up in logs)."""
        return self._plan.masker.mask(text)

    def _tool_from_mcp(self, name: str) -> Any:
        failures = []
        for server_name in self._plan.resource_providers.get(ResourceType.MCP_SERVER, {}):
            try:
                server = self.get(server_name, ResourceType.MCP_SERVER)
                get_tool = getattr(server, "get_tool", None)
                tool = get_tool(name) if get_tool is not None else None
            except KeyError:
                continue
            except FlinkAgentsError as exc:
                # One unreachable server must not hide the tools of the others.
                log.warning(
                    "MCP server %r failed while looking up tool %r: %s", server_name, name, exc
                )
                failures.append(f"MCP server {server_name!r}: {exc}")
                continue
            if tool is not None:
                return tool
        if failures:
            raise ResourceError(
                f"tool {name!r} not found; some MCP servers failed: {'; '.join(failures)}"
            )
        return None

    def close(self) -> None:
        """Close every created resource (errors are logged, not raised)."""
        with self._lock:
            resources, self._cache = list(self._cache.items()), {}
        for (rtype, name), resource in reversed(resources):
            try:
                resource.close()
            except Exception:
                log.exception("closing %s resource %r failed", rtype.value, name)
