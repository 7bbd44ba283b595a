"""The per-version branches of ``_pyflink_internals`` against the PyFlink installed here:
each branch's condition is checked against what this Flink really does, so a branch that
picks the wrong side on some version fails on that version's run (tests/versions/run.py
runs this file on every supported version)."""

from __future__ import annotations

import pytest
from pyflink.table import EnvironmentSettings, Table, TableEnvironment, TableResult

from flink_agents.errors import SqlError
from flink_agents.runtime.flink import _pyflink_internals as internals
from flink_agents.runtime.flink.sql import sql_session
from flink_agents.testing.minicluster import make_env

pytestmark = pytest.mark.flink


@pytest.fixture(scope="module")
def t_env() -> TableEnvironment:
    return TableEnvironment.create(EnvironmentSettings.in_streaming_mode())


def test_the_sql_models_branch_matches_flinks_sql(t_env: TableEnvironment) -> None:
    try:
        t_env.execute_sql(
            "CREATE TEMPORARY MODEL probe WITH ('provider' = 'openai', 'task' = 'text_generation')"
        )
        flink_has_models = True
    except Exception as exc:  # py4j: TableException
        assert "Unsupported query" in str(exc)
        flink_has_models = False
    assert internals.sql_has_models() is flink_has_models
    assert flink_has_models is (internals.minor_version() >= (2, 1))


def test_the_resolved_schema_branch_matches_pyflinks_table(t_env: TableEnvironment) -> None:
    has = hasattr(Table, "get_resolved_schema") and hasattr(TableResult, "get_resolved_schema")
    assert internals.table_has_resolved_schema() is has
    table = t_env.from_elements([(1, "a")], ["id", "question"])
    names, types = internals.table_columns(table)
    assert names == ["id", "question"]
    assert [type(t).__name__ for t in types] == ["BigIntType", "VarCharType"]
    assert internals.result_columns(t_env.execute_sql("SHOW FUNCTIONS")) == ["function name"]


def test_models_work_in_sql_on_every_version() -> None:
    """CREATE MODEL / SHOW MODELS / CREATE AGENT ... USING MODEL / DROP MODEL: Flink's
    statements from 2.1 on, ours before; ML_PREDICT refused with what to use where Flink
    has no models."""
    _, agents_env = make_env()
    session = sql_session(agents_env)
    session.execute_sql(
        "CREATE MODEL gpt WITH ('provider' = 'scripted', "
        "'respond' = 'examples.sql_agent:support_model')"
    )
    with session.execute_sql("SHOW MODELS").collect() as rows:
        assert [tuple(r) for r in rows] == [("gpt",)]
    session.execute_sql("CREATE AGENT helper USING MODEL gpt USING PROMPT 'Answer.'")
    assert agents_env.catalog.get_agent("helper").model.name == "gpt"
    if not internals.sql_has_models():
        with pytest.raises(SqlError, match=r"ML_PREDICT needs Flink 2\.1 or later"):
            session.execute_sql("SELECT * FROM ML_PREDICT(TABLE t, MODEL gpt, DESCRIPTOR(q))")
    session.execute_sql("DROP AGENT helper")
    session.execute_sql("DROP MODEL gpt")
    with session.execute_sql("SHOW MODELS").collect() as rows:
        assert list(rows) == []


def test_task_identity_and_job_id_readers_have_a_java_context_branch() -> None:
    """Both readers take Flink 2's ``getTaskInfo()`` / ``getJobInfo()`` (present since
    1.19, so on every supported version) from the Java context first."""

    class TaskInfo:
        def getTaskName(self) -> str:  # noqa: N802 - Java's name
            return "agent"

        def getIndexOfThisSubtask(self) -> int:  # noqa: N802 - Java's name
            return 3

    class JavaContext:
        def getTaskInfo(self) -> TaskInfo:  # noqa: N802 - Java's name
            return TaskInfo()

    class Context:
        _runtime_context = JavaContext()

    assert internals.task_identity(Context()) == ("agent", 3)


def test_importing_the_host_and_beam_prints_no_warning(tmp_path) -> None:
    """Beam 2.48 (what apache-flink 1.20 installs) imports pkg_resources, which setuptools 81+
    deprecates on stderr at every start; the host silences exactly that warning."""
    import subprocess
    import sys

    code = (
        "import flink_agents.runtime.flink, pyflink.datastream, "
        "apache_beam.runners.portability.stager"
    )
    proc = subprocess.run(
        [sys.executable, "-W", "default", "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pkg_resources" not in proc.stderr
