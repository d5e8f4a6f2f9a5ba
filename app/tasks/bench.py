"""`delegate-scope bench`: the headless twin of the window. Runs the live pipeline on a source
for N frames or S seconds and summarises what the window would have shown."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from app.metrics.bottleneck import find_bottleneck
from app.metrics.resources import CpuMark, ResourceSampler, cpu_mark, cpu_percentages
from app.metrics.window import Metrics, MetricsSnapshot
from app.pipeline import InferenceConfig, Pipeline, Result, State
from app.recording.rows import RowSink
from app.recording.writer import RecordingWriter
from app.sources import CapturedFrames


@dataclass(frozen=True)
class BenchConfig:
    source: str | CapturedFrames = "demo"  # a spec, or frames captured once (a sweep replays them)
    frames: int | None = 300  # inferences to measure after warm-up (None: use seconds)
    seconds: float | None = None
    warmup: int = 10
    pace: bool = True
    csv: Path | None = None
    pin_cpus: bool = True  # the inference thread on CPUs of its own (app/system/cpu_affinity.py)
    inference_cpus: int | None = None  # how many; None: by backend (cpu_affinity.inference_cpus)
    decode_threads: int | None = None  # FFmpeg's, for video files (0: one per core; None: by the machine)


_POLL_S = 0.05  # how often the run's end and the pipeline's status are checked
# A snapshot of a long run costs milliseconds of GIL (O(rows): 3.8 ms at 18,000 inferences
# here), taken from the threads being measured: the progress line is refreshed twice a second.
_PROGRESS_EVERY_S = 0.5


def run_bench(
    bench: BenchConfig,
    config: InferenceConfig,
    progress: Callable[[int, int | None, MetricsSnapshot], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> dict:
    """Run the pipeline; return the summary (metrics snapshot, delegate facts, events).
    `on_result` sees every published result, warm-up included (a sweep's agreement)."""
    sampler = ResourceSampler()
    sampler.start()
    metrics = Metrics(window_s=3600.0, sampler=sampler)  # bench summarises the whole measured run
    recorder = RecordingWriter(bench.csv) if bench.csv else None
    pipeline: Pipeline | None = None
    sink = RowSink(recorder, lambda: pipeline.worker, lambda: bench.source, metrics) if recorder else None  # type: ignore[union-attr]
    pipeline = Pipeline(
        bench.source,
        config,
        pace=bench.pace,
        loop=bench.frames is not None or bench.seconds is not None,
        metrics=metrics,
        on_result=lambda r: _first_result(first, r, sink, on_result),
        on_event=sink.on_event if sink else None,
        pin_cpus=bench.pin_cpus,
        inference_cpus=bench.inference_cpus,
        source_options={"decode_threads": bench.decode_threads},
    )
    started = time.monotonic()
    pipeline.start()
    measured_from: float | None = None
    first: list[float] = []  # monotonic time of the first result, for the start-up figure
    cpu_from = cpu_to = None
    try:
        shown = -float("inf")
        while True:
            time.sleep(_POLL_S)
            # Counters only: a snapshot is O(rows) and holds the GIL the measured threads need.
            done = metrics.inferences_total
            status = pipeline.status()
            if status.state == State.ERROR:
                break
            if measured_from is None and done >= bench.warmup:
                metrics.reset()  # warm-up inferences (first-run costs, caches) stay out of the figures
                measured_from = time.monotonic()
                cpu_from = (cpu_mark(), time.time())
                if recorder:
                    recorder.add_row({"event": "measure", "message": f"warm-up of {bench.warmup} inferences done"})
                continue
            if measured_from is None:
                continue
            if progress and time.monotonic() - shown >= _PROGRESS_EVERY_S:
                shown = time.monotonic()
                progress(done, bench.frames, metrics.snapshot())
            if bench.frames is not None and done >= bench.frames:
                break
            if bench.seconds is not None and time.monotonic() - measured_from >= bench.seconds:
                break
            if pipeline.finished():
                break
    finally:
        snap = metrics.snapshot()
        cpu_to = (cpu_mark(), time.time())
        measured_cpu = _measured_cpu(cpu_from, cpu_to) if cpu_from else None
        # The summary describes the measured run, so its CPU % cover that whole span, not the
        # sampler's newest 0.5 s reading (which the per-row CSV columns keep).
        snap_dict = snap.to_dict()
        if measured_cpu:
            snap_dict.update({k: measured_cpu[k] for k in _SPAN_CPU_KEYS})
        status = pipeline.status()  # before stop(), which would overwrite an error with "stopped"
        pipeline.stop()
        sampler.stop()
        report = pipeline.delegation_report()
        if recorder:
            recorder.add_row({"event": "stop", "message": status.message})
            recorder.update_metadata(settings={"bench": bench.__dict__, "config": config.to_dict()}, summary=snap_dict)
            rec_state = recorder.stop()
    source = pipeline.source_info()
    summary = {
        "source": {"spec": _spec(bench.source), **(source.__dict__ if source else {})},
        "config": config.to_dict(),
        "delegate": report.to_dict() if report else None,
        "cpu_affinity": split.to_dict() if (split := pipeline.cpu_split()) else None,
        "metrics": snap_dict,
        # Which stage set the rate: a delegate comparison by throughput means nothing unless inference.
        "bottleneck": b.to_dict() if (b := find_bottleneck(snap, pipeline.config.throttle_ms)) else None,
        # Frames that repeat an image (the synthetic cycle) reuse its tensor: the rate then shows
        # the delegate, and each frame's preprocess figure is what computing that image cost.
        "preprocessing": {"repeated_images_reused": pipeline.rgb_cache.repeats_reused},
        "status": {"state": status.state, "message": status.message, "exit_code": status.exit_code},
        "events": [{k: v for k, v in e.__dict__.items() if k != "report"} for e in pipeline.events()],
        "wall_s": time.monotonic() - started,
        # From the process's creation (interpreter start, imports included) to the first result.
        "first_result_s": _process_age_s() - (time.monotonic() - first[0]) if first else None,
        # Process and system CPU over exactly the measured span (also in "metrics" above).
        "measured_cpu": measured_cpu,
    }
    if recorder:
        summary["csv"] = {
            "path": str(bench.csv),
            "rows": rec_state.rows,
            "lost_rows": rec_state.lost_rows,
            "error": rec_state.error,
        }
    return summary


def _spec(source: str | CapturedFrames) -> str:
    return source if isinstance(source, str) else source.spec


_SPAN_CPU_KEYS = ("process_cpu_pct_machine", "process_cpu_pct_cores", "system_cpu_pct")


def _measured_cpu(start: tuple[CpuMark, float], end: tuple[CpuMark, float]) -> dict:
    """Process and system CPU between two (mark, wall clock) readings, as the sampler counts them."""
    span = cpu_percentages(start[0], end[0], os.cpu_count() or 1)
    return {"from_wall": start[1], "to_wall": end[1], "seconds": span.span_s if span else 0.0} | {
        k: getattr(span, k) if span else 0.0 for k in _SPAN_CPU_KEYS
    }


def _process_age_s() -> float:
    """Seconds since this process was created.

    On Linux: CLOCK_BOOTTIME now minus the start time /proc/self/stat gives in clock ticks since
    boot (exact to a tick). psutil's create_time() adds that to the boot time, which the kernel
    gives on the wall clock in whole seconds: measured 1.0 s early on a VM, so every start-up
    figure read 1 s long. Elsewhere psutil's figure is all there is.
    """
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, AttributeError, ValueError, IndexError):
        return time.time() - psutil.Process().create_time()


def _first_result(
    first: list[float], result: Result, sink: RowSink | None, also: Callable[[Result], None] | None
) -> None:
    if not first:
        first.append(time.monotonic())
    if sink:
        sink.on_result(result)
    if also:
        also(result)
