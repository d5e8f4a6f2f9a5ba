"""CPU time per thread: the runtime's threads told apart from a video decoder's, and read once
per pipeline cycle off the inference thread."""

import multiprocessing
import os
import sys
import time

import cv2
import numpy as np
import pytest

from app.backends import open_session
from app.model.spec import load_model_spec
from app.system.paths import resource_dir
from app.system.thread_cpu import READ_EVERY_S, CpuMeter, decoder_threads, started_by

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread times are read from /proc")


@linux_only
def test_ffmpegs_decoding_threads_are_told_apart_from_the_runtimes():
    capture, opened = started_by(lambda: cv2.VideoCapture(str(resource_dir("resources") / "demo.mp4")))
    try:
        assert capture.read()[0]
        session, runtime = started_by(
            lambda: open_session(load_model_spec("efficientnet_lite0"), "cpu", {"threads": 2})
        )
        try:
            assert runtime and not decoder_threads(runtime)  # XNNPACK's worker: not a decoder
            assert decoder_threads(opened), "FFmpeg started no named decoding thread for the demo clip"
        finally:
            session.close()
    finally:
        capture.release()


@linux_only
def test_runtime_threads_read_apart_from_the_invoke_add_up_to_the_bracketed_reading():
    spec = load_model_spec("efficientnet_lite0")
    session, runtime = started_by(lambda: open_session(spec, "cpu", {"threads": 2}))
    try:
        x = np.zeros(spec.input.shape, np.float32)
        apart = CpuMeter(runtime, bracket_runtime=False)
        bracketed = CpuMeter(runtime)
        totals = {"apart": 0.0, "bracketed": 0.0}
        readings = set()
        started = time.monotonic()
        while time.monotonic() - started < 1.0 or len(readings) < 4:
            apart.start()
            bracketed.start()
            session.run(x)
            b = bracketed.stop()
            a = apart.stop()
            assert a.runtime_threads_ms is None  # not read on the calling thread
            a = a.with_runtime(apart.runtime_per_inference())
            readings.add(a.runtime_threads_ms)
            totals["apart"] += a.runtime_threads_ms
            totals["bracketed"] += b.runtime_threads_ms
            assert a.rest_of_process_ms >= 0
        # Read every READ_EVERY_S, not per inference: far fewer distinct figures than inferences.
        assert 4 <= len(readings) <= 1.0 / READ_EVERY_S * (time.monotonic() - started) + 2, readings
        assert totals["bracketed"] > 10  # the worker really ran
        # The averages cover the same invokes, lagging by one reading: within 25% over >= 1 s.
        assert 0.75 < totals["apart"] / totals["bracketed"] < 1.25, totals
        apart.close()
        assert apart.runtime_per_inference() is None  # closed: "not reported", never a stale figure
    finally:
        session.close()


@linux_only
def test_the_meter_reads_the_threads_wait_for_a_core_apart_from_its_sleep():
    """A thread pinned to one CPU beside a busy process pinned there waits for the core (runnable);
    the same thread sleeping waits for nothing: the two are told apart, not both called wall - CPU."""
    cpu = sorted(os.sched_getaffinity(0))[0]
    meter = CpuMeter(set())
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})  # this thread only (Linux: the calling thread's mask)
    try:
        meter.start()
        time.sleep(0.2)
        slept = meter.stop()
        assert slept.waited_ms is not None and slept.waited_ms < 50, slept
        assert slept.slept_ms_of(200.0) > 150
        spinner = multiprocessing.get_context("spawn").Process(target=_spin_on, args=(cpu, 3.0), daemon=True)
        spinner.start()
        time.sleep(0.5)  # the spinner is up and on the core
        meter.start()
        end = time.perf_counter() + 0.5
        while time.perf_counter() < end:  # busy: each slice of the core is shared with the spinner
            pass
        busy = meter.stop()
        spinner.terminate()
        spinner.join()
        assert busy.waited_ms is not None and busy.waited_ms > 100, busy  # ~half of 500 ms
    finally:
        os.sched_setaffinity(0, before)
        meter.close()


def _spin_on(cpu: int, seconds: float) -> None:
    os.sched_setaffinity(0, {cpu})
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
