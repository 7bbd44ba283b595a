"""The event log's fast path (payload JSON spliced in) against the walk it short-cuts."""

from __future__ import annotations

import json
import random
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from pydantic_core import to_json

from flink_agents.api.core_options import AgentConfiguration
from flink_agents.api.events.event import Event
from flink_agents.errors import ConfigurationError
from flink_agents.runtime.metric_groups import SimpleMetricGroup
from flink_agents.runtime.observability.event_log import EventLogObserver, _RunLog
from flink_agents.secrets import Masker, json_may_hold_secret

SECRET = "sk-fast-path-secret"


@pytest.fixture
def observer(tmp_path: Path) -> Any:
    obs = EventLogObserver(
        AgentConfiguration({"event-log.writer": "thread"}),
        str(tmp_path / "events.log"),
        [SECRET],
        SimpleMetricGroup(),
        {"jobId": "job", "subtask": 0},
    )
    yield obs
    obs.close()


def _item(
    attributes: dict[str, Any], level: str = "STANDARD", *, whole: bool = True
) -> tuple[Any, ...]:
    """An event record as the run thread makes it: the event's JSON with its id and type
    (``whole``), or without them and the id apart (an event class that writes itself)."""
    event = Event(type="t", attributes=attributes)
    if whole:
        body, event_id = to_json(event, fallback=str), None
    else:
        body, event_id = to_json(event, fallback=str, exclude={"id", "type"}), to_json(event.id)
    parent = to_json(uuid.uuid4())
    usage = {"prompt_tokens": 3}
    return ("event", 1.5, event_id, event.type, body, parent, "act", level, 2.5, 0.0012345, usage)


RUN = _RunLog("k", "run-1")


def _queue(observer: Any, *items: tuple[Any, ...]) -> None:
    """Queue ``items`` as the records of an ended run."""
    run_log = _RunLog(RUN.key, RUN.run_id)
    for item in items:
        run_log.records.extend(item)
    run_log.count = len(items)
    observer._put(run_log)


def _both(observer: Any, item: tuple[Any, ...]) -> tuple[bytes | None, dict[str, Any]]:
    """(the fast path's line or None, the walk's record)."""
    fast = observer.writer._event_line(observer.writer._head(RUN.key, RUN.run_id), item)
    walk = json.loads(
        to_json(observer.writer._event_record(RUN.key, RUN.run_id, item), fallback=str)
    )
    return fast, walk


def _same(fast: bytes, walk: dict[str, Any]) -> None:
    record = json.loads(fast)
    assert record == walk
    assert list(record) == list(walk)  # the same order too


PLAIN = [
    {"input": {"key": "k0", "i": 0}},
    {"text": "x" * 2000, "note": 'quotes " and \\ and\nnewline'},
    {"items": list(range(15)), "n": 1.25, "none": None, "flag": True},
    {"a": {"b": {"c": {"d": {"e": 1}}}}},  # 5 levels: the limit
    {"text": "[[[[[[{{{{{{ ,,,,,,,,,,,,,,,,,,,,,,,,,, ]]]]]"},  # brackets in a string only
    {"prompt_tokens": 3, "token_count": "many", "usage": {"total_tokens": 5}},  # no secret
    {"unicode": "héllo wörld ✓", "emoji": "🙂"},
    # escaped quotes and backslashes around brackets and commas inside strings
    {"text": 'a \\" [[[[[[ {{{{ ,,,,,,,,,,,,,,,,,,,,,,,, " \\', "b": [1], "c": '\\"{'},
]


@pytest.mark.parametrize("attributes", PLAIN)
def test_plain_payloads_take_the_fast_path_with_the_walks_content(
    observer: Any, attributes: dict[str, Any]
) -> None:
    for level in ("STANDARD", "VERBOSE"):
        for whole in (True, False):
            item = _item(attributes, level, whole=whole)
            fast, walk = _both(observer, item)
            assert fast is not None
            _same(fast, walk)
            assert walk["durationMs"] == round(0.0012345 * 1000.0, 3) and "truncated" not in walk
            assert walk["actionStart"] == 2.5 and walk["usage"] == {"prompt_tokens": 3}
            assert walk["payload"] == attributes
            event_id = json.loads(item[2]) if item[2] is not None else json.loads(item[4])["id"]
            assert walk["eventId"] == event_id and walk["eventType"] == "t"


