"""`bench --compare-with`: A and B alone (each its own fps), then together on the same frames
(agreement, speed ratio, and the contention of sharing the machine, reported, not hidden)."""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from pathlib import Path

from app.backends.describe import speed_sentence
from app.metrics.window import Metrics, MetricsSnapshot
from app.pipeline import Feed, InferenceConfig, InferenceWorker, Pipeline
from app.pipeline.compare import COMPARISON_COLUMNS, ComparePipeline, FrameComparison
from app.recording.rows import RowSink
from app.recording.writer import RecordingWriter, neutralise
from app.tasks.bench import BenchConfig

_POLL_S = 0.05


def _wait(condition: Callable[[], bool], timeout_s: float, feed: Feed) -> None:
    """Poll until `condition`, a timeout, a source that ended, or a side in error (raised, typed)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        for worker in feed.workers.values():
            error = worker.status().error()
            if error is not None:  # the side's own typed error, exit code kept
                raise error
        if time.monotonic() > deadline or feed.finished():
            return
        time.sleep(_POLL_S)


def _alone(bench: BenchConfig, config: InferenceConfig, seconds: float) -> MetricsSnapshot:
    metrics = Metrics(window_s=3600.0)
    pipeline = Pipeline(bench.source, config, pace=bench.pace, loop=True, metrics=metrics)
    pipeline.start()
    try:
        _wait(lambda: metrics.inferences_total >= bench.warmup, 120, pipeline)
        metrics.reset()
        _wait(lambda: False, seconds, pipeline)
        return metrics.snapshot()
    finally:
        pipeline.stop()


def _side(
    snap: MetricsSnapshot, alone: MetricsSnapshot | None, worker: InferenceWorker, config: InferenceConfig
) -> dict:
    report = worker.delegation_report()
    inference = snap.latency.get("inference")
    return {
        "config": config.to_dict(),
        "delegate": report.to_dict() if report else None,
        "together": snap.to_dict(),
        "inference_ms_median": inference.p50 if inference and inference.count else None,
        "alone": None
        if alone is None
        else {
            "inference_fps": alone.inference_fps,
            "inference_ms_median": alone.latency["inference"].p50 if alone.latency["inference"].count else None,
            "cpu_ms_per_inference": alone.cpu_ms_per_inference,
        },
    }


def run_compare_bench(bench: BenchConfig, a: InferenceConfig, b: InferenceConfig, alone_s: float) -> dict:
    alone = {}
    if alone_s > 0:
        alone = {"a": _alone(bench, a, alone_s), "b": _alone(bench, b, alone_s)}
    sinks: dict[str, RowSink] = {}  # filled below; the callbacks only fire once cp has started
    cp = ComparePipeline(
        bench.source,
        a,
        b,
        pace=bench.pace,
        loop=True,
        on_result=lambda side, r: sinks[side].on_result(r) if side in sinks else None,
        on_event=lambda side, e: sinks[side].on_event(e) if side in sinks else None,
    )
    if bench.csv:  # each side also records a full session, so `report A B` can render the pair
        for side in ("a", "b"):
            recorder = RecordingWriter(side_recording(bench.csv, side), {"settings": {"compare_side": side}})
            sinks[side] = RowSink(recorder, lambda side=side: cp.workers[side], lambda: bench.source, cp.metrics[side])
    cp.start()
    started = time.monotonic()
    try:
        _wait(lambda: min(m.inferences_total for m in cp.metrics.values()) >= bench.warmup, 120, cp)
        cp.reset()
        for sink in sinks.values():
            sink.recorder.add_row({"event": "measure", "message": f"warm-up of {bench.warmup} inferences done"})
        measured_from = time.monotonic()
        if bench.frames is not None:
            _wait(lambda: len(cp.comparator.comparisons) >= bench.frames, 3600, cp)
        else:
            _wait(lambda: time.monotonic() - measured_from >= (bench.seconds or 0), (bench.seconds or 0) + 1, cp)
        snaps = cp.snapshots()
        agreement = cp.comparator.summary()
        comparisons = list(cp.comparator.comparisons)
        status = cp.status()
    finally:
        cp.stop()
        for sink in sinks.values():
            sink.recorder.add_row({"event": "stop", "message": "compare bench done"})
            sink.recorder.stop()
    sides = {
        side: _side(snaps[side], alone.get(side), cp.workers[side], config) for side, config in (("a", a), ("b", b))
    }
    a_ms, b_ms = sides["a"]["inference_ms_median"], sides["b"]["inference_ms_median"]
    summary = {
        "mode": "compare",
        "source": {"spec": bench.source},
        "a": sides["a"],
        "b": sides["b"],
        "agreement": agreement.to_dict(),
        "speed": {
            "a_over_b_inference_median": (a_ms / b_ms) if a_ms and b_ms else None,
            "sentence": speed_sentence(a_ms, b_ms, snaps["a"].cpu_ms_per_inference, snaps["b"].cpu_ms_per_inference),
        },
        "shared_preprocessing": {"computed": cp.rgb_cache.computed, "reused": cp.rgb_cache.reused},
        "status": {"state": status.state, "message": status.message},
        "wall_s": time.monotonic() - started,
    }
    if bench.csv:
        write_comparisons(bench.csv, comparisons)
        summary["csv"] = {
            "path": str(bench.csv),
            "rows": len(comparisons),
            "sessions": {side: str(side_recording(bench.csv, side)) for side in ("a", "b")},
        }
    return summary


def side_recording(csv_path: Path, side: str) -> Path:
    """X.csv (the per-frame comparison) -> X-a.csv / X-b.csv (each side's full recording)."""
    return csv_path.with_name(f"{csv_path.stem}-{side}{csv_path.suffix}")


def write_comparisons(path: Path, rows: list[FrameComparison]) -> None:
    """One row per compared frame (docs/csv-format.md, "Comparison CSV")."""
    with open(path, "x", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COMPARISON_COLUMNS)
        for r in rows:
            writer.writerow(
                [
                    r.frame_index,
                    neutralise(r.a_top1),
                    neutralise(r.b_top1),
                    int(r.top1_agree),
                    f"{r.top5_overlap:.3g}",
                    "" if r.max_abs_diff is None else f"{r.max_abs_diff:.6g}",
                    "" if r.tv_distance is None else f"{r.tv_distance:.6g}",
                    f"{r.a_inference_ms:.6g}",
                    f"{r.b_inference_ms:.6g}",
                    f"{r.a_cpu_ms:.6g}",
                    f"{r.b_cpu_ms:.6g}",
                ]
            )
