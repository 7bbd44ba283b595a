"""The earlier home of the secret-name rule, kept for code that imports it.

The rule is :mod:`flink_agents.secrets` (``is_secret_name``, ``mask``, ``Masker``); this
module only forwards to it: ``SECRET_NAME.search(name)`` is truthy exactly when
``is_secret_name(name)`` is true.
"""

from __future__ import annotations

from flink_agents.secrets import SECRET_WORDS, is_secret_name

__all__ = ["SECRET_NAME", "SECRET_WORDS"]


class _SecretNameRule:
    """``search(name)``: True when ``name`` is a secret name, else None (as a pattern's
    ``search`` is truthy on a match)."""

    def search(self, name: str) -> bool | None:
        return True if is_secret_name(name) else None


#: The rule as an object with a pattern's ``search``.
SECRET_NAME = _SecretNameRule()