FALLBACKS = [
    ({"text": "x" * 2001}, True),  # a long string
    ({"text": "é" * 1500, "more": "y" * 600}, False),  # long in bytes only: the walk, no cut
    ({"items": list(range(21))}, True),  # a long array
    ({"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}, True),  # deep nesting
    ({"a": [[[[[1]]]]]}, True),
    ({"t": "ends with a backslash \\", "a": [[[[[1]]]]]}, True),  # then deep nesting
    ({"t": '\\"', "items": list(range(21))}, True),
    ({"note": f"called with {SECRET}"}, False),  # a secret value
    ({"api_key": "abc"}, False),  # a secret-named key
    ({"nested": {"Client_Secrets": "abc"}}, False),
    ({"api_\u212aey": "abc"}, False),  # KELVIN SIGN matches k case-insensitively
    ({"password\n": "abc"}, False),  # "$" matches before a final newline
]


@pytest.mark.parametrize(("attributes", "cut"), FALLBACKS)
def test_payloads_needing_a_look_fall_back_to_the_walk(
    observer: Any, attributes: dict[str, Any], cut: bool
) -> None:
    fast, walk = _both(observer, _item(attributes))
    assert fast is None
    assert walk.get("truncated", False) is cut
    assert SECRET not in json.dumps(walk)
    # and drain writes what the walk makes
    _queue(observer, _item(attributes))
    observer.writer.drain()
    line = Path(observer.writer.path).read_text().splitlines()[-1]
    record = json.loads(line)
    assert record["payload"] == walk["payload"]


def test_a_secret_json_escapes_always_takes_the_walk(tmp_path: Path) -> None:
    obs = EventLogObserver(
        AgentConfiguration({"event-log.writer": "thread"}),
        str(tmp_path / "events.log"),
        ['pa"ss'],
        SimpleMetricGroup(),
        {"jobId": "job", "subtask": 0},
    )
    try:
        fast, walk = _both(obs, _item({"input": {"key": "k0"}}))
        assert fast is None and walk["payload"] == {"input": {"key": "k0"}}
        fast, walk = _both(obs, _item({"note": 'x pa"ss y'}))
        assert fast is None and walk["payload"] == {"note": "x *** y"}
    finally:
        obs.close()


@pytest.mark.parametrize(
    ("limits", "attributes", "fast_ok"),
    [
        ({"max-string-length": 5}, {"s": "12345"}, True),
        ({"max-string-length": 5}, {"s": "123456"}, False),
        ({"max-array-elements": 2}, {"l": [1, 2]}, True),
        ({"max-array-elements": 2}, {"l": [1, 2, 3]}, False),
        ({"max-depth": 2}, {"d": {"e": 1}}, True),
        ({"max-depth": 2}, {"d": {"e": {"f": 1}}}, False),
        ({"max-depth": 2}, {"d": {"e": 1}, "f": {"g": 2}, "h": []}, True),
    ],
)
def test_limits_come_from_the_configuration(
    tmp_path: Path, limits: dict[str, int], attributes: dict[str, Any], fast_ok: bool
) -> None:
    obs = EventLogObserver(
        AgentConfiguration(
            {
                "event-log.writer": "thread",
                **{f"event-log.standard.{k}": v for k, v in limits.items()},
            }
        ),
        str(tmp_path / "events.log"),
        [],
        SimpleMetricGroup(),
        {"jobId": "job", "subtask": 0},
    )
    try:
        fast, walk = _both(obs, _item(attributes))
        assert (fast is not None) is fast_ok
        if fast is not None:
            _same(fast, walk)
        else:
            assert walk["truncated"] is True
    finally:
        obs.close()


def test_one_look_per_run_still_finds_a_secret_in_any_payload(observer: Any) -> None:
    """A run's payloads are looked at together first: a secret in one of them still takes
    that one through the walk (redacted), the others stay as they are."""
    _queue(
        observer,
        _item({"input": {"key": "k0"}}),
        _item({"note": f"called with {SECRET}", "text": "x" * 2500}),
        _item({"api_key": "abc", "n": 1}),
        _item({"output": "done"}),
    )
    observer.writer.drain()
    lines = Path(observer.writer.path).read_text().splitlines()[-4:]
    payloads = [json.loads(line)["payload"] for line in lines]
    assert payloads[0] == {"input": {"key": "k0"}} and payloads[3] == {"output": "done"}
    assert payloads[1]["note"] == "called with ***" and payloads[1]["text"].endswith("chars]")
    assert payloads[2] == {"api_key": "***", "n": 1}
    assert SECRET not in "".join(lines)


def test_per_type_levels_are_known_keys_with_checked_values() -> None:
    """``event-log.type.<type>.level`` is an option family: a short type is no near-miss
    of ``event-log.level``, and a bad level is an error naming the key."""
    config = AgentConfiguration({"event-log.type.v.level": "verbose"})
    assert config.get_str("event-log.type.v.level") == "verbose"
    with pytest.raises(ConfigurationError, match=r"event-log\.type\.v\.level.*one of OFF"):
        AgentConfiguration({"event-log.type.v.level": "LOUD"})


def test_the_secret_scan_is_conservative() -> None:
    """Where the byte scan sees nothing, the walk masks nothing: keys and texts made of
    pieces that come close to the rule (its words, separators, quotes, escapes)."""
    rng = random.Random(7)
    pieces = [
        "api_key", "apikey", "API_KEY", "Api-Key", "api.key", "secret", "Secrets", "password",
        "passwd", "token", "tokens", "max_tokens", "credential", "authorization", "cookie",
        "key", "pass", "word", "x", "_", "-", ".", " ", "\n", "s", '"', "'", ":", "=", ",",
        "{", "}", "1", "?", "&", "://", "@", "Bearer ", "Basic ", "dXNlcjpw",
    ]  # fmt: skip
    masker = Masker()
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 8)))
        other = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
        value = {text: other, "n": [text, 1], other: {"k": text}}
        if not json_may_hold_secret(to_json(value)):
            assert masker.mask_value(value) == value, value


