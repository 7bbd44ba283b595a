"""DataStream in and out on a real MiniCluster: same outputs as the local environment,
per-key order and memory under concurrency, timestamps carried, keyless input, one execution
mode for all the job's Python operators."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import pytest
from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import TumblingEventTimeWindows

from flink_agents.runtime.flink import fast_paths
from flink_agents.testing.minicluster import collect, local_outputs, make_env, source
from tests.flink import agents
from tests.flink.harness import MODE, stamped, with_timestamps

pytestmark = pytest.mark.flink


def _by_key(outputs: list[dict]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = defaultdict(list)
    for out in outputs:
        grouped[out["key"]].append(out)
    return dict(grouped)


def test_keyed_outputs_equal_local_environment_with_every_fast_path(tmp_path) -> None:
    """Also: every fast path of the mode engaged (with the bridge jar), so a PyFlink upgrade
    that breaks one fails here instead of silently costing throughput."""
    records = [{"key": f"k{k}", "i": i} for i in range(6) for k in range(5)]
    report = tmp_path / "fast-paths.jsonl"
    env, agents_env = make_env(**{"fast-paths.report-file": str(report)})
    out = (
        agents_env.from_datastream(source(env, records), key_selector=lambda r: r["key"])
        .apply(agents.memory_agent())
        .to_datastream()
    )
    flink = collect(out)
    local = local_outputs(agents.memory_agent(), records, key="key")
    assert len(flink) == len(records)
    # Across keys the interleaving may differ; per key the sequence is identical.
    assert _by_key(flink) == _by_key(local)
    notes = [json.loads(line) for line in report.read_text().splitlines()]
    assert [n for n in notes if not n["engaged"]] == []
    assert {n["path"] for n in notes} == fast_paths.EXPECTED[MODE]


def test_keyless_outputs_equal_local_environment_and_memory_is_per_record() -> None:
    records = [{"key": f"k{i % 3}", "i": i} for i in range(30)]
    env, agents_env = make_env()
    out = (
        agents_env.from_datastream(source(env, records))
        .apply(agents.memory_agent(latency=[0.0, 0.02]))
        .to_datastream()
    )
    flink = collect(out)
    local = local_outputs(agents.memory_agent(), records, key=None)
    key = lambda o: o["i"]  # noqa: E731
    assert sorted(flink, key=key) == sorted(local, key=key)
    # Without a key every record is its own run: memory never carries over.
    assert all(o["count"] == 1 and o["seen"] == [o["i"]] for o in flink)


def test_per_key_order_and_memory_under_concurrency_with_timestamps() -> None:
    keys, per_key = 20, 10
    records = [
        {"key": f"k{k}", "i": i, "ts": 1_000 * i + k} for i in range(per_key) for k in range(keys)
    ]
    random.Random(7).shuffle(records)  # keys interleave randomly ...
    records.sort(key=lambda r: r["i"])  # ... but each key's inputs keep their order
    env, agents_env = make_env()
    out = (
        agents_env.from_datastream(with_timestamps(source(env, records)), lambda r: r["key"])
        .apply(agents.memory_agent(latency=[0.01, 0.1]))
        .to_datastream()
    )
    results = collect(stamped(out))
    assert len(results) == keys * per_key
    grouped = _by_key([r["value"] for r in results])
    assert sorted(grouped) == sorted(f"k{k}" for k in range(keys))
    for key, outs in grouped.items():
        assert [o["i"] for o in outs] == list(range(per_key)), key
        assert [o["count"] for o in outs] == list(range(1, per_key + 1)), key
        assert outs[-1]["seen"] == list(range(per_key)), key  # nothing leaked from other keys
    # Outputs carry their input's timestamp (also those finished by the end-of-input drain).
    for r in results:
        v = r["value"]
        assert r["ts"] == 1_000 * v["i"] + int(v["key"][1:])


@pytest.mark.parametrize(
    ("java_operator", "batch_size"),
    [(True, 32), (True, 1), (False, 32)],
    ids=["java-operator-batched", "java-operator-unbatched", "python-fallback"],
)
# Without re-assignment, outputs from timers have Flink's timer timestamps: not asserted.
@pytest.mark.parametrize(
    ("latency", "carry"),
    [(0.0, True), (0.02, True), (0.0, False)],
    ids=["sync", "async", "sync-unwrapped-only"],
)
def test_output_timestamps_follow_inputs(
    monkeypatch, java_operator: bool, batch_size: int, latency: float, carry: bool
) -> None:
    """Outputs emitted at once and outputs emitted from timers both get their input's
    timestamp, or none when the input had none; with or without the bridge jar, with
    inputs handed to Python in batches or one by one. Without re-assignment
    (``carry_timestamps=False``) outputs emitted at once (or from a batch) still have
    their input's timestamp; those from timers have what Flink gives them."""
    if not java_operator:
        import flink_agents.runtime.java as java

        monkeypatch.setattr(java, "bridge_jars", lambda: [])
    timed = [{"key": f"t{i % 3}", "i": i, "ts": 5_000 + i} for i in range(12)]
    untimed = [{"key": f"u{i % 3}", "i": 100 + i} for i in range(12)]
    env, agents_env = make_env(**{"batch.size": batch_size})
    inputs = with_timestamps(source(env, timed)).union(source(env, untimed))
    out = (
        agents_env.from_datastream(inputs, lambda r: r["key"])
        .apply(agents.memory_agent(latency=latency))
        .to_datastream(carry_timestamps=carry)
    )
    results = collect(stamped(out))
    # Long.MIN_VALUE is Flink's "no timestamp" (what a Python timestamp assigner can say).
    none = {None, -(2**63)}
    assert sorted((r["value"]["i"], None if r["ts"] in none else r["ts"]) for r in results) == [
        (i, 5_000 + i) for i in range(12)
    ] + [(100 + i, None) for i in range(12)]


