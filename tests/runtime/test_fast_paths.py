"""The Flink host's fast paths without a cluster: each fallback warns once per job and says
why, engaged paths are reported, and the PyFlink internals they read are found where
the PyFlink versions it supports keep them (importing the host with another PyFlink fails)."""

from __future__ import annotations

import gc
import json
import logging
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

pytest.importorskip("pyflink")

from flink_agents.api.core_options import AgentConfiguration  # noqa: E402
from flink_agents.plan.agent_plan import AgentPlan  # noqa: E402
from flink_agents.runtime import java as runtime_java  # noqa: E402
from flink_agents.runtime.flink import _pyflink_internals as internals  # noqa: E402
from flink_agents.runtime.flink import entry, fast_paths, gated_loop, heap  # noqa: E402
from flink_agents.runtime.flink.function import AgentProcessFunction  # noqa: E402
from tests.fakes import (  # noqa: E402
    FakeJavaBackend,
    FakePythonBackend,
    FakeRuntimeContext,
    install_void_namespace,
)
from tests.flink.agents import chat_agent  # noqa: E402

LOGGER = "flink_agents.runtime.flink"


def _function(*, packed: bool = True, **config: Any) -> AgentProcessFunction:
    conf = AgentConfiguration()
    for key, value in config.items():
        conf.set_str(key, value)
    plan = AgentPlan.from_agent(chat_agent(), conf)
    return AgentProcessFunction(plan.model_dump_json(), {}, packed=packed, key_of=lambda r: r)


@pytest.fixture
def opened(monkeypatch) -> Any:
    """Opens functions against fake runtime contexts (``thread``: as if inside the JVM) and
    closes them after the test."""
    install_void_namespace(monkeypatch)
    functions: list[AgentProcessFunction] = []

    def open_(function: AgentProcessFunction, backend: Any, *, thread: bool) -> Any:
        monkeypatch.setattr(runtime_java, "in_jvm", lambda: thread)
        function.open(FakeRuntimeContext(backend))  # type: ignore[arg-type]
        functions.append(function)
        return function

    yield open_
    for function in functions:
        function.close()


def _fast_path_logs(caplog) -> list[tuple[int, str]]:
    return [
        (r.levelno, r.getMessage()) for r in caplog.records if r.getMessage().startswith("fast")
    ]


def _engaged(caplog) -> set[str]:
    """Paths of the 'fast path X engaged: what' lines."""
    return {
        message.split()[2]
        for _, message in _fast_path_logs(caplog)
        if " engaged: " in message and " not engaged: " not in message
    }


def _not_engaged(caplog) -> dict[str, str]:
    """WARNING 'fast path X not engaged: why' lines, by path."""
    found: dict[str, str] = {}
    for level, message in _fast_path_logs(caplog):
        if level == logging.WARNING and " not engaged: " in message:
            head, why = message.split(" not engaged: ", 1)
            assert head.removeprefix("fast path ") not in found, f"warned twice: {message}"
            found[head.removeprefix("fast path ")] = why
    return found


def test_thread_mode_with_every_part_in_place_engages_every_path(opened, caplog, tmp_path) -> None:
    report = tmp_path / "paths.jsonl"
    function = _function(**{"fast-paths.report-file": str(report)})
    with caplog.at_level(logging.INFO, logger=LOGGER):
        opened(function, FakeJavaBackend(), thread=True)
        # What the thread-mode operator does right after open().
        hook = entry.claim_barrier_hook(entry.CONTRACT_VERSION)
        assert hook.function is function
        lean = entry._LeanOperation(
            object(),
            internals.OperationParts(function.process_element, object(), lambda v: v),
            function,
        )
        assert lean.batch_settings() == [32, 5]
    assert _not_engaged(caplog) == {}
    assert _engaged(caplog) == fast_paths.EXPECTED["thread"]
    notes = [json.loads(line) for line in report.read_text().splitlines()]
    assert {n["path"] for n in notes if n["engaged"]} == fast_paths.EXPECTED["thread"]
    assert {n["job"] for n in notes} == {function.job_id}
    assert not [n for n in notes if not n["engaged"]]


