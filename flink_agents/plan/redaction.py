"""Secrets out of the plan JSON: what the secret rule finds is moved to a side table.

The rule is ``flink_agents/secrets.py``: a string under a secret name, a ``SecretStr``
anywhere, a credential value (``Bearer ...``) and a string holding URL credentials or a
secret query parameter. Each is replaced by a marker ``{"__flink_agents_secret__": path}``
(with ``"kind": "SecretStr"`` for a ``SecretStr``, and ``"shown"``, the string with its
secrets masked, where there is something left to show); the value goes into the plan's
side table (``AgentPlan.secrets``: ``path -> text``), which the hosts carry next to the
JSON. :func:`restore_secrets` puts the values back on the task side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flink_agents.secrets import is_secret_name, is_secret_value, mask, secret_str_value

SECRET_MARKER = "__flink_agents_secret__"
_MARKER_KEYS = frozenset({SECRET_MARKER, "kind", "shown"})
_SECRET_STR = "SecretStr"


def redact(value: Any, where: str, secrets: dict[str, Any]) -> Any:
    """``value`` (JSON-like; ``SecretStr`` allowed anywhere) with every secret replaced by a
    marker; the secrets go into ``secrets`` under their path (``where/key/...``)."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            path = f"{where}/{key}"
            if isinstance(item, str) and item and is_secret_name(key):
                secrets[path] = item
                out[key] = {SECRET_MARKER: path}
            else:
                out[key] = redact(item, path, secrets)
        return out
    if isinstance(value, (list, tuple)):
        return [redact(item, f"{where}/{i}", secrets) for i, item in enumerate(value)]
    if isinstance(value, str):
        if is_secret_value(value):
            secrets[where] = value
            return {SECRET_MARKER: where}
        shown = mask(value)
        if shown != value:  # URL credentials, a secret query parameter, ``token=...``
            secrets[where] = value
            return {SECRET_MARKER: where, "shown": shown}
        return value
    text = secret_str_value(value)
    if text is not None:
        secrets[where] = text
        return {SECRET_MARKER: where, "kind": _SECRET_STR}
    return value


def is_marker(value: Any) -> bool:
    """Whether ``value`` is a secret's marker."""
    return isinstance(value, dict) and SECRET_MARKER in value and set(value) <= _MARKER_KEYS


def restore_secrets(value: Any, secrets: Mapping[str, Any], *, secret_str: bool = True) -> Any:
    """Inverse of :func:`redact`: markers replaced by the secret values (None for a secret
    the table lacks: a plan read back from JSON without its secrets).

    Args:
        value: the redacted value.
        secrets: the side table.
        secret_str: give a ``SecretStr`` back as a ``SecretStr`` (configuration); False:
            as its text (resource arguments: a field typed ``SecretStr`` takes text, a
            header typed ``str`` takes nothing else).
    """
    if isinstance(value, dict):
        if is_marker(value):
            text = secrets.get(value[SECRET_MARKER])
            if text is not None and secret_str and value.get("kind") == _SECRET_STR:
                from pydantic import SecretStr

                return SecretStr(text)
            return text
        return {k: restore_secrets(v, secrets, secret_str=secret_str) for k, v in value.items()}
    if isinstance(value, list):
        return [restore_secrets(v, secrets, secret_str=secret_str) for v in value]
    return value


def has_secret_str(value: Any) -> bool:
    """Whether a ``SecretStr`` is anywhere inside ``value`` (Python values, e.g. a model's
    ``model_dump()``)."""
    if isinstance(value, Mapping):
        return any(has_secret_str(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_secret_str(v) for v in value)
    return secret_str_value(value) is not None
