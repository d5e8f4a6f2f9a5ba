"""`delegate-scope bench`: the headless twin of the window. Runs the live pipeline on a source
for N frames or S seconds and summarises what the window would have shown."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil

from app.metrics import Metrics, MetricsSnapshot, ResourceSampler
from app.pipeline import Event, InferenceConfig, Pipeline, Result
from app.recording import SessionRecorder

_SNAPSHOT_EVERY_S = 0.25  # per-row fps/CPU columns come from a snapshot this fresh


@dataclass(frozen=True)
class BenchConfig:
    source: str = "demo"
    frames: int | None = 300  # inferences to measure after warm-up (None: use seconds)
    seconds: float | None = None
    warmup: int = 10
    pace: bool = True
    csv: Path | None = None
    pin_cpus: bool = True  # the inference thread on CPUs of its own (app/cpu_affinity.py)


class RowSink:
    """Turns results and events into recording rows, with fps/CPU from a recent metrics snapshot."""

    def __init__(self, recorder: SessionRecorder, pipeline_ref: Callable[[], Pipeline], metrics: Metrics) -> None:
        self.recorder, self._pipeline, self.metrics = recorder, pipeline_ref, metrics
        self._snapshot: MetricsSnapshot | None = None
        self.models: dict[str, dict] = {}  # model_id -> name, sha256, path, input (the sidecar resolves ids)
        self.sessions: dict[str, dict | None] = {}  # session id -> delegate facts
        self._snapshot_at = 0.0

    def _recent(self) -> MetricsSnapshot:
        now = time.monotonic()
        if self._snapshot is None or now - self._snapshot_at > _SNAPSHOT_EVERY_S:
            self._snapshot, self._snapshot_at = self.metrics.snapshot(), now
        return self._snapshot

    def _context(self) -> dict:
        pipeline = self._pipeline()
        config, report = pipeline.config, pipeline.session_report()
        return {
            "source": pipeline.source_spec,
            "backend_requested": report.requested if report else config.delegate,
            "backend_used": report.used if report else "",
            "threads": (report.options.get("threads") if report else None) or config.options.get("threads"),
            "throttle_ms": config.throttle_ms,
        }

    def on_result(self, result: Result) -> None:
        snap, t = self._recent(), result.timing
        top = result.top
        self.recorder.add_row(
            {
                **self._context(),
                "frame_id": result.frame_index,
                "model": result.model,
                "model_id": result.model_id,
                "backend_used": result.backend,
                "queue_ms": t.queue_ms,
                "preprocess_ms": t.preprocess_ms,
                "inference_ms": t.inference_ms,
                "postprocess_ms": t.postprocess_ms,
                "end_to_end_ms": t.end_to_end_ms,
                "inference_cpu_ms": t.inference_cpu_ms,
                "capture_fps": snap.capture_fps,
                "inference_fps": snap.inference_fps,
                "process_cpu_pct": snap.process_cpu_pct_machine,
                "system_cpu_pct": snap.system_cpu_pct,
                "rss_mb": snap.rss_mb,
                "gpu_util_pct": snap.gpu_util_pct,
                "top1_index": top[0].index,
                "top1_label": top[0].label,
                "top1_score": top[0].score,
                "top_indices": "|".join(str(p.index) for p in top),
                "top_labels": "|".join(p.label for p in top),
                "top_scores": "|".join(f"{p.score:.6g}" for p in top),
            },
            wall_time=time.time(),
            monotonic=t.finished_at,
        )

    def on_event(self, event: Event) -> None:
        row = {**self._context(), "event": event.kind, "message": event.message}
        if event.report is not None:
            row.update(backend_requested=event.report.requested, backend_used=event.report.used)
        if event.model is not None:
            row.update(model=event.model["name"], model_id=event.model["id"])
            self.models[event.model["id"]] = event.model
            self.sessions[str(event.session_id)] = event.report.to_dict() if event.report else None
            self.recorder.update_metadata(models=self.models, sessions=self.sessions)
        self.recorder.add_row(row, wall_time=event.wall_time, monotonic=event.at)


_POLL_S = 0.05  # how often the run's end and the pipeline's status are checked
# A snapshot of a long run costs milliseconds of GIL (O(rows): 3.8 ms at 18,000 inferences
# here), taken from the threads being measured: the progress line is refreshed twice a second.
_PROGRESS_EVERY_S = 0.5


def run_bench(
    bench: BenchConfig,
    config: InferenceConfig,
    progress: Callable[[int, int | None, MetricsSnapshot], None] | None = None,
) -> dict:
    """Run the pipeline; return the summary (metrics snapshot, delegate facts, events)."""
    sampler = ResourceSampler()
    sampler.start()
    metrics = Metrics(window_s=3600.0, sampler=sampler)  # bench summarises the whole measured run
    recorder = SessionRecorder(bench.csv) if bench.csv else None
    pipeline: Pipeline | None = None
    sink = RowSink(recorder, lambda: pipeline, metrics) if recorder else None  # type: ignore[arg-type]
    pipeline = Pipeline(
        bench.source,
        config,
        pace=bench.pace,
        loop=bench.frames is not None or bench.seconds is not None,
        metrics=metrics,
        on_result=lambda r: _first_result(first, r, sink),
        on_event=sink.on_event if sink else None,
        pin_cpus=bench.pin_cpus,
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
            if status.state == "error":
                break
            if measured_from is None and done >= bench.warmup:
                metrics.reset()  # warm-up inferences (first-run costs, caches) stay out of the figures
                measured_from = time.monotonic()
                cpu_from = _CpuClock()
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
        cpu_to = _CpuClock()
        measured_cpu = cpu_from.until(cpu_to) if cpu_from else None
        # The summary describes the measured run, so its CPU % cover that whole span, not the
        # sampler's newest 0.5 s reading (which the per-row CSV columns keep).
        snap_dict = snap.to_dict()
        if measured_cpu:
            snap_dict.update({k: measured_cpu[k] for k in _SPAN_CPU_KEYS})
        status = pipeline.status()  # before stop(), which would overwrite an error with "stopped"
        pipeline.stop()
        sampler.stop()
        report = pipeline.session_report()
        if recorder:
            recorder.add_row({"event": "stop", "message": status.message})
            recorder.update_metadata(settings={"bench": bench.__dict__, "config": config.__dict__}, summary=snap_dict)
            rec_state = recorder.stop()
    source = pipeline.source_info()
    summary = {
        "source": {"spec": bench.source, **(source.__dict__ if source else {})},
        "config": {**config.__dict__, "model": str(config.model), "labels": str(config.labels or "")},
        "delegate": report.to_dict() if report else None,
        "cpu_affinity": split.to_dict() if (split := pipeline.cpu_split()) else None,
        "metrics": snap_dict,
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


_SPAN_CPU_KEYS = ("process_cpu_pct_machine", "process_cpu_pct_cores", "system_cpu_pct")


class _CpuClock:
    """Process CPU seconds (os.times: user + system, all threads), the machine's busy and total
    CPU seconds (as ResourceSampler counts them) and wall time at one moment."""

    def __init__(self) -> None:
        t, st = os.times(), psutil.cpu_times()
        self.cpu_s, self.wall, self.monotonic = t.user + t.system, time.time(), time.monotonic()
        self.sys_total = sum(st) - getattr(st, "guest", 0.0) - getattr(st, "guest_nice", 0.0)
        self.sys_busy = self.sys_total - st.idle - getattr(st, "iowait", 0.0)

    def until(self, end: _CpuClock) -> dict:
        span = end.monotonic - self.monotonic
        cores = (end.cpu_s - self.cpu_s) / span * 100 if span > 0 else 0.0
        total = end.sys_total - self.sys_total
        system = min(max(100.0 * (end.sys_busy - self.sys_busy) / total, 0.0), 100.0) if total > 0 else 0.0
        return {
            "from_wall": self.wall,
            "to_wall": end.wall,
            "seconds": span,
            "process_cpu_pct_cores": cores,
            "process_cpu_pct_machine": cores / (os.cpu_count() or 1),
            "system_cpu_pct": system,
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


def _first_result(first: list[float], result: Result, sink: RowSink | None) -> None:
    if not first:
        first.append(time.monotonic())
    if sink:
        sink.on_result(result)