def test_each_fallback_warns_once_per_job_and_says_why(opened, monkeypatch, caplog) -> None:
    monkeypatch.setattr(gated_loop, "supported", lambda: False)
    function = _function(packed=False)
    # The same job's function on another subtask (PyFlink pickles it with cloudpickle).
    twin = cloudpickle.loads(cloudpickle.dumps(function))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        opened(function, FakeJavaBackend(fail=True), thread=True)
        opened(twin, FakeJavaBackend(fail=True), thread=True)
        for f in (function, twin):
            f.close()  # no operator of the bridge jar claimed them
    warned = _not_engaged(caplog)
    assert set(warned) == {
        fast_paths.TIMESTAMP_OPERATOR,
        fast_paths.BORROWED_LOOP,
        fast_paths.STATE_PROBE,
        fast_paths.BARRIER_HOOK,
    }
    assert "CarriedTimestampOperator was missing" in warned[fast_paths.TIMESTAMP_OPERATOR]
    assert "gated_loop" in warned[fast_paths.BORROWED_LOOP]
    assert "getKeys failed" in warned[fast_paths.STATE_PROBE]
    assert "no operator of the bridge jar claimed" in warned[fast_paths.BARRIER_HOOK]


def test_without_a_keyed_state_backend_barrier_hook_and_batches_warn(opened, caplog) -> None:
    function = _function()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        opened(function, None, thread=True)
        assert function.batch_settings() == (1, 0)
    warned = _not_engaged(caplog)
    assert set(warned) == {fast_paths.BARRIER_HOOK, fast_paths.BATCHES}
    assert all("keyed state backend was not found" in why for why in warned.values())


def test_batches_off_by_configuration_is_no_warning(opened, caplog) -> None:
    function = _function(**{"batch.size": 1})
    with caplog.at_level(logging.INFO, logger=LOGGER):
        opened(function, FakeJavaBackend(), thread=True)
        assert function.batch_settings() == (1, 0)
    assert (logging.INFO, "fast path batches not engaged: batch.size is 1") in _fast_path_logs(
        caplog
    )
    assert _not_engaged(caplog) == {}


def test_process_mode_notes_only_its_own_paths(opened, caplog) -> None:
    function = _function()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        opened(function, FakePythonBackend(), thread=False)
        list(function.on_timer(entry.BARRIER_TIMER, None))  # type: ignore[arg-type]
    assert _engaged(caplog) == {
        fast_paths.TIMESTAMP_OPERATOR,
        fast_paths.BORROWED_LOOP,
        fast_paths.BARRIER_HOOK,
        fast_paths.HEAP_FREEZE,
    }
    assert _not_engaged(caplog) == {}
    assert function.barrier_hook


@pytest.mark.parametrize("sampling", [True, False])
def test_process_mode_notes_the_state_sampling_path(opened, caplog, monkeypatch, sampling) -> None:
    # Inside a Beam worker's bundle processor shorten_state_sampling says whether it took;
    # outside one (the test above) it returns None and nothing is noted.
    monkeypatch.setattr(internals, "shorten_state_sampling", lambda: sampling)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        opened(_function(), FakePythonBackend(), thread=False)
    if sampling:
        assert fast_paths.STATE_SAMPLING in _engaged(caplog)
        assert fast_paths.STATE_SAMPLING not in _not_engaged(caplog)
    else:
        assert "200 ms" in _not_engaged(caplog)[fast_paths.STATE_SAMPLING]
        warned = [m for level, m in _fast_path_logs(caplog) if level == logging.WARNING]
        assert any(fast_paths.STATE_SAMPLING in m for m in warned)


def test_lean_operation_fallbacks_are_noted_for_the_hooks_function(caplog) -> None:
    function = _function(packed=False)
    hook = entry.BarrierHook(function)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        unknown = object()
        assert entry.lean_operation(unknown, hook) is unknown
    [why] = _not_engaged(caplog).values()
    assert "another shape" in why and "AttributeError" in why


# -- the internals ----------------------------------------------------------------------------


