"""Which configuration keys name a secret: the plan's redaction rule, in a module of its own.

The plan (``plan/agent_plan.py``) masks string values under such keys; the event log's
writer (``runtime/observability/event_log_writer.py``) looks for the same keys in payloads.
A module with no imports of ours, so the event log's writer process, which needs only this
rule, does not import the plan (and pydantic's models with it) at every start.
"""

from __future__ import annotations

import re

#: What a secret-like key ends with (then an optional ``s``), compared case-insensitively;
#: plain words, so the event log's scan can look for them as substrings (no pattern).
SECRET_WORDS = (
    "apikey",
    "api_key",
    "secret",
    "secret_access_key",  # AWS (aws_secret_access_key)
    "password",
    "passwd",
    "token",
    "credential",
    "authorization",
)
#: A key whose string value is a secret.
SECRET_NAME = re.compile(f"({'|'.join(SECRET_WORDS)})s?$", re.I)
