"""Docker healthcheck of the Flink JobManager: REST is up and enough task slots registered.

Usage: ``python healthcheck.py [--url http://localhost:8081] [--min-slots 1]``. Exit code 0
when ``GET /overview`` answers and reports at least ``--min-slots`` slots (so a job
submitted after the check finds a TaskManager), 1 otherwise. Stdlib only: the image has no
curl.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request


def check(url: str, min_slots: int, timeout: float = 3.0) -> tuple[bool, str]:
    """Whether the cluster at ``url`` is up with ``min_slots`` slots, and why (not)."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/overview", timeout=timeout) as resp:
            overview = json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return False, f"REST not reachable at {url}: {exc}"
    slots = int(overview.get("slots-total", 0))
    taskmanagers = int(overview.get("taskmanagers", 0))
    if slots < min_slots:
        return False, f"{taskmanagers} TaskManager(s), {slots} slot(s) < {min_slots}"
    return True, f"{taskmanagers} TaskManager(s), {slots} slot(s)"


def main(argv: list[str] | None = None) -> int:
    """Run the check; prints one line and returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://localhost:8081")
    parser.add_argument("--min-slots", type=int, default=1)
    args = parser.parse_args(argv)
    ok, why = check(args.url, args.min_slots)
    print(("healthy: " if ok else "unhealthy: ") + why)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
