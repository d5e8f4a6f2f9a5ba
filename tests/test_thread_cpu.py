"""CPU time per thread: the runtime's threads told apart from a video decoder's, and read once
per pipeline cycle off the inference thread."""

import multiprocessing
import os
import sys
import time
from pathlib import Path

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
    # Two decoding threads asked for: FFmpeg's default follows the CPUs the calling thread may use, which
    # another test in the same worker may have narrowed to one (a fresh clone then saw no decoder thread).
    clip = str(resource_dir("resources") / "demo.mp4")
    capture, opened = started_by(lambda: cv2.VideoCapture(clip, cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, 2]))
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
        time.sleep(0.5)
        slept = meter.stop()
        # Waking up, it may wait for the core once (a loaded machine: tens of ms); the sleep is not a wait.
        assert slept.waited_ms is not None and slept.waited_ms < 250, slept
        assert slept.slept_ms_of(500.0) > 250
        spawn = multiprocessing.get_context("spawn")
        spinning = spawn.Event()
        spinner = spawn.Process(target=_spin_on, args=(cpu, 3.0, spinning), daemon=True)
        spinner.start()
        assert spinning.wait(60)  # the spinner is up and on the core (its start takes a loaded machine seconds)
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


def _spin_on(cpu: int, seconds: float, spinning) -> None:
    os.sched_setaffinity(0, {cpu})
    spinning.set()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.slow
@linux_only
def test_a_python_thread_started_while_the_model_compiles_is_not_the_runtimes():
    """The Ops view's CPU share read 0.999 once beside busy processes: threads that appear while the model
    compiles are taken as the runtime's, and a thread another part of the process started meanwhile was
    counted with them. Here a busy Python thread starts during the compile: it is left out, XNNPACK's one
    worker (2 threads) is kept, and the live profile's share stays what the runs had."""
    import subprocess
    import threading

    from app.backends.options import BackendOptions
    from app.profile import background
    from app.profile.background import LiveProfiler, Target
    from app.profile.cpu import compiled_and_warm, runtime_workers

    spec = load_model_spec("efficientnet_lite0_int8")
    done = threading.Event()
    busy: list[threading.Thread] = []

    def spin() -> None:
        while not done.is_set():
            pass

    def compile_beside_a_busy_thread(spec, threads):  # compiled_and_warm's signature
        model = compiled_and_warm(spec, threads)
        busy.append(threading.Thread(target=spin, daemon=True))
        busy[-1].start()
        return model

    model, found = started_by(lambda: compile_beside_a_busy_thread(spec, 2))
    try:
        assert busy[0].native_id not in found and len(found) == 1  # XNNPACK's worker, not the Python thread
    finally:
        model.close()
        done.set()
    assert runtime_workers({1, 2}, 2) is None and runtime_workers({1}, 2) == {1} and runtime_workers(set(), 1) == set()

    done.clear()
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    profiler = LiveProfiler(lambda: {"a": Target("efficientnet_lite0_int8", "cpu", BackendOptions(threads=1))},
                            interval_s=0.2, runs=4)  # fmt: skip
    real, background.compiled_and_warm = background.compiled_and_warm, compile_beside_a_busy_thread
    try:
        profiler.start()
        deadline = time.monotonic() + 60
        while (live := profiler.latest().get("a")) is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        profiler.stop()
        background.compiled_and_warm = real
        done.set()
        for s in spinners:
            s.kill()
        for s in spinners:
            s.wait()  # reaped here, not by a later test's Popen (which was charged their CPU)
    assert live is not None and live.profile is not None, live
    # Beside two busy processes at nice +10 the runs had 3-6% of the CPU here; with the busy Python thread
    # counted, 0.24-0.65.
    assert live.profile.cpu_share is not None and live.profile.cpu_share < 0.2, live.profile.cpu_share


# A fresh process: OpenCV's worker pool is started by the first parallel call of the process, here the
# "capture" thread's, while another thread opens a 1-thread XNNPACK session (which starts no thread).
POOL_DURING_OPEN = """
import json, threading
import numpy as np
from app.backends import open_session
from app.model.spec import load_model_spec
from app.system.thread_cpu import name_this_thread, started_by, thread_ids

spec = load_model_spec("efficientnet_lite0_int8")
go, pooled = threading.Event(), threading.Event()

def capture():
    name_this_thread("capture")
    go.wait()
    import cv2
    image = np.zeros((1200, 1600, 3), np.uint8)
    for _ in range(20):
        cv2.resize(image, (800, 600))
        cv2.GaussianBlur(image, (9, 9), 0)
    out["opencv_threads"] = cv2.getNumThreads()
    pooled.set()

out = {}
def inference():
    name_this_thread("inference")
    def open_beside_the_pool():
        before = thread_ids()
        go.set()
        pooled.wait()
        session = open_session(spec, "cpu", {"threads": 1}, fallback=False)
        out["appeared"] = len(thread_ids() - before - {t.native_id for t in threading.enumerate()})
        return session
    session, found = started_by(open_beside_the_pool)
    out["runtime"] = len(found)
    session.close()

threads = [threading.Thread(target=capture), threading.Thread(target=inference)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(out))
"""


@linux_only
def test_a_pool_another_pipeline_thread_starts_while_a_session_opens_is_not_the_runtimes():
    """The window's Offload line read a 1-thread CPU run as multi-threaded (CPU 209% of wall): OpenCV's pool,
    started by the capture thread during the open, was taken as the runtime's threads, and its work as the
    inference's. Named pipeline threads pass their name to the threads they start, so it is left out."""
    import json
    import subprocess

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", POOL_DURING_OPEN], capture_output=True, text=True, timeout=120,
                          cwd=root)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out["opencv_threads"] < 2:  # the child's own: this process's is whatever an earlier test set
        pytest.skip("OpenCV runs single-threaded here: no pool to tell apart")
    assert out["appeared"] >= 1, out  # the pool did start during the open ...
    assert out["runtime"] == 0, out  # ... and is not the 1-thread session's