def test_the_keyed_state_backend_is_found_in_both_modes() -> None:
    java = FakeJavaBackend()
    keys = internals.state_keys(FakeRuntimeContext(java))
    assert keys.java and keys.backend is java
    keys.switch("k2")
    assert keys.current() == "k2" and java.switches == ["k2"]
    remote = FakePythonBackend()
    keys = internals.state_keys(FakeRuntimeContext(remote))
    assert not keys.java
    keys.switch("k3")
    assert keys.current() == "k3" and remote.switches == ["k3"]
    # Process mode's backend cannot say which keys a state holds: "maybe".
    assert internals.state_may_hold(keys, "fa-memory") is True
    with pytest.raises(internals.InternalsChanged, match="_keyed_state_backend"):
        internals.state_keys(FakeRuntimeContext(None))


def test_report_notes_are_json_lines(tmp_path: Path) -> None:
    report = tmp_path / "r.jsonl"
    fast_paths.note("job-x", "some-path", False, "why", report_file=str(report))
    fast_paths.note("job-x", "some-path", False, "why", report_file=str(report))
    assert [json.loads(line) for line in report.read_text().splitlines()] == [
        {"job": "job-x", "path": "some-path", "engaged": False, "detail": "why"}
    ]


def test_pyflink_private_names_are_read_in_the_internals_module_only():
    """A PyFlink upgrade is checked in one file: no other module of the package reads a
    private attribute of a PyFlink object or imports a private PyFlink helper."""
    import re
    from pathlib import Path

    import flink_agents

    root = Path(flink_agents.__file__).parent
    private = re.compile(
        r"\._j_[a-z]|\._type_info\b|_keyed_state_backend|_get_one_input_stream_operator"
        r"|\._chained_operations|_output_data_converter|_process_element_func"
    )
    offenders = [
        f"{path.relative_to(root)}:{number}: {line.strip()}"
        for path in sorted(root.rglob("*.py"))
        if path.name != "_pyflink_internals.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if private.search(line)
    ]
    assert offenders == []


def _tracked(obj: object) -> bool:
    """Whether the collector's generations hold ``obj`` (frozen objects are in none)."""
    return any(o is obj for o in gc.get_objects())


@pytest.mark.parametrize("thread", [True, False])
def test_open_freezes_the_startup_heap_once_per_process(opened, caplog, thread) -> None:
    """What start-up loaded stays out of full collections (python.gc-freeze, the default):
    objects alive at the first open are frozen; a later open freezes nothing new, and what
    runs make afterwards is collected as before."""
    before = [[]]  # a container: tracked by the collector
    assert _tracked(before)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        opened(_function(), FakeJavaBackend() if thread else FakePythonBackend(), thread=thread)
    assert fast_paths.HEAP_FREEZE in _engaged(caplog)
    frozen = gc.get_freeze_count()
    assert frozen > 10_000  # the modules, the plan, the test session
    assert not _tracked(before)
    after = [[]]
    with caplog.at_level(logging.INFO, logger=LOGGER):
        opened(_function(), FakeJavaBackend() if thread else FakePythonBackend(), thread=thread)
    assert _tracked(after)
    assert "frozen by an earlier open" in caplog.text
    assert gc.get_freeze_count() <= frozen  # (frozen objects still die by refcount)
    # Cycles made after the freeze are still collected.
    cycle: list[object] = []
    cycle.append(cycle)
    ref = id(cycle)
    del cycle
    gc.collect()
    assert all(id(o) != ref for o in gc.get_objects())
    heap.thaw()
    assert gc.get_freeze_count() == 0
    assert _tracked(before)


def test_gc_freeze_off_freezes_nothing_and_does_not_warn(opened, caplog) -> None:
    with caplog.at_level(logging.INFO, logger=LOGGER):
        opened(_function(**{"python.gc-freeze": "false"}), FakeJavaBackend(), thread=True)
    assert gc.get_freeze_count() == 0
    assert fast_paths.HEAP_FREEZE not in _engaged(caplog)
    assert fast_paths.HEAP_FREEZE not in _not_engaged(caplog)  # INFO, not a WARNING
    assert "python.gc-freeze is off" in caplog.text
