"""Optional dependencies: import a provider's SDK, or fail naming the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from flink_agents.errors import MissingExtraError

#: The distribution's name on the package index (for the install hint).
DISTRIBUTION = "flink-agents-py"


def require(module: str, *, extra: str, user: str) -> ModuleType:
    """Import ``module`` (e.g. ``"boto3"``) or raise :class:`MissingExtraError`.

    Args:
        module: the module to import.
        extra: the extra of this package that installs it (``"bedrock"``).
        user: what needs it (a class name), for the message.

    Raises:
        MissingExtraError: the module is not installed; the message names the extra.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        missing = getattr(exc, "name", None) or top
        raise MissingExtraError(
            f"{user} needs the {top!r} package ({missing!r} is not installed): "
            f"pip install '{DISTRIBUTION}[{extra}]'",
            extra=extra,
        ) from None
