"""Metrics: the windowing math on a fake clock (pure logic), the resource sampler on the real process."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
import psutil
import pytest

from app.metrics.resources import ResourceReading, ResourceSampler, cpu_mark, resident_mb
from app.metrics.window import LATENCY_KEYS, InferenceTiming, Metrics
from tests.helpers.wait import wait_until


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def timing(
    finished_at: float,
    *,
    queue_ms: float = 1.0,
    pre: float = 2.0,
    inf: float = 3.0,
    post: float = 0.5,
    cpu: float = 3.0,
    index: int = 0,
) -> InferenceTiming:
    """A timing that finished at `finished_at`, with the given stage durations (ms)."""
    started = finished_at - (pre + inf + post) / 1e3
    return InferenceTiming(index, started - queue_ms / 1e3, started, finished_at, pre, inf, post, cpu)


def feed_frames(m: Metrics, start: float, stop: float, fps: float) -> int:
    """Frames at start + (i + 0.5) / fps: mid-period stamps keep every event off the window edges."""
    n = round((stop - start) * fps)
    for i in range(n):
        m.frame_captured(start + (i + 0.5) / fps)
    return n


# ---- windowing math (fake clock) ----------------------------------------------------------------


def test_rate_divides_by_the_time_really_covered_not_the_window_length():
    clock = FakeClock(0.0)
    m = Metrics(window_s=5.0, clock=clock)
    feed_frames(m, 0.0, 1.0, 30)
    clock.now = 1.0
    s = m.snapshot()
    assert s.window_s == pytest.approx(1.0)
    assert s.capture_fps == pytest.approx(30.0)  # not 30 / 5 = 6
    assert s.frames_total == 30


def test_window_trims_old_events_and_rates_fall_when_events_stop():
    clock = FakeClock(0.0)
    m = Metrics(window_s=5.0, clock=clock)
    feed_frames(m, 0.0, 10.0, 30)
    for i in range(100):  # 10 inferences/s for 10 s
        m.inference_done(timing((i + 0.5) / 10, index=i))
    clock.now = 10.0
    s = m.snapshot()
    assert (s.window_s, s.capture_fps, s.inference_fps) == pytest.approx((5.0, 30.0, 10.0))
    assert s.latency["inference"].count == 50
    assert (s.frames_total, s.inferences_total) == (300, 100)

    clock.now = 12.0  # nothing new for 2 s: the window (7, 12] holds 3 s of frames
    s = m.snapshot()
    assert s.capture_fps == pytest.approx(90 / 5)
    assert s.inference_fps == pytest.approx(30 / 5)

    clock.now = 100.0
    s = m.snapshot()
    assert (s.capture_fps, s.inference_fps, s.latency["inference"].count) == (0.0, 0.0, 0)
    assert (s.frames_total, s.inferences_total) == (300, 100)  # totals are not windowed


def test_window_contents_stay_exact_through_wraparound_and_growth():
    clock = FakeClock(0.0)
    m = Metrics(window_s=1.0, clock=clock)
    # 100/s for 3 s (the buffer wraps with a moving head), then 3000/s for 1 s (it grows meanwhile).
    stamps = [(i + 0.5) / 100 for i in range(300)] + [3.0 + (i + 0.5) / 3000 for i in range(3000)]
    for i, t in enumerate(stamps):
        clock.now = t
        m.inference_done(timing(t, inf=float(i), index=i))
    clock.now = 4.0
    s = m.snapshot()
    expected = np.arange(300, 3300, dtype=float)
    assert s.inference_fps == pytest.approx(3000.0)
    assert s.latency["inference"].count == 3000
    assert s.latency["inference"].mean == pytest.approx(expected.mean())
    assert s.latency["inference"].p50 == pytest.approx(np.percentile(expected, 50))
    assert s.latency["inference"].max == 3299.0


def test_latency_stats_match_numpy_on_known_data():
    clock = FakeClock(0.0)
    m = Metrics(window_s=5.0, clock=clock)
    rng = np.random.default_rng(7)
    n = 257
    cols = {key: rng.gamma(2.0, 3.0, n) for key in ("queue", "preprocess", "inference", "postprocess")}
    finished = np.sort(rng.uniform(0.1, 4.9, n))
    for i in range(n):
        m.inference_done(
            timing(
                float(finished[i]),
                queue_ms=cols["queue"][i],
                pre=cols["preprocess"][i],
                inf=cols["inference"][i],
                post=cols["postprocess"][i],
            )
        )
    clock.now = 5.0
    s = m.snapshot()
    cols["end_to_end"] = cols["queue"] + cols["preprocess"] + cols["inference"] + cols["postprocess"]
    assert set(s.latency) == set(LATENCY_KEYS)
    for key in LATENCY_KEYS:
        values, st = cols[key], s.latency[key]
        assert st.count == n
        # rel 1e-6: queue/end-to-end go through monotonic timestamps, so they carry float rounding
        assert st.mean == pytest.approx(values.mean(), rel=1e-6), key
        assert st.p50 == pytest.approx(np.percentile(values, 50, method="linear"), rel=1e-6), key
        assert st.p95 == pytest.approx(np.percentile(values, 95, method="linear"), rel=1e-6), key
        assert st.max == pytest.approx(values.max(), rel=1e-6), key


def test_percentiles_interpolate_linearly():
    clock = FakeClock(0.0)
    m = Metrics(clock=clock)
    for i, ms in enumerate([10.0, 20.0, 30.0, 40.0]):
        m.inference_done(timing(0.1 * (i + 1), inf=ms))
    clock.now = 1.0
    st = m.snapshot().latency["inference"]
    assert (st.mean, st.p50, st.p95, st.max, st.count) == pytest.approx((25.0, 25.0, 38.5, 40.0, 4))


def test_queue_and_end_to_end_are_derived_from_the_timestamps():
    t = InferenceTiming(
        7,
        captured_at=10.0,
        started_at=10.012,
        finished_at=10.050,
        preprocess_ms=1.0,
        inference_ms=30.0,
        postprocess_ms=1.0,
        inference_cpu_ms=29.0,
    )
    assert t.queue_ms == pytest.approx(12.0)
    assert t.end_to_end_ms == pytest.approx(50.0)
    clock = FakeClock(9.0)
    m = Metrics(clock=clock)
    m.inference_done(t)
    clock.now = 11.0
    s = m.snapshot()
    assert s.latency["queue"].mean == pytest.approx(12.0)
    assert s.latency["end_to_end"].max == pytest.approx(50.0)


def test_dropped_frames_are_counted_in_total_and_in_window():
    clock = FakeClock(0.0)
    m = Metrics(window_s=5.0, clock=clock)
    m.frames_dropped(3, t=1.0)
    m.frames_dropped(t=6.5)
    m.frames_dropped(2, t=7.0)
    clock.now = 8.0  # window (3, 8]
    s = m.snapshot()
    assert (s.dropped_total, s.dropped_in_window) == (6, 3)


def test_results_the_results_thread_dropped_are_counted_apart_from_inferences_until_a_reset():
    clock = FakeClock(0.0)
    m = Metrics(window_s=5.0, clock=clock)
    m.results_dropped(4)
    m.results_dropped(1)
    m.inference_done(timing(0.5))
    clock.now = 1.0
    s = m.snapshot()
    assert (s.results_dropped_total, s.inferences_total, s.dropped_total) == (5, 1, 0)
    assert s.to_dict()["results_dropped_total"] == 5
    m.reset()
    assert m.snapshot().results_dropped_total == 0


def test_cpu_per_wall_is_the_ratio_of_the_means():
    clock = FakeClock(0.0)
    m = Metrics(clock=clock)
    m.inference_done(timing(0.5, inf=1.0, cpu=2.0))
    m.inference_done(timing(0.6, inf=3.0, cpu=2.0))
    clock.now = 1.0
    s = m.snapshot()
    assert s.cpu_ms_per_inference == pytest.approx(2.0)
    assert s.cpu_per_wall == pytest.approx(1.0)  # a mean of the ratios would give 1.33


def test_empty_snapshot_is_all_zero_and_serialisable():
    clock = FakeClock(3.0)
    s = Metrics(clock=clock).snapshot()
    assert (s.window_s, s.capture_fps, s.inference_fps) == (0.0, 0.0, 0.0)
    assert (s.frames_total, s.inferences_total, s.dropped_total, s.dropped_in_window) == (0, 0, 0, 0)
    assert all((st.mean, st.p50, st.p95, st.max, st.count) == (0, 0, 0, 0, 0) for st in s.latency.values())
    assert (s.cpu_ms_per_inference, s.cpu_per_wall) == (0.0, 0.0)
    assert s.process_cpu_pct_cores is None and s.rss_mb is None and s.gpu_util_pct is None  # no sampler
    d = json.loads(json.dumps(s.to_dict()))
    assert d["latency"]["inference"] == {"mean": 0.0, "p50": 0.0, "p95": 0.0, "max": 0.0, "count": 0}


def test_reset_starts_a_fresh_window():
    clock = FakeClock(0.0)
    m = Metrics(window_s=5.0, clock=clock)
    feed_frames(m, 0.0, 2.0, 30)
    m.inference_done(timing(1.0))
    m.frames_dropped(t=1.5)
    clock.now = 2.0
    m.reset()
    feed_frames(m, 2.0, 2.5, 10)
    clock.now = 2.5
    s = m.snapshot()
    assert (s.frames_total, s.inferences_total, s.dropped_total) == (5, 0, 0)
    assert s.window_s == pytest.approx(0.5)
    assert s.capture_fps == pytest.approx(10.0)


@pytest.mark.slow
def test_memory_stays_bounded_at_1000_inferences_per_second():
    clock = FakeClock(0.0)
    m = Metrics(window_s=5.0, clock=clock)

    def run(seconds: int, offset: int) -> None:
        for i in range(seconds * 1000):
            clock.now = (offset * 1000 + i + 0.5) / 1000
            m.frame_captured()
            m.inference_done(timing(clock.now))

    tracemalloc.start()
    try:
        run(10, 0)  # the window is full after 5 s
        held_at_10s = tracemalloc.get_traced_memory()[0]
        run(30, 10)
        held_at_40s = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held_at_40s - held_at_10s < 16_000  # 30 000 more inferences, no growth
    s = m.snapshot()
    assert s.latency["inference"].count == 5000 and s.inference_fps == pytest.approx(1000.0)


def test_row_cap_bounds_memory_and_shrinks_the_window_consistently():
    clock = FakeClock(5.0)  # the clock does not move while rows arrive: age alone would trim nothing
    m = Metrics(window_s=5.0, clock=clock, max_rows=100)
    for i in range(5000):  # 1000/s from t=5 to t=10
        m.frame_captured(5.0 + (i + 0.5) / 1000)
        m.inference_done(timing(5.0 + (i + 0.5) / 1000))
    clock.now = 10.0
    s = m.snapshot()
    # Only the last 100 rows are held: they cover (t of row 4899, 10], 100 events over 0.1005 s.
    assert s.window_s == pytest.approx(10.0 - (5.0 + 4899.5 / 1000))
    assert s.capture_fps == pytest.approx(100 / s.window_s)
    assert s.inference_fps == pytest.approx(100 / s.window_s)
    assert s.latency["inference"].count == 100 and s.frames_total == 5000


def test_concurrent_writers_and_a_reader_keep_exact_counts():
    clock = FakeClock(95.0)
    m = Metrics(window_s=5.0, clock=clock)
    clock.now = 100.0
    errors: list[BaseException] = []
    done = threading.Event()
    writers, frames, inferences, drops = 4, 3000, 1500, 500

    def guarded(fn: Callable[[], None]) -> Callable[[], None]:
        def wrapper() -> None:
            try:
                fn()
            except BaseException as exc:  # surfaced by the assertion below
                errors.append(exc)

        return wrapper

    def write() -> None:
        for i in range(frames):
            m.frame_captured()
            if i % 2 == 0:
                m.inference_done(timing(99.0, index=i))
            if i % 6 == 0:
                m.frames_dropped(2)

    def read() -> None:
        while not done.is_set():
            s = m.snapshot()
            assert s.latency["inference"].count <= writers * inferences

    reader = threading.Thread(target=guarded(read))
    threads = [threading.Thread(target=guarded(write)) for _ in range(writers)]
    reader.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    reader.join()
    assert not errors, errors
    s = m.snapshot()
    assert (s.frames_total, s.inferences_total, s.dropped_total) == (
        writers * frames,
        writers * inferences,
        writers * drops * 2,
    )
    assert s.latency["inference"].count == writers * inferences
    assert s.dropped_in_window == writers * drops * 2
    assert s.capture_fps == pytest.approx(writers * frames / 5.0)


# ---- resource sampler (the real process) ---------------------------------------------------------


def burn(stop: threading.Event, clock: list[tuple[float, float]]) -> None:
    """One core of work; hashlib releases the GIL on large buffers, so other threads still run.

    Appends (monotonic, this thread's CPU time) after each ~1 MiB hash: what the thread really got, when.
    """
    data = bytes(1 << 20)
    clock.append((time.monotonic(), time.thread_time()))
    while not stop.is_set():
        hashlib.sha256(data).digest()
        clock.append((time.monotonic(), time.thread_time()))


def cpu_pct_between(clock: list[tuple[float, float]], t0: float, t1: float) -> float:
    """The share of a core (%) the burner got from `t0` to `t1`, its CPU time interpolated between its stamps."""
    walls, cpus = zip(*clock, strict=True)
    return 100 * float(np.interp(t1, walls, cpus) - np.interp(t0, walls, cpus)) / (t1 - t0)


@pytest.mark.slow
def test_sampler_sees_a_busy_thread_and_an_idle_process():
    """Each reading covers the time since the one before (its span, at least the interval) and reads the CPU
    the process used then: at least what the busy thread got over that same span, whatever else ran on
    the machine (a crowded one gives the thread less; the reading follows what it got, not what it asked)."""
    ncpu = psutil.cpu_count()
    with ResourceSampler(interval_s=0.1, gpu=False) as sampler:
        stop, clock = threading.Event(), []
        burner = threading.Thread(target=burn, args=(stop, clock))
        t0 = time.monotonic()
        burner.start()
        try:
            assert wait_until(lambda: len(sampler.readings_between(t0 + 0.05, math.inf)) >= 8, timeout=60)
        finally:
            stop.set()
            burner.join()
        t1 = time.monotonic()
        assert wait_until(lambda: len(sampler.readings_between(t1 + 0.05, math.inf)) >= 4, timeout=60)
        readings = sampler.readings_between(0, math.inf)
    assert all(r.span_s is not None and r.sampled_at is not None for r in readings[1:]), readings
    for a, b in itertools.pairwise(readings):
        assert b.sampled_at - b.span_s == pytest.approx(a.sampled_at, abs=1e-9)  # spans tile the time
        assert b.span_s >= 0.1 - 1e-3  # an interval's wait, then the marks
    timed = readings[1:]  # the first, taken on start, has no span yet
    busy = [r for r in timed if r.sampled_at - r.span_s >= clock[0][0] and r.sampled_at <= clock[-1][0]]
    idle = [r for r in timed if r.sampled_at - r.span_s >= t1 + 0.05]
    assert len(busy) >= 4 and len(idle) >= 3, (busy, idle)
    cores = [r.process_cpu_pct_cores for r in busy]
    got = [cpu_pct_between(clock, r.sampled_at - r.span_s, r.sampled_at) for r in busy]
    # The kernel counts process CPU in 10 ms ticks: a 0.1 s span reads within ~10 points of the thread's clock.
    assert abs(np.median(np.subtract(cores, got))) < 15, (cores, got)
    assert max(cores) <= 100 * ncpu
    assert np.median([r.process_cpu_pct_cores for r in idle]) < 25, idle
    for r in busy + idle:
        assert r.process_cpu_pct_machine == pytest.approx(r.process_cpu_pct_cores / ncpu)
        assert 0 <= r.system_cpu_pct <= 100
        assert r.rss_mb > 10


def test_a_childs_cpu_and_memory_are_the_apps():
    """The GPU session in a process of its own (bench --gpu-process) does the app's work in a child: its CPU
    and memory count in the process's, while it runs and after it ends (psutil's children_* once reaped)."""
    me = psutil.Process()
    child = subprocess.Popen([sys.executable, "-c", "b = b'x' * (64 << 20)\nwhile True: pass"])
    try:
        assert wait_until(lambda: psutil.Process(child.pid).memory_info().rss > 64 << 20, timeout=30)
        a, child_a = cpu_mark(), psutil.Process(child.pid).cpu_times()
        time.sleep(0.6)
        child_b, b = psutil.Process(child.pid).cpu_times(), cpu_mark()
        assert resident_mb(me) - me.memory_info().rss / 2**20 > 64
    finally:
        child.kill()
        child.wait()
    burned = child_b.user + child_b.system - child_a.user - child_a.system
    assert burned > 0.05, burned  # it ran at all
    assert b.process_s - a.process_s >= burned - 0.02, (b.process_s - a.process_s, burned)  # a tick's rounding
    assert cpu_mark().process_s >= b.process_s - 0.02  # reaped: still counted, never a drop


def test_sampler_primes_on_start_and_stops_quickly_and_idempotently():
    sampler = ResourceSampler(interval_s=30.0, gpu=False)  # a wait that only stop() can end in time
    assert sampler.latest() == ResourceReading()
    sampler.stop()  # before start: nothing to do
    sampler.start()
    sampler.start()  # already running: no second thread
    first = sampler.latest()
    assert first.rss_mb > 10 and first.process_cpu_pct_cores is None  # CPU % needs two samples
    assert [t.name for t in threading.enumerate()].count("ResourceSampler") == 1
    time.sleep(0.05)
    t0 = time.monotonic()
    sampler.stop()
    assert time.monotonic() - t0 < 10  # an Event wait (ms), not a sleep: the 30 s interval not waited out
    assert not sampler.running
    sampler.stop()
    sampler.interval_s = 0.1
    sampler.start()  # restartable
    assert wait_until(lambda: sampler.latest().process_cpu_pct_cores is not None, timeout=3)
    sampler.stop()


def test_gpu_reading_is_a_percentage_or_none_and_never_fails():
    with ResourceSampler(interval_s=0.05) as sampler:
        assert wait_until(lambda: sampler.latest().span_s is not None)
        r = sampler.latest()
    if r.gpu_util_pct is None:  # no NVIDIA GPU, driver or nvidia-ml-py here
        assert r.gpu_name is None and r.gpu_process_listed is None
    else:
        assert 0 <= r.gpu_util_pct <= 100 and r.gpu_name


def test_sampler_of_another_process_ends_cleanly_when_it_exits():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    try:
        with ResourceSampler(interval_s=0.05, pid=child.pid, gpu=False) as sampler:
            assert wait_until(lambda: sampler.latest().process_cpu_pct_cores is not None)
            child.wait(timeout=10)
            assert wait_until(lambda: not sampler.running)
            assert sampler.latest().rss_mb is None  # gone: no stale reading
    finally:
        child.kill()
        child.wait()


def test_metrics_snapshot_carries_the_sampler_reading():
    with ResourceSampler(interval_s=0.05, gpu=False) as sampler:
        m = Metrics(sampler=sampler)
        assert wait_until(lambda: m.snapshot().process_cpu_pct_cores is not None)
        s = m.snapshot()
    assert s.rss_mb > 10 and 0 <= s.system_cpu_pct <= 100
    assert s.process_cpu_pct_machine == pytest.approx(s.process_cpu_pct_cores / psutil.cpu_count())


def test_the_end_to_end_parts_add_up_to_its_mean_and_say_the_queue_in_inference_cycles():
    from app.metrics.end_to_end import end_to_end_parts

    clock = FakeClock(0.0)
    m = Metrics(window_s=10.0, clock=clock)
    assert end_to_end_parts(m.snapshot()) is None  # nothing measured: nothing to split
    # 100 inferences in 1 s: a 10 ms cycle; each frame waited 30 ms (3 cycles) and 2 ms more after its
    # postprocess (the results thread's hand-off): in no stage, so in the rest.
    for i in range(100):
        done = (i + 0.5) / 100
        started = done - (4.0 + 1.0 + 2.0) / 1e3
        m.inference_done(InferenceTiming(i, started - 30e-3, started, done, 0.5, 4.0, 1.0, 4.0))
    clock.now = 1.0
    parts = end_to_end_parts(m.snapshot())
    assert parts is not None
    assert parts.end_to_end_ms == pytest.approx(37.0) and parts.queue_ms == pytest.approx(30.0)
    assert (parts.inference_ms, parts.postprocess_ms) == (pytest.approx(4.0), pytest.approx(1.0))
    assert parts.rest_ms == pytest.approx(2.0)
    assert parts.queue_cycles == pytest.approx(3.0)
    assert parts.describe() == (
        "mean 37.00 ms = queue 30.00 (3.0 inference cycles) + inference 4.00 + postprocess 1.00"
        " + hand-offs and the rest 2.00"
    )