def test_a_secret_in_the_key_is_masked(observer: Any) -> None:
    """In the lines made from bytes and in those the walk makes (an event whose payload
    holds a secret) alike."""
    run_log = _RunLog(f"user-{SECRET}", "run-2")
    run_log.records.extend(_item({"input": "plain"}))
    run_log.records.extend(_item({"note": f"with {SECRET}"}))
    run_log.records.extend(("run", 1.5, 0.25, None))
    run_log.count = 3
    observer._put(run_log)
    observer.writer.drain()
    lines = Path(observer.writer.path).read_text().splitlines()
    assert len(lines) == 3 and SECRET not in "".join(lines)
    assert all(json.loads(line)["key"] == "user-***" for line in lines)
    assert json.loads(lines[1])["payload"] == {"note": "with ***"}


def _drained_by_hand(tmp_path: Path, writer: str) -> EventLogObserver:
    """An observer with the given writer that drains only when told (``writer.drain()``)."""
    return EventLogObserver(
        AgentConfiguration({"event-log.writer": writer, "event-log.flush-ms": 600_000}),
        str(tmp_path / "events.log"),
        [],
        SimpleMetricGroup(),
        {"jobId": "job", "subtask": 0},
    )


@pytest.mark.parametrize("writer", ["thread", "process"])
def test_a_run_that_does_not_pickle_is_still_written(tmp_path: Path, writer: str) -> None:
    """Ended runs are queued pickled (no survivors for the garbage collector); when a batch
    does not pickle, each run is pickled on its own and the one whose records do not is
    queued as it is: its bad record becomes an error line."""
    obs = _drained_by_hand(tmp_path, writer)
    try:
        good = _RunLog("k", "run-1")
        good.records.extend(("run", 1.5, 0.25, None))
        good.count = 1
        obs._put(good)
        bad = _RunLog("k", "run-2")
        bad.records.extend(("run", 1.5, 0.25, None, "run", 2.5, 0.25, threading.Lock()))
        bad.count = 2
        obs._put(bad)
        obs._seal()  # (the writer's take seals too; here, to look at the items)
        assert [(type(item), n) for item, n in obs.queue] == [(bytes, 1), (tuple, 2)]
        obs.writer.drain()
    finally:
        obs.close()
    records = [json.loads(line) for line in Path(tmp_path / "events.log").read_text().splitlines()]
    assert [r["record"] for r in records] == ["run", "run", "error"]
    assert [r.get("runId") for r in records[:2]] == ["run-1", "run-2"]
    assert obs.queued == obs.taken == 3


@pytest.mark.parametrize("writer", ["thread", "process"])
def test_ended_runs_go_pickled_32_to_an_item_and_a_flush_takes_the_rest(
    tmp_path: Path, writer: str
) -> None:
    obs = _drained_by_hand(tmp_path, writer)
    try:
        for i in range(70):
            run_log = _RunLog(f"k{i}", f"run-{i}")
            run_log.records.extend(("run", 1.5 + i, 0.25, None))
            run_log.count = 1
            obs._put(run_log)
        # the run thread sealed two items of 32; 6 runs wait for the next item or flush
        assert [n for _, n in obs.queue] == [32, 32] and len(obs._ended) == 6
        obs.writer.drain()
        assert not obs.queue and not obs._ended
    finally:
        obs.close()
    records = [json.loads(line) for line in Path(tmp_path / "events.log").read_text().splitlines()]
    assert [r["runId"] for r in records] == [f"run-{i}" for i in range(70)]
    assert obs.queued == obs.taken == 70
