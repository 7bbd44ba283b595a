"""What a resource can reach while it runs: the other resources of its agent, and its
skills.

``Resource.resource_context`` gives one (as in Apache Flink Agents); a resource made by hand
may be given one (``resource_context=``), e.g. a test double with ``get_resource``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flink_agents.api.resource import ResourceType


class ResourceContext(ABC):
    """The resources a resource may look up (those declared for the same agent), and the
    agent's skills (as in Apache Flink Agents; they are found through ``get_resource``, so
    an implementation need only provide that)."""

    @abstractmethod
    def get_resource(self, name: str, resource_type: ResourceType) -> Any:
        """The resource ``name`` of ``resource_type``, created on first use."""

    def _skills(self) -> Any:
        from flink_agents.api.resource import ResourceType
        from flink_agents.api.skills import SKILLS_CONFIG
        from flink_agents.errors import ResourceError

        try:
            return self.get_resource(SKILLS_CONFIG, ResourceType.SKILLS)
        except ResourceError:
            return None  # the agent declares no skills

    def generate_available_skills_prompt(self, *skill_names: str) -> str:
        """The discovery prompt of the named skills: their names and descriptions, and how
        to load one. Empty when the agent declares no skills.

        Raises:
            ResourceError: a name is not one of the agent's skills (the message lists them).
        """
        library = self._skills()
        return "" if library is None else str(library.generate_discovery_prompt(*skill_names))

    def get_skill_dirs(self, *skill_names: str) -> list[str]:
        """Absolute directories of the named skills (all skills when none is named); empty
        when the agent declares no skills.

        Raises:
            ResourceError: a name is not one of the agent's skills.
        """
        library = self._skills()
        return [] if library is None else list(library.get_skill_dirs(*skill_names))
