"""Reading the ``agent:`` section of a YAML configuration file, with line numbers.

Private: used by :meth:`AgentConfiguration.load_from_file
<flink_agents.api.core_options.AgentConfiguration.load_from_file>`. The YAML is composed into
nodes first (PyYAML's safe loader) so that every key keeps the line it came from, and every
error names the file and the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from flink_agents.errors import ConfigurationError

#: The top-level key that holds the agent options in Flink's config.yaml.
SECTION = "agent"


def read_agent_section(path: Path) -> Iterator[tuple[str, Any, str]]:
    """``(flattened key, value, "file:line")`` for every option under ``agent:``.

    Raises:
        ConfigurationError: the file cannot be read or is not YAML, or ``agent:`` is not a
            mapping of option names.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read configuration file {path}: {exc.strerror or exc}"
        ) from None
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return
        if not isinstance(root, yaml.MappingNode):
            raise ConfigurationError(
                f"{path}:{root.start_mark.line + 1}: the file must be a YAML mapping "
                f"(key: value lines), got a {root.tag.rsplit(':', 1)[-1]}"
            )
        for key_node, value_node in root.value:
            if loader.construct_object(key_node) != SECTION:
                continue
            if isinstance(value_node, yaml.ScalarNode) and value_node.tag.endswith(":null"):
                return
            if not isinstance(value_node, yaml.MappingNode):
                raise ConfigurationError(
                    f"{path}:{value_node.start_mark.line + 1}: '{SECTION}:' must hold option "
                    "names with values (a mapping)"
                )
            yield from _flatten(loader, value_node, "", path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigurationError(f"{where}: not valid YAML: {problem}") from None
    finally:
        loader.dispose()


def _flatten(
    loader: yaml.SafeLoader, node: yaml.MappingNode, prefix: str, path: Path
) -> Iterator[tuple[str, Any, str]]:
    for key_node, value_node in node.value:
        where = f"{path}:{key_node.start_mark.line + 1}"
        key = loader.construct_object(key_node)
        if not isinstance(key, str) or not key:
            raise ConfigurationError(f"{where}: option names must be text, got {key!r}")
        full = f"{prefix}{key}"
        if isinstance(value_node, yaml.MappingNode):
            yield from _flatten(loader, value_node, f"{full}.", path)
        else:
            yield full, loader.construct_object(value_node, deep=True), where
