"""The ``bash`` tool of skills: allow-listed commands, no shell, a directory jail (see
:mod:`flink_agents.plan.tools.bash.bash_tool`)."""

from flink_agents.plan.tools.bash.bash_tool import BashTool
from flink_agents.plan.tools.bash.bash_validator import CommandRejected, parse_command

__all__ = ["BashTool", "CommandRejected", "parse_command"]
