"""``flink-agents sql``, run as a real subprocess: the example script, usage errors, a
failing statement that stops the script before any job, and ``--jobmanager``."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def sql(*args: str, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flink_agents.cli", "sql", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# -- usage errors (no JVM is started: arguments and syntax are checked first) ----------------


def test_syntax_error_names_line_column_and_shows_the_line() -> None:
    script = "SHOW TOOLS;\nCREATE TOOL weather\n  USING FUNCTON get_weather;\nSELECT 1"
    proc = sql("-e", script, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        "flink-agents sql: error: <-e>: line 3, column 9: expected FUNCTION or CONNECTION "
        "after USING, found 'FUNCTON'\n"
        "    USING FUNCTON get_weather;\n"
        "          ^\n"
    )
    assert proc.stdout == ""  # nothing ran, not even the SHOW before it


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-f", "no/such/script.sql"], "cannot read script 'no/such/script.sql'"),
        (["-e", "SHOW TOOLS", "--jobmanager", "localhost"], "expected HOST:PORT"),
        (["-e", "SHOW TOOLS", "--detached"], "--detached needs --jobmanager"),
        (["-e", "SHOW TOOLS", "--config", "novalue"], "--config 'novalue': expected KEY=VALUE"),
        (
            ["-e", "SHOW TOOLS", "--config", "max-retries=often"],
            "--config: invalid value 'often' for option 'max-retries'",
        ),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    proc = sql(*args, timeout=60)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_command_is_listed() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "flink_agents.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "sql" in proc.stdout


# -- on Flink --------------------------------------------------------------------------------


@pytest.mark.flink
def test_example_script_runs_with_the_scripted_model() -> None:
    proc = sql("-f", "examples/sql_agent.sql", "-p", "1", timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "[OK] CREATE TEMPORARY TOOL order_status" in out
    assert "| order_status |" in out  # SHOW TOOLS
    assert "first-line support" in out  # DESC AGENT
    answers = {
        line.split("|")[1].strip(): line.split("|")[3].strip()
        for line in out.splitlines()
        if line.startswith("|") and line.split("|")[1].strip().isdigit()
    }
    assert answers == {
        "1": "Order A100 is shipped on Monday.",  # the tool, called by the model
        "2": "Order B200 is waiting for stock.",
        "3": "As I said: Order A100 is shipped on Monday.",  # ann's memory (PARTITION BY)
        "4": "Please tell me your order number.",
    }
    assert "4 rows in set" in out


@pytest.mark.flink
def test_failing_statement_stops_the_script_before_any_job(tmp_path: Path) -> None:
    sink = tmp_path / "answers"
    script = tmp_path / "script.sql"
    script.write_text(
        "CREATE TEMPORARY MODEL m WITH ('provider' = 'scripted', "
        "'respond' = 'examples.sql_agent:support_model');\n"
        "CREATE TEMPORARY AGENT a USING MODEL m USING PROMPT 'p';\n"
        "CREATE TEMPORARY VIEW qs AS SELECT * FROM (VALUES (1, 'x')) AS t(id, q);\n"
        "CREATE TEMPORARY TABLE answers (id INT, q STRING, agent_output STRING) WITH ("
        f"'connector' = 'filesystem', 'path' = '{sink}', 'format' = 'json');\n"
        "INSERT INTO answers SELECT * FROM agent_run(INPUT => TABLE qs, AGENT => AGENT a, "
        "COL => DESCRIPTOR(q));\n"
        "CREATE TEMPORARY AGENT b USING MODEL nope USING PROMPT 'p';\n"
        "SHOW AGENTS;\n"
    )
    proc = sql("-f", str(script), timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[QUEUED] INSERT INTO answers" in proc.stdout
    assert "[JOB]" not in proc.stdout and "agent name" not in proc.stdout
    assert proc.stderr.startswith(
        f"flink-agents sql: failed: {script}: line 6, column 38: unknown model nope (models: m)"
    )
    assert "CREATE TEMPORARY AGENT b USING MODEL nope" in proc.stderr  # the line, with a caret
    assert not sink.exists() or not any(sink.rglob("*"))


@pytest.mark.flink
def test_jobmanager_submits_to_a_standalone_cluster(tmp_path: Path) -> None:
    from flink_agents.ops.cluster import start_cluster, stop_cluster
    from flink_agents.testing.ports import free_port

    port = free_port()
    workdir = tmp_path / "cluster"
    start_cluster(workdir, port=port, timeout=240)
    try:
        sink = tmp_path / "answers"
        script = tmp_path / "script.sql"
        script.write_text(
            "CREATE TEMPORARY FUNCTION order_status AS 'examples.sql_agent.order_status' "
            "LANGUAGE PYTHON;\n"
            "CREATE TEMPORARY TOOL order_status USING FUNCTION order_status;\n"
            "CREATE TEMPORARY MODEL m WITH ('provider' = 'scripted', "
            "'respond' = 'examples.sql_agent:support_model');\n"
            "CREATE TEMPORARY AGENT a USING MODEL m USING PROMPT 'p' USING TOOLS order_status;\n"
            "CREATE TEMPORARY VIEW qs AS SELECT * FROM (VALUES (1, 'Is C300 here?')) AS t(id, q);\n"
            "CREATE TEMPORARY TABLE answers (id INT, q STRING, agent_output STRING) WITH ("
            f"'connector' = 'filesystem', 'path' = '{sink}', 'format' = 'json');\n"
            "INSERT INTO answers SELECT * FROM agent_run(INPUT => TABLE qs, AGENT => AGENT a, "
            "COL => DESCRIPTOR(q));\n"
        )
        proc = sql("-f", str(script), "--jobmanager", f"localhost:{port}", timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "[JOB]" in proc.stdout and "finished" in proc.stdout
        files = [p for p in sink.rglob("*") if p.is_file() and not p.name.startswith(".")]
        rows = [json.loads(line) for f in files for line in f.read_text().splitlines()]
        assert rows == [{"id": 1, "q": "Is C300 here?", "agent_output": "Order C300 is delivered."}]
        # the job ran on the cluster, not in a MiniCluster of the command
        with urllib.request.urlopen(f"http://localhost:{port}/jobs/overview", timeout=10) as r:
            jobs = json.loads(r.read())["jobs"]
        assert [j["state"] for j in jobs] == ["FINISHED"]
    finally:
        stop_cluster(workdir)
