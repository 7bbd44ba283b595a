"""What a resource can reach while it runs: the other resources of its agent.

``Resource.resource_context`` gives one (as in Apache Flink Agents); a resource made by hand
may be given one (``resource_context=``), e.g. a test double with ``get_resource``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flink_agents.api.resource import ResourceType


class ResourceContext(ABC):
    """The resources a resource may look up (those declared for the same agent)."""

    @abstractmethod
    def get_resource(self, name: str, resource_type: ResourceType) -> Any:
        """The resource ``name`` of ``resource_type``, created on first use."""
