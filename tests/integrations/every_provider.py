"""Every chat provider the integration tests describe (``tests/integrations/agents.py``), as
pytest parameters: the cloud providers too where they are described, skipped when their SDK
is not installed."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from tests.integrations import agents


def needs(module: str | None) -> list[Any]:
    """The marks of a parameter that needs ``module`` (skipped when it is not installed)."""
    if module is None:
        return []
    try:
        importlib.import_module(module)
    except ImportError:
        return [pytest.mark.skip(reason=f"{module} is not installed (see pyproject extras)")]
    return []


def every_provider() -> list[Any]:
    """``pytest.param`` of each provider, with its name as id."""
    described = getattr(agents, "ALL_PROVIDERS", None) or {p.name: p for p in agents.PROVIDERS}
    return [
        pytest.param(p, id=name, marks=needs(getattr(p, "requires", None)))
        for name, p in described.items()
    ]


def secret_of(p: Any) -> str | None:
    """The secret a provider's connection arguments carry (its key), if any."""
    value = p.base("").get(getattr(p, "secret_field", "api_key"))
    return value if isinstance(value, str) else None
