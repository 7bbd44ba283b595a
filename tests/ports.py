"""Moved to :mod:`flink_agents.testing.ports` (public, part of the testing kit).

Only a re-export, kept while branches started before the move still import
``tests.ports``; new code imports ``flink_agents.testing.ports``.
"""

from flink_agents.testing.ports import free_port, held_port

__all__ = ["free_port", "held_port"]
