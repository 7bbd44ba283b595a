"""Table in and out: Table -> Table and DataStream -> Table, equal to the local env (on the
kit's ``flink_env`` fixture: a MiniCluster in the mode under test)."""

from __future__ import annotations

import pytest
from pyflink.common import Row
from pyflink.common.typeinfo import Types
from pyflink.table import DataTypes, Schema

from flink_agents.testing.minicluster import local_outputs
from tests.flink import agents

pytestmark = pytest.mark.flink

ROW_TYPE = DataTypes.ROW(
    [DataTypes.FIELD("key", DataTypes.STRING()), DataTypes.FIELD("i", DataTypes.INT())]
)
OUTPUT_TYPE = Types.ROW_NAMED(["key", "i", "count"], [Types.STRING(), Types.INT(), Types.INT()])
SCHEMA = (
    Schema.new_builder()
    .column("key", DataTypes.STRING())
    .column("i", DataTypes.INT())
    .column("count", DataTypes.INT())
    .build()
)


def _expected(records: list[dict]) -> list[tuple]:
    local = local_outputs(agents.memory_agent(), records, key="key")
    return sorted((o["key"], o["i"], o["count"]) for o in local)


def _rows(table, t_env) -> list[tuple]:
    with table.execute().collect() as results:
        return sorted((r[0], r[1], r[2]) for r in results)


def test_table_to_table_equals_local_environment(flink_env) -> None:
    records = [{"key": f"k{k}", "i": i} for i in range(4) for k in range(3)]
    agents_env, t_env = flink_env.agents_env, flink_env.t_env
    table = t_env.from_elements(
        [(r["key"], r["i"]) for r in records],
        DataTypes.ROW(
            [DataTypes.FIELD("key", DataTypes.STRING()), DataTypes.FIELD("i", DataTypes.INT())]
        ),
    )
    out = (
        agents_env.from_table(table, key_selector=lambda row: row["key"])
        .apply(agents.row_memory_agent())
        .to_table(SCHEMA, OUTPUT_TYPE)
    )
    assert _rows(out, t_env) == _expected(records)


def test_datastream_to_table_equals_local_environment(flink_env) -> None:
    records = [{"key": f"k{k}", "i": i} for i in range(4) for k in range(3)]
    agents_env = flink_env.agents_env
    out = (
        agents_env.from_datastream(flink_env.source(records), key_selector=lambda r: r["key"])
        .apply(agents.memory_agent(latency=0.01))
        .to_table(SCHEMA, OUTPUT_TYPE)
    )
    assert _rows(out, agents_env.t_env) == _expected(records)


def test_table_to_datastream_keyless(flink_env) -> None:
    records = [{"key": f"k{k}", "i": i} for i in range(3) for k in range(2)]
    agents_env, t_env = flink_env.agents_env, flink_env.t_env
    table = t_env.from_elements([Row(r["key"], r["i"]) for r in records], ROW_TYPE)
    out = agents_env.from_table(table).apply(agents.row_memory_agent()).to_datastream()
    got = sorted((o["key"], o["i"], o["count"]) for o in flink_env.collect(out))
    # Keyless: each record is its own run, so its memory starts empty.
    assert got == sorted((r["key"], r["i"], 1) for r in records)
