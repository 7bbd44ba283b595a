"""Loads the testing kit's pytest plugin when the installed package does not register it.

A normal install registers ``flink_agents.testing.pytest_plugin`` through its ``pytest11``
entry point; an editable install made before that entry point existed does not, until it
is installed again (``make venv`` does when pyproject.toml changes).
"""

from importlib.metadata import entry_points

_PLUGIN = "flink_agents.testing.pytest_plugin"

pytest_plugins = (
    [] if any(ep.value == _PLUGIN for ep in entry_points(group="pytest11")) else [_PLUGIN]
)
