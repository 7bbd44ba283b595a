"""The ``flink-agents`` command, run as a real subprocess (``python -m flink_agents.cli``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flink_agents.plan.agent_plan import SECRET_MARKER, AgentPlan

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = "examples.workflow_single_agent"


def cli(*args: str, cwd: Path = REPO, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flink_agents.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def assert_usage_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr


# -- the console script ----------------------------------------------------------------------


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "flink-agents"
    assert script.is_file(), "run `pip install -e .` to install the console script"
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0
    for command in ("plan", "run", "cluster", "submit"):
        assert command in proc.stdout


# -- plan ------------------------------------------------------------------------------------


def test_plan_to_stdout_round_trips():
    proc = cli(
        "plan",
        f"{WORKFLOW}:ReviewAnalysisAgent",
        "--resources",
        f"{WORKFLOW}:model_resources",
    )
    assert proc.returncode == 0, proc.stderr
    plan = AgentPlan.model_validate_json(proc.stdout)
    assert {"process_input", "process_chat_response", "chat_model_action"} <= set(plan.actions)
    assert plan.actions["process_input"].func.module == WORKFLOW
    setup = plan.resource_providers["chat_model"]["review_analysis_model"]
    assert setup.arguments["tools"] == ["notify_shipping_manager"]


def test_plan_accepts_instance_class_and_factory(tmp_path):
    plans = []
    for attr in ("COUNTING_AGENT", "CountingAgent", "build_counting_agent"):
        out = tmp_path / f"{attr}.json"
        proc = cli("plan", f"tests.cli.agents:{attr}", "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == ""
        assert str(out) in proc.stderr
        plans.append(json.loads(out.read_text()))
    assert plans[0] == plans[1] == plans[2]
    assert plans[0]["actions"]["count"]["func"]["qualname"] == "CountingAgent.count"


def test_plan_keeps_secrets_out_and_applies_config():
    proc = cli(
        "plan",
        "tests.cli.agents:CountingAgent",
        "--resources",
        "tests.cli.agents:secret_resources:model=gpt-x",
        "--config",
        "max-retries=7",
        "--config",
        "error-handling-strategy=retry",
        "--config",
        "tag=blue",
    )
    assert proc.returncode == 0, proc.stderr
    assert "sk-very-secret-value" not in proc.stdout
    plan = json.loads(proc.stdout)
    conn = plan["resource_providers"]["chat_model_connection"]["conn"]
    assert SECRET_MARKER in conn["arguments"]["api_key"]
    assert conn["arguments"]["name"] == "gpt-x"
    assert plan["config"] == {
        "max-retries": 7,
        "error-handling-strategy": "retry",
        "tag": "blue",
    }


def test_plan_from_a_file_path(tmp_path):
    module = tmp_path / "my_agents_for_cli.py"
    module.write_text(
        "from tests.cli.agents import CountingAgent\n\nAGENT = CountingAgent()\n",
        encoding="utf-8",
    )
    proc = cli("plan", f"{module}:AGENT")
    assert proc.returncode == 0, proc.stderr
    assert "count" in json.loads(proc.stdout)["actions"]


def test_invalid_plan_is_a_failure_listing_problems(tmp_path):
    module = tmp_path / "broken_agents_for_cli.py"
    module.write_text(
        "from flink_agents.api.agents.agent import Agent\n"
        "from flink_agents.api.decorators import action\n\n"
        "class Broken(Agent):\n"
        "    @action('_input_event')\n"
        "    @staticmethod\n"
        "    def act(event):\n"
        "        pass\n",
        encoding="utf-8",
    )
    proc = cli("plan", f"{module}:Broken")
    assert proc.returncode == 1
    assert "must take exactly two arguments" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- run -------------------------------------------------------------------------------------


def test_run_workflow_example_with_key_field_and_batches(tmp_path):
    reviews = [
        {"id": "r1", "review": "Great product, love it"},
        {"id": "r2", "review": "It arrived broken"},
        {"id": "r3", "review": "Okay, a bit noisy"},
        {"id": "r4", "review": "Excellent value"},
        {"id": "r5", "review": "Box was damaged and the lid too"},
    ]
    src = write_jsonl(tmp_path / "in.jsonl", reviews)
    dst = tmp_path / "out.jsonl"
    proc = cli(
        "run",
        f"{WORKFLOW}:ReviewAnalysisAgent",
        "--resources",
        f"{WORKFLOW}:model_resources:scripted",
        "--input",
        str(src),
        "--output",
        str(dst),
        "--key-field",
        "id",
        "--batch-size",
        "2",
    )
    assert proc.returncode == 0, proc.stderr
    out = read_jsonl(dst)
    assert [o["key"] for o in out] == ["r1", "r2", "r3", "r4", "r5"]
    by_key = {o["key"]: o["output"] for o in out}
    assert by_key["r1"] == {"id": "r1", "score": 5, "reasons": []}
    assert by_key["r2"] == {"id": "r2", "score": 1, "reasons": ["damaged in shipping"]}
    assert by_key["r3"]["score"] == 3
    assert by_key["r5"]["score"] == 1
    assert "5/5" in proc.stderr  # the progress bar reached the end
    assert "5 records in, 5 outputs" in proc.stderr


def test_run_keys_share_memory_across_batches(tmp_path):
    records = [{"user": u, "n": i} for i, u in enumerate(["a", "b", "a", "a", "b"])]
    src = write_jsonl(tmp_path / "in.jsonl", records)
    dst = tmp_path / "out.jsonl"
    proc = cli(
        "run",
        "tests.cli.agents:CountingAgent",
        "-i",
        str(src),
        "-o",
        str(dst),
        "--key-field",
        "user",
        "--batch-size",
        "1",
        "--config",
        "tag=green",
        "--no-progress",
    )
    assert proc.returncode == 0, proc.stderr
    assert "rec/s" not in proc.stderr
    out = read_jsonl(dst)
    assert [(o["key"], o["output"]["seen"]) for o in out] == [
        ("a", 1),
        ("b", 1),
        ("a", 2),
        ("a", 3),
        ("b", 2),
    ]
    assert [o["output"]["input"] for o in out] == records
    assert {o["output"]["tag"] for o in out} == {"green"}


def test_run_without_key_field_gives_each_record_its_own_key(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"x": 1}\n\n"plain string"\n[1, 2]\n', encoding="utf-8")
    dst = tmp_path / "out.jsonl"
    proc = cli("run", "tests.cli.agents:CountingAgent", "-i", str(src), "-o", str(dst))
    assert proc.returncode == 0, proc.stderr
    out = read_jsonl(dst)
    assert [o["key"] for o in out] == [1, 3, 4]  # line numbers (blank line 2 skipped)
    assert [o["output"]["seen"] for o in out] == [1, 1, 1]
    assert [o["output"]["input"] for o in out] == [{"x": 1}, "plain string", [1, 2]]


def test_run_react_example_dumps_pydantic_outputs(tmp_path):
    src = write_jsonl(
        tmp_path / "tickets.jsonl",
        [
            {"customer": "ann", "message": "Where is A-1002?"},
            {"customer": "bob", "message": "Hello?"},
        ],
    )
    dst = tmp_path / "answers.jsonl"
    proc = cli(
        "run",
        "examples.react_agent:build_agent",
        "-i",
        str(src),
        "-o",
        str(dst),
        "--key-field",
        "customer",
    )
    assert proc.returncode == 0, proc.stderr
    out = read_jsonl(dst)
    assert out[0] == {
        "key": "ann",
        "output": {
            "order_id": "A-1002",
            "status": "processing",
            "reply": "Your order is processing; expected delivery: 5 days.",
        },
    }
    assert out[1]["output"]["order_id"] == "none"


def test_run_many_batches_in_process_leaves_no_thread_behind(tmp_path, capsys, monkeypatch):
    """In-process, so threads can be counted: the chat model calls of every batch go through
    the event loop's default executor, which is the runner's one pool (not a pool per
    batch), and `run` shuts it down at the end."""
    import threading
    import time

    from flink_agents.cli import main

    started: list[str] = []
    start = threading.Thread.start

    def counting_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    reviews = (REPO / "examples" / "data" / "reviews.jsonl").read_text(encoding="utf-8")
    src = tmp_path / "in.jsonl"
    src.write_text(reviews * 3, encoding="utf-8")
    batches = len(reviews.splitlines()) * 3
    dst = tmp_path / "out.jsonl"
    before = set(threading.enumerate())
    code = main(
        [
            "run",
            f"{WORKFLOW}:ReviewAnalysisAgent",
            "--resources",
            f"{WORKFLOW}:model_resources:scripted",
            "-i",
            str(src),
            "-o",
            str(dst),
            "--key-field",
            "id",
            "--batch-size",
            "1",
            "--no-progress",
            "--config",
            "num-async-threads=2",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert len(read_jsonl(dst)) == batches
    # tqdm's monitor is one daemon thread per process, started by the first progress bar.
    ours = [name for name in started if name != "tqdm_monitor"]
    assert len(ours) <= 2, f"{len(ours)} threads started for {batches} batches: {ours}"
    deadline = time.monotonic() + 5
    new = set(threading.enumerate()) - before
    left = {t for t in new if t.is_alive() and t.name != "tqdm_monitor"}
    while left and time.monotonic() < deadline:
        time.sleep(0.01)
        left = {t for t in left if t.is_alive()}
    assert not left, f"threads left after {batches} batches: {sorted(t.name for t in left)}"


def test_run_failure_exit_1_without_traceback_and_debug_shows_it(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", ["fine", "boom now", "fine again"])
    dst = tmp_path / "out.jsonl"
    args = ["run", "tests.cli.agents:FailingAgent", "-i", str(src), "-o", str(dst)]
    proc = cli(*args, "--batch-size", "1", "--no-progress")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "boom input" in proc.stderr
    assert "input lines 2-2" in proc.stderr
    assert "1 records done" in proc.stderr
    assert read_jsonl(dst) == [{"key": 1, "output": "fine"}]  # what ran before stays

    debug = cli(*args, "--debug", "--no-progress")
    assert debug.returncode == 1
    assert "Traceback" in debug.stderr


# -- usage errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "fragment"),
    [
        ("tests.cli.agents", "must look like 'package.module:name'"),
        ("tests.cli.nowhere:Agent", "cannot import module 'tests.cli.nowhere'"),
        ("tests.cli.agents:Missing", "has no attribute 'Missing'"),
        ("tests.cli.agents:NOT_AN_AGENT", "is a int, not an agent"),
        ("tests.cli.agents:not_an_agent_factory", "returned str, not an Agent"),
        ("tests.cli.agents:NeedsArguments", "needs argument(s) size"),
        ("tests.cli.agents:needs_arguments", "needs argument(s) size"),
        ("flink_agents.api.events.event:InputEvent", "not an Agent subclass"),
        ("missing_file.py:AGENT", "module file 'missing_file.py' does not exist"),
    ],
)
def test_bad_agent_reference(reference, fragment):
    assert_usage_error(cli("plan", reference), fragment)


def test_module_that_fails_to_import_is_a_failure(tmp_path):
    module = tmp_path / "raising_module_for_cli.py"
    module.write_text("import json\nraise RuntimeError('broken on import')\n", encoding="utf-8")
    proc = cli("plan", f"{module}:AGENT")
    assert proc.returncode == 1
    assert "broken on import" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ("max-retries=lots", "invalid value 'lots' for option 'max-retries'"),
        ("error-handling-strategy=maybe", "expected one of"),
        ("no-equals-sign", "must look like key=value"),
        ("=5", "must look like key=value"),
    ],
)
def test_bad_config(config, fragment):
    assert_usage_error(cli("plan", "tests.cli.agents:CountingAgent", "--config", config), fragment)


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("tests.cli.agents:bad_resources", "it must give a dict"),
        ("tests.cli.agents:secret_resources:a,b,c", "bad arguments"),
        (f"{WORKFLOW}:model_resources:nosuchprovider", "unknown provider 'nosuchprovider'"),
        ("tests.cli.agents:NOT_AN_AGENT:x", "is not a function"),
    ],
)
def test_bad_resources(spec, fragment):
    assert_usage_error(cli("plan", "tests.cli.agents:CountingAgent", "--resources", spec), fragment)


def test_missing_input_file(tmp_path):
    proc = cli(
        "run",
        "tests.cli.agents:CountingAgent",
        "-i",
        str(tmp_path / "nope.jsonl"),
        "-o",
        str(tmp_path / "out.jsonl"),
    )
    assert_usage_error(proc, "nope.jsonl", "does not exist")
    assert not (tmp_path / "out.jsonl").exists()


def test_bad_json_line_names_its_line(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"a": 1}\n{"a": 2}\n{"a": 3,\n{"a": 4}\n', encoding="utf-8")
    dst = tmp_path / "out.jsonl"
    proc = cli("run", "tests.cli.agents:CountingAgent", "-i", str(src), "-o", str(dst))
    assert_usage_error(proc, f"{src}:3: not valid JSON")
    assert not dst.exists()  # nothing ran


def test_record_without_key_field(tmp_path):
    src = write_jsonl(tmp_path / "in.jsonl", [{"id": 1}, {"other": 2}])
    proc = cli(
        "run",
        "tests.cli.agents:CountingAgent",
        "-i",
        str(src),
        "-o",
        str(tmp_path / "o.jsonl"),
        "--key-field",
        "id",
    )
    assert_usage_error(proc, ":2: the record has no field 'id'")


def test_argparse_usage_errors(tmp_path):
    proc = cli("run", "tests.cli.agents:CountingAgent", "-o", str(tmp_path / "o.jsonl"))
    assert_usage_error(proc, "--input")
    assert_usage_error(cli("frobnicate"), "invalid choice")
    assert_usage_error(cli("cluster", "restart"), "invalid choice")
    src = write_jsonl(tmp_path / "in.jsonl", [1])
    proc = cli(
        "run",
        "tests.cli.agents:CountingAgent",
        "-i",
        str(src),
        "-o",
        str(tmp_path / "o.jsonl"),
        "--batch-size",
        "0",
    )
    assert_usage_error(proc, "--batch-size must be >= 1")


def test_submit_missing_job_file(tmp_path):
    assert_usage_error(cli("submit", str(tmp_path / "job.py")), "job.py", "does not exist")


def test_submit_rejects_a_non_python_job(tmp_path):
    job = tmp_path / "job.jar"
    job.write_text("")
    assert_usage_error(cli("submit", str(job)), "must be a Python file")


def test_double_dash_is_only_for_submit():
    assert_usage_error(cli("plan", "tests.cli.agents:CountingAgent", "--", "x"), "only for")


def test_cluster_commands_on_a_folder_without_a_cluster(tmp_path):
    for args in (
        ["cluster", "status", "--workdir", str(tmp_path)],
        ["submit", str(REPO / "examples" / "table_api.py"), "--cluster", str(tmp_path)],
    ):
        proc = cli(*args)
        assert proc.returncode == 1, proc.stderr
        assert f"no cluster was started in {tmp_path}" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_cluster_start_rejects_bad_numbers(tmp_path):
    proc = cli("cluster", "start", "--workdir", str(tmp_path), "--slots", "0")
    assert_usage_error(proc, "--slots must be >= 1")
    assert not (tmp_path / "cluster.json").exists()


def test_stop_and_remote_submit_check_their_arguments(tmp_path) -> None:
    """A JobManager address is host:port; a JobManager nobody answers at is a failure
    that names it (exit 1), not a traceback."""
    job = tmp_path / "job.py"
    job.write_text("print('never run')\n", encoding="utf-8")
    assert_usage_error(
        cli("submit", str(job), "--jobmanager", "no-port", cwd=tmp_path), "host:port"
    )
    assert_usage_error(
        cli("stop", "0" * 32, "--savepoint", str(tmp_path), "--jobmanager", "a:b"), "host:port"
    )
    from flink_agents.testing.ports import free_port

    down = f"127.0.0.1:{free_port()}"
    proc = cli("stop", "0" * 32, "--savepoint", str(tmp_path), "--jobmanager", down)
    assert proc.returncode == 1, proc.stderr
    assert "cannot be reached" in proc.stderr and "Traceback" not in proc.stderr
