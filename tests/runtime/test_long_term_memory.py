"""Long-term memory (``ctx.long_term_memory``) on mem0, offline: a scripted model plays the
LLM mem0 asks, hashing embeddings make the vectors, a real Chroma in a temporary directory
keeps the items. Local environment, the core's durable replay, a new process, and one lean
MiniCluster job."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.memory.long_term_memory import LongTermMemoryOptions
from flink_agents.errors import ConfigurationError, ModelCallError, VectorStoreError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime import long_term_memory
from flink_agents.runtime.core import AgentRunner
from tests.runtime.ltm_agents import (
    LTM_CONFIG,
    BlockingSearchAgent,
    MemoryOpsAgent,
    ltm_resources,
    ops,
)

ROOT = Path(__file__).resolve().parents[2]


def _config(job: str | None = "job-a", **extra: Any) -> dict[str, Any]:
    config = {**LTM_CONFIG, **extra}
    if job is not None:
        config["job-identifier"] = job
    return config


def run_local(agent: Any, records: list[tuple[str, Any]], config: dict[str, Any]) -> list[Any]:
    """Outputs (values, in input order) of ``records`` = [(key, value), ...]."""
    env = AgentsExecutionEnvironment.get_execution_environment()
    for key, value in config.items():
        env.get_config().set_str(key, value)
    out = env.from_list([{"key": k, "value": v} for k, v in records]).apply(agent).to_list()
    env.execute()
    return [next(iter(o.values())) for o in out]


def _agent(tmp_path: Path, **kwargs: Any) -> MemoryOpsAgent:
    return ltm_resources(MemoryOpsAgent(), str(tmp_path / "chroma"), **kwargs)  # type: ignore[return-value]


FACTS = [
    ("alice", ops(("add", {"items": "Alice drinks green tea every morning"}))),
    ("alice", ops(("add", {"items": "Alice's favourite fruit is watermelon"}))),
    (
        "bob",
        ops(("add", {"items": ["Bob plays chess on Sundays", "Bob's favourite fruit is kiwi"]})),
    ),
    ("alice", ops(("add", {"items": "Alice's favourite fruit is bananas"}))),
]


def test_add_search_update_and_scoping_on_the_local_environment(tmp_path):
    count_file = tmp_path / "brain.jsonl"
    agent = _agent(tmp_path, count_file=str(count_file))
    asks = [
        ("alice", ops(("search", {"query": "favourite fruit", "limit": 2}), ("get", {}))),
        ("bob", ops(("search", {"query": "favourite fruit", "limit": 5}))),
    ]
    out = run_local(agent, FACTS + asks, _config())
    tea, melon, bob, bananas = (o[0] for o in out[:4])
    assert len(tea) == len(melon) == 1 and len(bob) == 2
    # mem0 asked the model whether the new fruit replaces the old one: it is an UPDATE of
    # the same item, not a second item
    assert bananas == melon
    assert len(count_file.read_text().splitlines()) == 2 * 5  # extract + decide per item
    alice_hits, alice_all = out[4]
    assert alice_hits[0]["value"] == "Alice's favourite fruit is bananas"
    assert sorted(i["value"] for i in alice_all) == [
        "Alice drinks green tea every morning",
        "Alice's favourite fruit is bananas",
    ]
    assert all(i["set"] == "facts" and i["dated"] for i in alice_all)
    # the same set name under another key holds other items
    bob_hits = out[5][0]
    assert sorted(h["value"] for h in bob_hits) == [
        "Bob plays chess on Sundays",
        "Bob's favourite fruit is kiwi",
    ]
    assert bob_hits[0]["value"] == "Bob's favourite fruit is kiwi"

    # another job identifier over the same directory sees none of it; the first one still
    # sees everything (a new runner: the local environment made again)
    ask = ("alice", ops(("get", {}), ("search", {"query": "fruit", "limit": 3})))
    assert run_local(_agent(tmp_path), [ask], _config("job-b")) == [[[], []]]
    again = run_local(_agent(tmp_path), [ask], _config("job-a"))[0]
    assert len(again[0]) == 2 and again[1][0]["value"] == "Alice's favourite fruit is bananas"


def test_get_delete_metadata_and_sets(tmp_path):
    agent = _agent(tmp_path)
    setup = (
        "k",
        ops(
            (
                "add",
                {
                    "items": ["Meeting with Carol on Monday", "Dentist on Friday"],
                    "metadatas": [{"kind": "work", "prio": 2}, {"kind": "health", "prio": 1}],
                },
            ),
            (
                "add",
                {
                    "items": "Flight to Oslo in May",
                    "metadatas": {"kind": "travel", "prio": 3},
                    "set": "trips",
                },
            ),
        ),
    )
    ((ids, trip_ids),) = run_local(agent, [setup], _config())
    work_id = ids[0]
    queries = ops(
        ("get", {"ids": [work_id, "no-such-id"]}),
        ("get", {"filters": {"kind": "health"}}),
        ("get", {"filters": {"prio": {"$gte": 2}}}),
        ("search", {"query": "meeting Carol", "limit": 5, "filters": {"kind": {"$ne": "work"}}}),
        ("get", {"ids": trip_ids}),  # an id of another set is not found through this one
        ("get", {"set": "trips"}),
    )
    ((by_id, health, important, not_work, other_set, trips),) = run_local(
        _agent(tmp_path), [("k", queries)], _config()
    )
    assert [i["value"] for i in by_id] == ["Meeting with Carol on Monday"]
    assert by_id[0]["metadata"] == {"kind": "work", "prio": 2}
    assert [i["value"] for i in health] == ["Dentist on Friday"]
    assert [i["value"] for i in important] == ["Meeting with Carol on Monday"]
    assert [i["value"] for i in not_work] == ["Dentist on Friday"]
    assert other_set == [] and [i["value"] for i in trips] == ["Flight to Oslo in May"]
    # another key cannot read or delete this key's items by id
    other_key = ops(("get", {"ids": [work_id]}), ("delete", {"ids": [work_id]}))
    assert run_local(_agent(tmp_path), [("intruder", other_key)], _config()) == [[[], None]]
    deletes = ops(
        ("delete", {"ids": work_id}),
        ("get", {}),
        ("delete_memory_set", {"name": "facts"}),
        ("get", {}),
        ("get", {"set": "trips"}),
    )
    ((_, after_one, deleted, after_set, trips_left),) = run_local(
        _agent(tmp_path), [("k", deletes)], _config()
    )
    assert [i["value"] for i in after_one] == ["Dentist on Friday"]
    assert deleted is True and after_set == []
    assert len(trips_left) == 1


def test_a_replayed_run_does_not_add_again(tmp_path):
    """After a restore the core answers durable calls from the log: the replayed run gets
    the recorded ids, mem0 is not called, nothing is stored twice."""
    count_file = tmp_path / "brain.jsonl"
    plan = AgentPlan.from_agent(
        _agent(tmp_path, count_file=str(count_file)), AgentConfiguration(_config())
    )
    adds = ops(("add", {"items": "Dave collects stamps"}), ("add", {"items": "Dave is 41"}))
    runner = AgentRunner(plan)
    try:
        first = runner.run_sync("dave", adds)
        calls = len(count_file.read_text().splitlines())
        replayed = runner.run_sync("dave", adds, durable=first.durable_records)
        assert replayed.outputs == first.outputs
        assert len(count_file.read_text().splitlines()) == calls == 4
        stored = runner.run_sync("dave", ops(("get", {})))
        assert sorted(i["value"] for i in stored.outputs[0][0]) == [
            "Dave collects stamps",
            "Dave is 41",
        ]
    finally:
        runner.close()


def test_configuration_and_usage_errors_are_clear(tmp_path):
    ask = [("k", ops(("get", {})))]
    with pytest.raises(Exception, match="long-term memory is not configured") as info:
        run_local(_agent(tmp_path), ask, {"long-term-memory.mem0.vector-store": "store"})
    assert isinstance(info.value.__cause__, ConfigurationError)
    assert "long-term-memory.mem0.chat-model-setup" in str(info.value)
    assert "long-term-memory.mem0.vector-store" not in str(info.value).split("set ")[1][:90]
    with pytest.raises(ConfigurationError, match="long-term-memory.mem0.vector-store"):
        AgentConfiguration().set_str("long-term-memory.mem0.vector-store", "")
    config = AgentConfiguration().set(LongTermMemoryOptions.Mem0.VECTOR_STORE, "store")
    assert config.get("long-term-memory.mem0.vector-store") == "store"
    for bad, problem in [
        (("add", {"items": 42}), "str or a list of str"),
        (("add", {"items": ["a", "b"], "metadatas": [{}]}), "1 metadata dicts for 2"),
        (("search", {"query": "x", "limit": 0}), "positive int"),
        (("get", {"set": ""}), "non-empty str"),
    ]:
        with pytest.raises(Exception, match=problem):
            run_local(_agent(tmp_path), [("k", ops(bad))], _config())


def test_failures_mem0_would_swallow_are_raised(tmp_path, caplog):
    """mem0 catches and only logs failures while it applies the model's decisions (and an
    unreadable decision leaves "nothing to do"): here they are raised."""
    facts = json.dumps({"facts": ["Alice likes tea"]})
    chatty = _agent(tmp_path, brain={"replies": [facts, "Sure! I would add that."]})
    with pytest.raises(ModelCallError, match="not JSON: 'Sure! I would add that.'"):
        run_local(chatty, [("k", ops(("add", {"items": "Alice likes tea"})))], _config())
    # Chroma refuses a nested metadata value when mem0 writes the new item
    nested = ops(("add", {"items": "Alice likes tea", "metadatas": {"source": {"app": "x"}}}))
    with caplog.at_level(logging.ERROR, logger="mem0.memory.main"):
        with pytest.raises(VectorStoreError, match="Chroma rejected adding"):
            run_local(_agent(tmp_path), [("k", nested)], _config())
    assert "Error processing memory action" in caplog.text  # what mem0 alone would do
    # a store that refuses everything (its collection may not be created)
    strict = _agent(tmp_path, collection="absent", auto_create_collection=False)
    with pytest.raises(VectorStoreError, match="'absent'.*does not exist"):
        run_local(strict, [("k", ops(("add", {"items": "Alice likes tea"})))], _config())


def test_direct_calls_warn_that_they_block_the_loop(tmp_path, caplog):
    long_term_memory._warned.discard("blocking")
    run_local(_agent(tmp_path), [("k", ops(("add", {"items": "Erin rides a bike"})))], _config())
    with caplog.at_level(logging.WARNING, logger="flink_agents.runtime.long_term_memory"):
        out = run_local(
            ltm_resources(BlockingSearchAgent(), str(tmp_path / "chroma")),
            [("k", "bike")],
            _config(),
        )
    assert out == [["Erin rides a bike"]]
    assert "blocks every key" in caplog.text and "durable_execute_async" in caplog.text


def test_unset_job_identifier_falls_back_with_a_warning(tmp_path, caplog):
    long_term_memory._warned.discard("job-id")
    with caplog.at_level(logging.WARNING, logger="flink_agents.runtime.long_term_memory"):
        run_local(_agent(tmp_path), [("k", ops(("add", {"items": "Finn swims"})))], _config(None))
    assert "'job-identifier' is not set" in caplog.text
    seen = run_local(_agent(tmp_path), [("k", ops(("get", {})))], _config("default"))
    assert [i["value"] for i in seen[0][0]] == ["Finn swims"]


_OFFLINE_RUN = """
import json, socket, sys
def refuse(*args, **kwargs):
    raise RuntimeError(f"network access attempted: {args}")
