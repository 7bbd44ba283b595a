"""A job for the Prometheus test, submitted with ``flink run -py``.

    prom_job.py RELEASE_FILE LOG_DIR

Runs ``tests.observability.agents.tool_agent`` over three inputs and a fourth that waits
for RELEASE_FILE, with the event log in LOG_DIR.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def main(release: str, log_dir: str) -> None:
    from flink_agents.testing.minicluster import make_env, source
    from tests.observability.agents import tool_agent

    env, agents_env = make_env(**{"event-log.enabled": True, "baseLogDir": log_dir})
    records = [{"name": f"name{i}"} for i in range(3)] + [{"name": "last", "hold": release}]
    (
        agents_env.from_datastream(source(env, records), key_selector=lambda r: r["name"])
        .apply(tool_agent())
        .to_datastream()
        .print()
    )
    env.execute("prometheus-test")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
