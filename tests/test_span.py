"""The measured span's rules and ends, shared by a single bench run and each side of an A/B run."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from app.metrics.memory import read_memory
from app.pipeline import InferenceConfig
from app.system.names import Delegate
from app.system.power_counters import PowerReading
from app.tasks.plan import RunPlan
from app.tasks.span import close_span, open_span, warm_up_done, warmed_up


def _plan(warmup: int, warm_s: float) -> RunPlan:
    return RunPlan(InferenceConfig(delegate=Delegate.CPU), warmup=warmup, warm_s=warm_s)


def test_the_warm_up_needs_both_its_inferences_and_its_seconds() -> None:
    plan = _plan(warmup=10, warm_s=5.0)
    assert not warmed_up(plan, 9, 60.0)  # seconds alone do not end it
    assert not warmed_up(plan, 500, 4.9)  # nor inferences alone
    assert warmed_up(plan, 10, 5.0)
    assert warmed_up(_plan(0, 0.0), 0, 0.0)  # no warm-up: the span opens at once


def test_the_measure_event_says_which_warm_up_ended() -> None:
    assert warm_up_done(_plan(10, 0.0)) == "warm-up of 10 inferences done"
    assert warm_up_done(_plan(10, 5.0)) == "warm-up of 10 inferences over 5 s or more done"


def test_each_end_reads_the_time_cpu_and_power_and_the_close_reads_memory() -> None:
    reading = PowerReading(t=1.0)
    opened = open_span(lambda: reading)
    closed = close_span(lambda: None)
    assert opened.t <= closed.t
    assert opened.power is reading and closed.power is None
    assert opened.memory is None
    assert closed.cpu[0].process_s >= opened.cpu[0].process_s
    assert (closed.memory is not None) == (read_memory() is not None)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the peak resident set resets through /proc (Linux)")
def test_a_span_opened_after_a_spike_reads_its_own_peak_not_the_spike() -> None:
    spike = np.ones(200 * 2**20, dtype=np.uint8)  # 200 MiB touched, then freed
    del spike
    before = read_memory()
    assert before is not None and before.hwm_mb is not None
    if before.hwm_mb - before.rss_mb < 150:
        pytest.skip("the allocator kept the spike resident; nothing to reset")
    open_span(lambda: None)
    closed = close_span(lambda: None)
    assert closed.memory is not None and closed.memory.hwm_mb is not None
    # The peak above the resident set: the spike's 200 MiB before, none of it after the span's reset. Compared
    # as a gap, since another thread of this process may grow the resident set meanwhile (by 89 MiB, seen once).
    gap_before = before.hwm_mb - before.rss_mb
    assert closed.memory.hwm_mb - closed.memory.rss_mb < gap_before - 150, (before, closed.memory)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="children's memory is read through /proc (Linux)")
def test_the_close_counts_a_child_process_peak_as_a_gpu_process_would_hold_it() -> None:
    import subprocess

    hold = "import sys, numpy; a = numpy.ones(120 * 2**20, numpy.uint8); print('held', flush=True); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        own = read_memory()
        closed = close_span(lambda: None)
        assert own is not None and own.hwm_mb is not None
        assert closed.memory is not None and closed.memory.hwm_mb is not None
        assert closed.memory.hwm_mb >= own.hwm_mb + 120  # the child's 120 MiB are the run's too
    finally:
        child.communicate("")
