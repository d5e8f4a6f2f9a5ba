"""Delegate switching in a loop on a live pipeline: memory, threads and open files before and
after (hardening: switching must leak nothing). Used by tests/test_switch_soak.py (a short run
in CI) and benchmarks/soak/switch_soak.py (500 switches)."""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections import Counter

import psutil

from app.pipeline import InferenceConfig, Pipeline
from app.system.heap import HeapStats, heap_stats

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


# The GPU path on a software Vulkan driver (SwiftShader in the tests): a GPU session that runs (the
# software renderer allowed, flagged), the software-renderer refusal (falls back to CPU, visibly),
# and both precisions, so GPU environments and compiled models are created and torn down each time.
def gpu_steps(model: str) -> tuple[dict, ...]:
    return (
        {"delegate": "cpu", "options": {"threads": 1}, "model": model},
        {"delegate": "gpu", "options": {"threads": 1, "allow_software": True, "precision": "fp16"}, "model": model},
        {"delegate": "gpu", "options": {"threads": 1, "allow_software": False}, "model": model},
        {"delegate": "gpu", "options": {"threads": 1, "allow_software": True, "precision": "fp32"}, "model": model},
    )


GPU_STEPS = gpu_steps(Q)


def _heap_in_use(readings: int = 5, apart_s: float = 0.02) -> float:
    """The least of a few readings: the live pipeline holds frames, tensors and a session's buffers in
    flight at any one moment (one read 16.5 MiB above its twin once), while a leak stays in every reading."""
    values = []
    for _ in range(readings):
        gc.collect()
        values.append((heap_stats() or HeapStats.unknown()).in_use)
        time.sleep(apart_s)
    return min(values)  # NaN (off glibc) stays NaN: min of NaNs


def _counts(proc: psutil.Process) -> dict:
    gc.collect()
    return {
        "rss_mib": proc.memory_info().rss / 2**20,
        # A leak grows what is in use; memory the allocator keeps free only moves RSS.
        "heap_in_use_mib": _heap_in_use(),
        "python_blocks": sys.getallocatedblocks(),
        "threads": threading.active_count(),
        "os_threads": proc.num_threads(),
        # By path, so a leak names its file; the kernel's own files (/proc, /sys) are left out: a sampler
        # thread reading its counters holds one open for microseconds (a run counted 4 against 1 once).
        "open_files": sorted(f.path for f in proc.open_files() if not f.path.startswith(("/proc/", "/sys/"))),
        "fds": proc.num_fds(),
    }


def run_switches(
    switches: int,
    warmup: int = 20,
    source: str = "synthetic:320x240@60",
    sample_every: int | None = None,
    steps: tuple[dict, ...] = STEPS,
) -> dict:
    """Switch `switches` times after `warmup`; with `sample_every`, the counts after every so
    many switches too (the curve: a leak climbs with the switches, a warm-up levels off)."""
    proc = psutil.Process()
    pipeline = Pipeline(source, InferenceConfig(**steps[0]))
    pipeline.start()
    try:

        def newest_session() -> int:  # session ids count opens; the event list itself is bounded
            return max((e.session_id or 0 for e in pipeline.events()), default=0)

        def switch_all(count: int, offset: int) -> None:
            for i in range(count):
                target = newest_session() + 1
                # STEPS[0] is the starting configuration: begin at STEPS[1] so each step differs.
                pipeline.reconfigure(**steps[(offset + i + 1) % len(steps)])
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
        samples, done, step = [], 0, sample_every or switches
        while done < switches:
            count = min(step, switches - done)
            switch_all(count, warmup + done)
            done += count
            if sample_every:
                samples.append({"switches": done, **_counts(proc)})
        seconds = time.monotonic() - started
        after = _counts(proc)
        results = pipeline.metrics.snapshot().inferences_total
        used = [(e.report.requested, e.report.used, e.report.software) for e in pipeline.events() if e.report]
    finally:
        stopped = pipeline.stop(10)
    return {
        "switches": switches,
        "seconds": seconds,
        "before": before,
        "after": after,
        "samples": samples,
        "inferences": results,
        "stopped": stopped,
        "sessions": used,  # (requested, used, software) of the sessions still in the bounded event list
        "threads_after_stop": threading.active_count(),
    }