socket.socket.connect = refuse
socket.create_connection = refuse
from tests.runtime.test_long_term_memory import _agent, _config, run_local
from tests.runtime.ltm_agents import ops
from pathlib import Path
records = [(k, ops(*[tuple(c) for c in v])) for k, v in json.loads(sys.argv[2])]
print(json.dumps(run_local(_agent(Path(sys.argv[1])), records, _config())))
import mem0.memory.main, mem0.memory.telemetry
assert mem0.memory.telemetry.MEM0_TELEMETRY is False and mem0.memory.main.MEM0_TELEMETRY is False
"""


def _offline(tmp_path: Path, records: list[Any]) -> list[Any]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _OFFLINE_RUN, str(tmp_path), json.dumps(records)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (home / ".mem0").exists() and not (home / ".cache").exists()
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_runs_offline_and_persists_across_a_restart(tmp_path):
    """In fresh processes with every outbound connection refused: one adds, the next (a
    restart) finds the items in the Chroma directory."""
    added = _offline(tmp_path, [["gus", [["add", {"items": "Gus grows tomatoes"}]]]])
    assert len(added[0][0]) == 1
    found = _offline(tmp_path, [["gus", [["search", {"query": "tomatoes", "limit": 1}]]]])
    assert found[0][0][0]["value"] == "Gus grows tomatoes"


@pytest.mark.flink
def test_long_term_memory_in_a_flink_job(tmp_path):
    """One MiniCluster job: per key, facts are added and then searched (keys run
    concurrently, each in input order); a new process (a restarted job) finds them."""
    from flink_agents.testing.minicluster import collect, make_env, source

    records = [
        {"key": "alice", "ops": [["add", {"items": "Alice's favourite fruit is watermelon"}]]},
        {"key": "bob", "ops": [["add", {"items": "Bob's favourite fruit is kiwi"}]]},
        {"key": "alice", "ops": [["add", {"items": "Alice drinks green tea"}]]},
        {"key": "alice", "ops": [["add", {"items": "Alice's favourite fruit is bananas"}]]},
        {"key": "bob", "ops": [["search", {"query": "favourite fruit", "limit": 3}]]},
        {"key": "alice", "ops": [["search", {"query": "favourite fruit", "limit": 3}]]},
    ]
    env, agents_env = make_env(**_config("flink-job"))
    out = (
        agents_env.from_datastream(source(env, records), lambda r: r["key"])
        .apply(_agent(tmp_path))
        .to_datastream()
    )
    results = [r[0] for r in collect(out)]
    added = [r for r in results if r and isinstance(r[0], str)]
    # four adds, three items: bananas UPDATEd watermelon's item (same id)
    assert len(added) == 4 and len({tuple(ids) for ids in added}) == 3
    searches = {
        r[0]["value"].split("'")[0]: [i["value"] for i in r]
        for r in results
        if r and isinstance(r[0], dict)
    }
    assert searches == {
        "Alice": ["Alice's favourite fruit is bananas", "Alice drinks green tea"],
        "Bob": ["Bob's favourite fruit is kiwi"],
    }
    code = textwrap.dedent(
        f"""
        import json
        from pathlib import Path
        from tests.runtime.test_long_term_memory import _agent, _config, run_local
        from tests.runtime.ltm_agents import ops
        out = run_local(_agent(Path({str(tmp_path)!r})),
                        [("alice", ops(("get", {{}})))], _config("flink-job"))
        print(json.dumps(sorted(i["value"] for i in out[0][0])))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [
        "Alice drinks green tea",
        "Alice's favourite fruit is bananas",
    ]
