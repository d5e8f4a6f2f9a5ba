"""Delegate switching in a loop on a live pipeline: memory, threads and open files before and
after (hardening: switching must leak nothing). Used by tests/test_switch_soak.py (a short run
in CI) and benchmarks/switch_soak.py (500 switches)."""

from __future__ import annotations

import gc
import threading
import time

import psutil

from app.pipeline import InferenceConfig, Pipeline

# Alternate a real reopen on CPU (threads change), a fallback (Core ML off macOS, GPU without
# an adapter) and a model change, so each switch closes one session and opens another.
M, Q = "efficientnet_lite0", "efficientnet_lite0_int8"
STEPS = (  # consecutive steps always differ, so every one really reopens
    {"delegate": "cpu", "options": {"threads": 1}, "model": M},
    {"delegate": "coreml", "options": {"threads": 1}, "model": M},
    {"delegate": "cpu", "options": {"threads": 2}, "model": M},
    {"delegate": "cpu", "options": {"threads": 1}, "model": Q},
    {"delegate": "cpu", "options": {"threads": 2}, "model": Q},
)


def _counts(proc: psutil.Process) -> dict:
    gc.collect()
    return {
        "rss_mib": proc.memory_info().rss / 2**20,
        "threads": threading.active_count(),
        "os_threads": proc.num_threads(),
        "open_files": len(proc.open_files()),
        "fds": proc.num_fds(),
    }


def run_switches(switches: int, warmup: int = 20, source: str = "synthetic:320x240@60") -> dict:
    proc = psutil.Process()
    pipeline = Pipeline(source, InferenceConfig(options={"threads": 1}))
    pipeline.start()
    try:

        def newest_session() -> int:  # session ids count opens; the event list itself is bounded
            return max((e.session_id or 0 for e in pipeline.events()), default=0)

        def switch_all(count: int, offset: int) -> None:
            for i in range(count):
                target = newest_session() + 1
                # STEPS[0] is the starting configuration: begin at STEPS[1] so each step differs.
                pipeline.reconfigure(**STEPS[(offset + i + 1) % len(STEPS)])
                deadline = time.monotonic() + 30
                while newest_session() < target:
                    if pipeline.status().state == "error":
                        raise RuntimeError(pipeline.status().message)
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"switch {offset + i} did not happen within 30 s")
                    time.sleep(0.005)

        switch_all(warmup, 0)  # first switches warm caches and allocator pools
        before = _counts(proc)
        started = time.monotonic()
        switch_all(switches, warmup)
        seconds = time.monotonic() - started
        after = _counts(proc)
        results = pipeline.metrics.snapshot().inferences_total
    finally:
        stopped = pipeline.stop(10)
    return {
        "switches": switches,
        "seconds": seconds,
        "before": before,
        "after": after,
        "inferences": results,
        "stopped": stopped,
        "threads_after_stop": threading.active_count(),
    }
