"""CPU time per thread: the runtime's threads told apart from a video decoder's, and read once
per pipeline cycle off the inference thread."""

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
