"""A job for the standalone-cluster test, submitted with ``flink run -py``.

    cluster_job.py OUTPUT_FILE LIFECYCLE_FILE

Runs ``tests.java.agents.java_agent`` (Java tools, a Java chat model and a Python tool) in
thread mode and writes its outputs, one JSON per line, to OUTPUT_FILE.
"""

from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def main(output: str, lifecycle: str) -> None:
    from flink_agents.runtime.flink import environment as flink_environment
    from tests.java import agents
    from tests.java.harness import BridgeInitFunction, collect, host_initializes_bridge, make_env
    from tests.java.harness import source as make_source

    if not host_initializes_bridge():
        flink_environment.AgentProcessFunction = BridgeInitFunction  # type: ignore[misc]
    records = [{"id": i, "key": f"k{i % 2}", "text": t} for i, t in enumerate(["hi", "abc"])]
    records.append({"id": 9, "key": "k1", "text": "calc", "model": "calc_model"})
    env, agents_env = make_env(**{"error-handling-strategy": "ignore"})
    out = (
        agents_env.from_datastream(make_source(env, records), key_selector=lambda r: r["key"])
        .apply(agents.java_agent(lifecycle_file=lifecycle))
        .to_datastream()
    )
    results = collect(out)
    with open(output, "w", encoding="utf-8") as fh:
        for r in results:
            fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