class _CountWindow(ProcessWindowFunction):
    def process(self, key: str, context: Any, elements: Iterable[Any]) -> Iterable[Any]:
        yield (context.window().start, sorted(e["i"] for e in elements))


def test_watermarks_of_your_own_after_the_agent_window_outputs_by_input_time() -> None:
    """What docs/user-guide/configuration.md advises for event-time windows after the agent
    on an unbounded stream: a watermark strategy on the outputs, using the carried record
    timestamps."""
    records = [{"key": f"k{i % 3}", "i": i, "ts": 1_000 * i} for i in range(12)]
    env, agents_env = make_env()
    out = (
        agents_env.from_datastream(with_timestamps(source(env, records)), lambda r: r["key"])
        .apply(agents.memory_agent(latency=[0.0, 0.05]))
        .to_datastream()
    )
    windows = (
        out.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))
        )
        .key_by(lambda o: "all", key_type=Types.STRING())
        .window(TumblingEventTimeWindows.of(Time.seconds(4)))
        .process(_CountWindow(), output_type=Types.PICKLED_BYTE_ARRAY())
    )
    assert sorted(collect(windows)) == [
        (0, [0, 1, 2, 3]),
        (4_000, [4, 5, 6, 7]),
        (8_000, [8, 9, 10, 11]),
    ]


def test_python_operators_built_on_the_env_share_the_agents_execution_mode() -> None:
    # PyFlink fixes an operator's mode when it is created. The map in source() is built
    # before from_datastream: it used to stay in process mode next to a thread-mode agent,
    # and that process-mode (Beam) runner could take the TaskManager down when a failover
    # cancelled it (test_recovery: no slot left for the restart).
    env, agents_env = make_env()
    out = (
        agents_env.from_datastream(source(env, [{"key": "k", "i": 0}]), lambda r: r["key"])
        .apply(agents.memory_agent())
        .to_datastream()
    )
    out.map(lambda o: o)
    graph = env._j_stream_execution_environment.getStreamGraph(False)
    python_operators = {}
    for node in graph.getStreamNodes().toArray():
        factory = node.getOperatorFactory()
        if factory.getClass().getSimpleName() == "SimpleOperatorFactory":
            name = factory.getOperator().getClass().getSimpleName()
            if "Python" in name or name.startswith("Agent"):
                python_operators[node.getId()] = name
    # source map, key, agent (the bridge jar's subclass of PyFlink's operator), output map
    assert len(python_operators) >= 4, python_operators
    agent = "AgentKeyedProcessOperator" if MODE == "thread" else "AgentExternalKeyed"
    assert any(name.startswith(agent) for name in python_operators.values()), python_operators
    prefix = "Embedded" if MODE == "thread" else "External"
    others = [n for n in python_operators.values() if not n.startswith("Agent")]
    assert all(name.startswith(prefix) for name in others), python_operators