# A GPU session on the software renderer whose device the test layer (tests/harness/vulkan_fault) loses mid-run.
GPU_LOST_STEP = {"delegate": "gpu", "options": {"threads": 1, "allow_software": True, "precision": "fp16"}, "model": Q}


def run_device_losses(
    cycles: int,
    warmup: int = 2,
    source: str = "synthetic:320x240@60",
    sample_every: int | None = None,
    model: str = Q,
) -> dict:
    """A GPU session that loses its device mid-run, `cycles` times on one live pipeline. Needs the
    device-loss layer enabled in this process's environment (tests/harness/vulkan_fault.device_loss_env). Each
    cycle: the GPU session runs until its device is lost, the pipeline must fall back to the CPU with a
    `fallback` event and go on there; then the GPU is requested again (a new device, lost again)."""
    proc = psutil.Process()
    per_session: Counter = Counter()  # (session id, backend) -> results published
    lock = threading.Lock()

    def count(result) -> None:
        with lock:
            per_session[(result.session_id, result.backend)] += 1

    def results(session_id: int, backend: str) -> int:
        with lock:
            return per_session[(session_id, backend)]

    step = {**GPU_LOST_STEP, "model": model}
    pipeline = Pipeline(source, InferenceConfig(**step), on_result=count)
    pipeline.start()
    seen, losses = 0, []

    def next_loss() -> dict:
        nonlocal seen
        deadline = time.monotonic() + 120  # a GPU open on SwiftShader takes 1-3 s, runs ~0.1-0.5 s each
        while True:
            if pipeline.status().state == "error":
                raise RuntimeError(pipeline.status().message)
            fresh = pipeline.worker.log.events_since(seen)
            for event in fresh:
                seen = event.seq
                if event.kind == "fallback" and "failed mid-run" in event.message:
                    gpu = [e for e in pipeline.events() if e.report and e.report.used == "gpu" and e.seq < event.seq]
                    loss = {"message": event.message, "cpu_session": event.session_id,
                            "gpu_session": gpu[-1].session_id if gpu else None,
                            "requested": event.report.requested, "used": event.report.used}  # fmt: skip
                    while results(event.session_id, "cpu") < 3:  # the CPU goes on where the GPU stopped
                        if time.monotonic() > deadline or pipeline.status().state == "error":
                            raise RuntimeError(f"no results on the CPU after the loss: {pipeline.status()}")
                        time.sleep(0.01)
                    loss["gpu_results"] = results(loss["gpu_session"], "gpu") if gpu else 0
                    loss["cpu_results"] = results(event.session_id, "cpu")
                    return loss
            if time.monotonic() > deadline:
                raise RuntimeError(f"no device loss within 120 s ({pipeline.status()})")
            time.sleep(0.01)

    try:
        samples = []
        # Counted in one state, every time: on the CPU after a fallback, before the GPU is asked for again.
        before, started = (_counts(proc), time.monotonic()) if warmup == 0 else (None, 0.0)
        for i in range(warmup + cycles):
            losses.append(next_loss())
            if i + 1 == warmup:
                before, started = _counts(proc), time.monotonic()
            if sample_every and i >= warmup and (i + 1 - warmup) % sample_every == 0:
                samples.append({"losses": i + 1 - warmup, **_counts(proc)})
            if i + 1 < warmup + cycles:
                pipeline.reconfigure(**step)  # after a fail-over this reopens the GPU: a new device
        seconds = time.monotonic() - started
        after = _counts(proc)
        kinds = Counter(e.kind.value for e in pipeline.events())
        status = pipeline.status()
    finally:
        stopped = pipeline.stop(10)
    return {
        "cycles": cycles,
        "seconds": seconds,
        "before": before,
        "after": after,
        "samples": samples,
        "losses": losses[warmup:],
        "event_kinds": dict(kinds),  # of the bounded event list
        "status": status.state.value,
        "stopped": stopped,
        "threads_after_stop": threading.active_count(),
    }
