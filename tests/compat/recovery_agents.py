"""An agent for the reconciler's recovery test on Flink (importable by the workers).

The ``call`` input submits a payment through ``ctx.durable_execute_async(...,
reconciler=...)`` whose submission hangs until the job has failed; ticks of other keys
fail the job once a checkpoint taken during the submission has completed. After the
restore, the submission's outcome is unknown (only its pending marker is in the
checkpoint), so the reconciler is asked instead of submitting again.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.runner_context import RunnerContext
from flink_agents.testing.minicluster import committed_records
from tests.flink.agents import submit_until_failed


def _log(path: str, entry: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({**entry, "t": time.time()}) + "\n")


async def pay(event: Event, ctx: RunnerContext) -> None:
    """``call``: the durable submission with a reconciler; ``tick``: an output at once,
    stamped with when it ran, and (the first time a tick sees a checkpoint completed
    after the submission started) the injected failure."""
    record = InputEvent.from_event(event).input
    config = ctx.config
    calls_file, marker = config.get("test.calls_file"), config.get("test.marker")
    if record["kind"] == "call":

        def payment_reconciler() -> str:
            _log(calls_file, {"call": "reconcile", "order": record["i"]})
            return f"reconciled-{record['i']}"

        result = await ctx.durable_execute_async(
            submit_until_failed, calls_file, marker, record["i"], reconciler=payment_reconciler
        )
        ctx.send_event(OutputEvent(output={**record, "result": result}))
        return
    now = time.time()
    if not os.path.exists(marker) and os.path.exists(calls_file):
        with open(calls_file, encoding="utf-8") as fh:
            started = [json.loads(line)["t"] for line in fh if line.strip()]
        committed = committed_records(config.get("test.out_dir"))
        if started and any(o.get("t0", 0) > started[0] for o in committed):
            with open(marker, "w", encoding="utf-8") as fh:
                fh.write(f"failed at {now}\n")
            raise RuntimeError("injected failure while the submission is in flight")
    ctx.send_event(OutputEvent(output={**record, "t0": now}))


def payment_agent() -> Agent:
    """See :func:`pay`."""
    agent = Agent()
    agent.add_action("pay", InputEvent, pay)
    return agent
