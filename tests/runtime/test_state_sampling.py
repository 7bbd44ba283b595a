"""Process mode: the Python worker's Beam state sampler gets a short period, so that the
end of a bundle (which joins the sampler's thread) does not wait up to 200 ms for it.
Structural: the sampler objects, not times."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("apache_beam")

from apache_beam.runners.worker import bundle_processor, statesampler  # noqa: E402
from apache_beam.utils.counters import CounterFactory  # noqa: E402

from flink_agents.runtime.flink import _pyflink_internals as internals  # noqa: E402


@pytest.fixture
def beam_defaults() -> Any:
    """Beam's own sampler defaults during the test (a process-mode job that ran before in
    this process shortened them), the ones before put back after it."""
    init = statesampler.StateSampler.__init__
    saved = init.__defaults__
    assert saved is not None
    init.__defaults__ = (*saved[:-1], statesampler.DEFAULT_SAMPLING_PERIOD_MS)
    yield
    init.__defaults__ = saved


def _processor() -> Any:
    """A bundle processor as far as its constructor has got when the function opens."""
    processor = bundle_processor.BundleProcessor.__new__(bundle_processor.BundleProcessor)
    processor.state_sampler = statesampler.StateSampler("fnapi-step-4", CounterFactory())
    return processor


class _Building:
    """Stands for the constructor frame (its ``self``) that opens the function."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor

    def open_function(self) -> bool | None:
        self = self.processor  # noqa: PLW0642 - the frame's ``self`` is what is looked up
        return internals.shorten_state_sampling()


def test_the_processor_being_built_and_later_samplers_get_the_short_period(
    beam_defaults: Any,
) -> None:
    processor = _processor()
    old = processor.state_sampler
    assert old.sampling_period_ms == statesampler.DEFAULT_SAMPLING_PERIOD_MS
    assert _Building(processor).open_function()
    new = processor.state_sampler
    assert new is not old and new.sampling_period_ms == internals.STATE_SAMPLING_MS
    assert new.stage_name == old.stage_name
    later = statesampler.StateSampler("fnapi-step-2", CounterFactory())
    assert later.sampling_period_ms == internals.STATE_SAMPLING_MS
    # A bundle runs with it: started and stopped as Beam's own.
    new.start()
    new.stop()
    assert _Building(processor).open_function()  # again: nothing more to do
    assert processor.state_sampler is new


def test_outside_a_processor_only_later_samplers_change(beam_defaults: Any) -> None:
    assert internals.shorten_state_sampling() is None  # (no processor: nothing to note)
    later = statesampler.StateSampler("fnapi-step-2", CounterFactory())
    assert later.sampling_period_ms == internals.STATE_SAMPLING_MS
