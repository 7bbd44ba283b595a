"""The repeated-call bound of the lost-TaskManager scenario, on made-up call logs."""

from __future__ import annotations

from tests.deploy.lost_taskmanager import repeat_bound


def test_repeats_are_counted_per_input_against_the_calls_in_the_window() -> None:
    calls = [
        {"i": 0, "t": 1.0},  # before the checkpoint: not repeated
        {"i": 1, "t": 2.5},  # after it, before the failure: made again after the restore
        {"i": 2, "t": 2.8},
        {"i": 1, "t": 9.0},
        {"i": 2, "t": 9.1},
        {"i": 3, "t": 9.2},  # first made after the restore
    ]
    bound = repeat_bound(calls, since=2.0, until=3.0)
    assert bound == {
        "repeated": 2,
        "window_calls": 2,
        "first_before": 0,
        "first_after": 0,
        "first_after_pids": [],
        "first_after_latest_s": 0.0,
        "window_s": 1.0,
    }
    # An input repeated although its first call completed before the checkpoint's trigger
    # would contradict the explanation: counted.
    early = repeat_bound([*calls, {"i": 0, "t": 9.3}], since=2.0, until=3.0)
    assert (early["repeated"], early["first_before"]) == (3, 1)
    # One whose first call completed after the failed attempt's end: counted too.
    late = repeat_bound(
        [*calls, {"i": 4, "t": 3.5, "pid": 7}, {"i": 4, "t": 9.4, "pid": 8}], since=2.0, until=3.0
    )
    assert (late["repeated"], late["first_after"]) == (3, 1)
    # With the processes its calls ran in and how late the first one was.
    assert late["first_after_pids"] == [("[7, 8]", 1)]
    assert abs(late["first_after_latest_s"] - 0.5) < 1e-9
