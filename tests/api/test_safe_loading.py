"""Hostile files: YAML agents files and event JSON are parsed without running code or
exhausting memory; every failure is one of the documented errors."""

from __future__ import annotations

import json
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flink_agents.api.events.event import Event, InputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.yaml._source import MAX_EXPANDED_NODES, YamlSource
from flink_agents.errors import YamlError

LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
agents: [*i]
"""


def _load(tmp_path: Path, text: str) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text(text, encoding="utf-8", newline="")
    AgentsExecutionEnvironment.get_execution_environment().load_yaml(path)


def test_a_billion_laughs_is_rejected_before_it_is_built(tmp_path: Path) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(YamlError, match="expands to more than") as err:
            _load(tmp_path, LAUGHS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024, peak  # the expansion (9**9 items) was never made
    assert err.value.problems[0].line is not None


def test_aliases_within_the_limit_still_work(tmp_path: Path) -> None:
    """Anchors and merge keys are ordinary YAML: small expansions load."""
    data = YamlSource.parse("base: &b {x: 1, y: [1, 2]}\nother: {<<: *b, z: 3}\nuse: [*b, *b]").data
    assert data["other"] == {"x": 1, "y": [1, 2], "z": 3} and data["use"][1]["y"] == [1, 2]


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("agents:\n  - name: a\x00b\n", r"U\+0000 is not allowed", 2),
        ("agents:\n  - name: \x07\n", r"U\+0007 is not allowed", 2),
        ("a: &x [1, *x]\n", "refers to a node that contains it", 1),
        ("a: " + "[" * 100 + "]" * 100 + "\n", "nests deeper than", 1),
        ("a: " + "[" * 5000 + "\n", "nested deeper than", None),
        ("agents: [\n", "not valid YAML", 2),
    ],
)
def test_reader_and_parser_errors_are_yaml_errors(
    tmp_path: Path, text: str, message: str, line: int | None
) -> None:
    with pytest.raises(YamlError, match=message) as err:
        _load(tmp_path, text)
    assert err.value.problems[0].line == line
    assert str(tmp_path / "agents.yaml") in str(err.value)


def test_a_rejected_file_imports_no_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry is checked before anything is imported: a module a rejected file names
    never runs its top-level code (here it would write a marker file)."""
    marker = tmp_path / "ran"
    (tmp_path / "sidefx_module.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef act(event, ctx):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    text = textwrap.dedent(
        """
        agents:
          - name: a
            actions:
              - {name: x, function: "sidefx_module:act", listen_to: [input]}
              - {name: y, function: "sidefx_module:act", listen_to: [chat_respons]}
            chat_model_connections:
              - {name: c, clazz: sidefx_module.Conn}
        """
    )
    with pytest.raises(YamlError, match="chat_respons"):
        _load(tmp_path, text)
    assert not marker.exists() and "sidefx_module" not in sys.modules


def test_event_json_never_imports_a_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "evil_events.py").write_text(
        f"open({str(marker)!r}, 'w').write('x')\n"
        "from flink_agents.api.events.event import Event\n"
        "class Boom(Event):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    event = Event.from_json(json.dumps({"type": "evil_events.Boom", "attributes": {"a": 1}}))
    assert type(event) is Event and event.get_attr("a") == 1
    assert not marker.exists() and "evil_events" not in sys.modules
    # registered types (the built-ins, classes already defined) are still typed
    again = Event.from_json(InputEvent(input={"x": 1}).to_json())
    assert isinstance(again, InputEvent) and again.input == {"x": 1}


@pytest.mark.parametrize("text", ["[1, 2]", '{"type": {"a": 1}}', '{"type": ""}', "{}"])
def test_malformed_event_json_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        Event.from_json(text)


# -- fuzzing ------------------------------------------------------------------------------------

_YAML_PIECES = st.sampled_from(
    [
        "agents:", "\n", "  ", "- ", "name: a", "actions:", "{", "}", "[", "]", ",", ":", "&a ",
        "*a", "&b ", "*b", "<<: ", "!!python/object:os.system ", "!!binary ", "'", '"', "\\",
        "\x00", "\t", "%YAML 1.1\n", "---\n", "...\n", "? ", "| ", "> ", "#", "clazz: ollama",
        "function: 'tests.api.yaml_functions:echo'", "listen_to: [input]", "1e999", "\ufeff",
        "chat_model_setups:", "- {name: s, clazz: x.y.Z}", "é", "&a [*a]",
    ]
)  # fmt: skip


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_YAML_PIECES, max_size=40).map("".join))
def test_fuzz_the_yaml_loader(tmp_path: Path, text: str) -> None:
    """Any text: loads, or fails with a YamlError (never another exception), in bounded
    time and memory."""
    tracemalloc.start()
    started = time.process_time()
    try:
        _load(tmp_path, text)
    except YamlError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.process_time() - started < 10
    assert peak < 64 * 1024 * 1024


def test_the_expansion_limit_is_counted_not_built() -> None:
    wide = "a: &a [" + ",".join(["1"] * 1000) + "]\nb: [" + ",".join(["*a"] * 200) + "]\n"
    with pytest.raises(YamlError, match=str(MAX_EXPANDED_NODES)):
        YamlSource.parse(wide)
