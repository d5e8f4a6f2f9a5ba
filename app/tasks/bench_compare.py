"""`bench --compare-with`: A and B alone (each its own fps), then together on the same frames
(agreement, speed ratio, and the contention of sharing the machine, reported, not hidden)."""

from __future__ import annotations

import csv
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from app.backends import DelegationReport
from app.backends.describe import speed_sentence
from app.metrics.energy import PowerFigures, paced_clock_sentence, power_figures
from app.metrics.memory import MemoryFigures, MemoryReading
from app.metrics.resources import ResourceSampler
from app.metrics.rounds import Rounds, measure_rounds
from app.metrics.trace import TraceLog
from app.metrics.window import Metrics, MetricsSnapshot
from app.pipeline import Feed, InferenceConfig, InferenceWorker, Pipeline, Status
from app.pipeline.compare import (
    COMPARISON_COLUMNS,
    COMPARISON_TASK_COLUMNS,
    COMPARISON_TEXT_COLUMNS,
    AgreementSummary,
    ComparePipeline,
    FrameComparison,
    comparison_row,
)
from app.pipeline.preprocess_thread import PreprocessPlacement
from app.recording.rows import RowSink
from app.recording.trace import TraceFacts, write_trace
from app.recording.writer import RecordingWriter, neutralise
from app.sources import CapturedFrames
from app.system.power_counters import PowerReading
from app.tasks.bench import not_a_classifier, read_idle, run_memory
from app.tasks.plan import RunPlan, RunState
from app.tasks.span import close_span, open_span, warm_up_done, warmed_up

_POLL_S = 0.05
_PROGRESS_EVERY_S = 0.5  # as a single run's progress line


def _wait(condition: Callable[[], bool], timeout_s: float, feed: Feed, wake: threading.Event | None = None) -> None:
    """Poll until `condition`, a timeout, a source that ended, or a side in error (raised, typed);
    `wake` set: look again at once rather than at the next poll."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        for worker in feed.workers.values():
            error = worker.status().error()
            if error is not None:  # the side's own typed error, exit code kept
                raise error
        if time.monotonic() > deadline or feed.finished():
            return
        if wake is None:
            time.sleep(_POLL_S)
        elif wake.wait(_POLL_S):
            wake.clear()


def _warm_up(feed: Feed, metrics: list[Metrics], plan: RunPlan) -> None:
    """Wait until every side's warm-up is over, by the rule a single run's span opens on (`warmed_up`):
    `warmup` inferences each and `warm_s` seconds since the first result of the slowest side."""
    first: list[float] = []

    def done() -> bool:
        counts = [m.inferences_total for m in metrics]
        if not first and min(counts) > 0:
            first.append(time.monotonic())
        return bool(first) and warmed_up(plan, min(counts), time.monotonic() - first[0])

    _wait(done, 120 + plan.warm_s, feed)


def _alone(plan: RunPlan, config: InferenceConfig, seconds: float) -> MetricsSnapshot:
    metrics = Metrics(window_s=3600.0)
    pipeline = Pipeline(replace(plan.feed, loop=True), config, metrics=metrics)
    pipeline.start()
    try:
        _warm_up(pipeline, [metrics], plan)
        metrics.reset()
        _wait(lambda: False, seconds, pipeline)
        return metrics.snapshot()
    finally:
        pipeline.stop()


@dataclass(frozen=True)
class AloneFigures:
    """A side run alone (before the two share the machine)."""

    inference_fps: float
    inference_ms_median: float | None
    cpu_ms_per_inference: float

    def to_dict(self) -> dict[str, float | None]:
        return asdict(self)


@dataclass(frozen=True)
class SideSummary:
    config: InferenceConfig
    delegate: DelegationReport | None
    together: MetricsSnapshot  # both sides running
    alone: AloneFigures | None
    rounds: Rounds | None = None  # the together span in rounds: each figure's median and spread (gates)
    model_sha256: str | None = None  # what a --baseline must share (app/gates/stored.py)
    memory: MemoryFigures | None = None  # init: this side's open; peak, steady, GPU: the process's (both sides)

    @property
    def inference_ms_median(self) -> float | None:
        inference = self.together.latency.get("inference")
        return inference.p50 if inference and inference.count else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "delegate": self.delegate.to_dict() if self.delegate else None,
            "together": self.together.to_dict(),
            "inference_ms_median": self.inference_ms_median,
            "alone": self.alone.to_dict() if self.alone else None,
            "rounds": self.rounds.to_dict() if self.rounds else None,
            "model_sha256": self.model_sha256,
            **({"memory": self.memory.to_dict()} if self.memory is not None else {}),
        }


@dataclass(frozen=True)
class CompareRecording:
    path: Path  # the per-frame comparison
    rows: int
    sessions: Mapping[str, Path]  # each side's full recording

    def to_dict(self) -> dict[str, object]:
        return {"path": str(self.path), "rows": self.rows, "sessions": {k: str(v) for k, v in self.sessions.items()}}


@dataclass(frozen=True)
class CompareSummary:
    """What `bench --compare-with` measured; `to_dict()` is its --json."""

    source: str | CapturedFrames
    paced: bool  # the source ran at its own rate (False: --no-pace); a paced GPU may stay at its idle clock
    a: SideSummary
    b: SideSummary
    agreement: AgreementSummary
    speed_sentence: str
    shared_computed: int  # preprocessing both sides share: computed once ...
    shared_reused: int  # ... and reused by the other side
    shared_computed_again: int  # ... or computed again, its pixels gone from the cache before that side took them
    status: Status
    wall_s: float
    csv: CompareRecording | None = None
    # The power state over the measured span (both sides at once): the GPU's energy per inference counts
    # the inferences of the sides on the GPU; clock_sentence: a paced GPU left at its idle clock, said so
    power: PowerFigures | None = None
    clock_sentence: str | None = None
    placement: PreprocessPlacement | None = None  # the shared preprocessing's thread, and why
    plan: RunPlan | None = None  # every setting, as the run ran
    cancelled: bool = False  # the caller cancelled it (RunState.cancel) before its end
    trace: TraceFacts | None = None  # the timeline written (bench --trace): both sides and the shared capture

    @property
    def a_over_b(self) -> float | None:
        a_ms, b_ms = self.a.inference_ms_median, self.b.inference_ms_median
        return (a_ms / b_ms) if a_ms and b_ms else None

    def side(self, name: str) -> SideSummary:
        return self.a if name == "a" else self.b

    def to_dict(self) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "mode": "compare",
            "source": {"spec": self.source, "paced": self.paced},
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "agreement": self.agreement.to_dict(),
            "speed": {
                "a_over_b_inference_median": self.a_over_b,
                "sentence": self.speed_sentence,
                "clock_sentence": self.clock_sentence,
            },
            "shared_preprocessing": {
                "computed": self.shared_computed,
                "reused": self.shared_reused,
                "computed_again": self.shared_computed_again,
                **({"placement": self.placement.to_dict()} if self.placement else {}),
            },
            "status": {"state": self.status.state, "message": self.status.message},
            "wall_s": self.wall_s,
        }
        if self.csv:
            summary["csv"] = self.csv.to_dict()
        if self.power is not None:
            summary["power"] = self.power.to_dict()
        if self.plan is not None:
            summary["plan"] = self.plan.to_dict()
        if self.trace is not None:
            summary["trace"] = self.trace.to_dict()
        return summary


def _alone_figures(alone: MetricsSnapshot | None) -> AloneFigures | None:
    if alone is None:
        return None
    inference = alone.latency["inference"]
    return AloneFigures(alone.inference_fps, inference.p50 if inference.count else None, alone.cpu_ms_per_inference)


def run_compare_bench(plan: RunPlan, state: RunState | None = None) -> CompareSummary:
    """A/B as `plan` says (`plan.compare` is side B): each side alone for `plan.alone_s`, then both on the
    same frames over the measured span. `state`: progress and cancel, as a single run's."""
    assert plan.compare is not None
    state = state or RunState()
    sampler = ResourceSampler()  # the power state: idle first, then over the measured span
    sampler.start()
    try:
        idle = list(plan.idle_readings) if plan.idle_readings is not None else read_idle(sampler, plan.idle_s)
        alone = {}
        if plan.alone_s > 0:
            alone = {"a": _alone(plan, plan.config, plan.alone_s), "b": _alone(plan, plan.compare, plan.alone_s)}
        compared = threading.Event()  # set at each compared frame: the span closes at the `frames`-th
        cp, sinks = _compare_pipeline(plan, sampler, compared)
        started = time.monotonic()
        cp.start()
        try:
            span = _measure(cp, sinks, plan, sampler, state, compared)
        finally:
            cp.stop()
            for sink in sinks.values():
                sink.recorder.add_row({"event": "stop", "message": "compare bench done"})
                sink.recorder.stop()
    finally:
        sampler.stop()
    return _compare_summary(plan, cp, span, alone, idle, sampler, time.monotonic() - started)


def _compare_pipeline(
    plan: RunPlan, sampler: ResourceSampler, compared: threading.Event
) -> tuple[ComparePipeline, dict[str, RowSink]]:
    """Both sides on one feed, each side's recording beside it when asked (so `report A B` renders the pair)."""
    a, b = plan.config, plan.compare
    assert b is not None
    sinks: dict[str, RowSink] = {}  # filled below; the callbacks only fire once cp has started
    cp = ComparePipeline(
        replace(plan.feed, loop=True),  # one preprocessing serves both sides, as the plan places it
        a,
        b,
        # The run's sampler: each side's rows carry the process and system CPU, as a single run's do.
        metrics={side: Metrics(window_s=3600.0, sampler=sampler) for side in ("a", "b")},
        on_result=lambda side, r: sinks[side].on_result(r) if side in sinks else None,
        on_event=lambda side, e: sinks[side].on_event(e) if side in sinks else None,
        on_comparison=lambda _: compared.set(),
        trace=TraceLog() if plan.trace else None,  # the run together (the alone phases are not in it)
    )
    if plan.csv:
        for side, config in (("a", a), ("b", b)):
            settings = {"compare_side": side, "bench": plan.to_dict()}
            recorder = RecordingWriter(side_recording(plan.csv, side), {"settings": settings},
                                       tasks=not_a_classifier(config))  # fmt: skip
            sinks[side] = RowSink(recorder, partial(_worker, cp, side), lambda: plan.feed.spec, cp.metrics[side])
    return cp, sinks


@dataclass(frozen=True)
class _Span:
    """What the measured span of an A/B run saw, read at its end, before the pipeline stops."""

    measured_from: float
    ended: float
    power: tuple[PowerReading, ...]  # the span's readings, its ends included
    snaps: Mapping[str, MetricsSnapshot]
    agreement: AgreementSummary
    comparisons: tuple[FrameComparison, ...]  # the same frames as the agreement's
    status: Status
    cancelled: bool
    memory: MemoryReading | None  # at the span's end: its VmHWM is the span's peak (reset as it opened)


def _measure(
    cp: ComparePipeline,
    sinks: Mapping[str, RowSink],
    plan: RunPlan,
    sampler: ResourceSampler,
    state: RunState,
    compared: threading.Event,
) -> _Span:
    """Warm both sides up by a single run's rule, then measure `frames` compared frames or `seconds`."""
    _warm_up(cp, list(cp.metrics.values()), plan)
    cp.reset()
    # Each side's recording marks its span where its metrics opened and closed it, so the inference
    # rows between `measure` and `measure_end` are exactly those its summary counts (`report` reads them).
    for side, sink in sinks.items():
        sink.recorder.add_row({"event": "measure", "message": warm_up_done(plan)},
                              monotonic=cp.metrics[side].started_at)  # fmt: skip
    opened = open_span(sampler.read_power_now)  # as a single run's span opens (`span.py`)
    measured_from = opened.t

    shown = [-float("inf")]

    def done() -> bool:
        if state.progress and time.monotonic() - shown[0] >= _PROGRESS_EVERY_S:  # a snapshot is O(rows)
            shown[0] = time.monotonic()
            state.progress(len(cp.comparator.comparisons), plan.frames, cp.metrics["a"].snapshot())
        if state.cancelled:
            return True
        if plan.frames is not None:
            return len(cp.comparator.comparisons) >= plan.frames
        return time.monotonic() - measured_from >= (plan.seconds or 0)

    _wait(done, 3600 if plan.frames is not None else (plan.seconds or 0) + 1, cp, compared)
    ended = time.monotonic()
    snaps = cp.snapshots(ended)  # first: a result published while the ends are read is not the span's
    closed = close_span(sampler.read_power_now, ended)
    for sink in sinks.values():
        sink.recorder.add_row({"event": "measure_end", "message": "measured span ends"}, monotonic=ended)
    readings = (opened.power, *sampler.power_between(measured_from, ended), closed.power)
    # One set of frames for the summary and the comparison CSV: those compared within the measured span,
    # with --frames N the first N (a frame or more may be compared before the span closes), so report
    # reads the same count back from the CSV (app/recording/ab.py).
    first = plan.frames
    return _Span(measured_from, ended, tuple(sorted((r for r in readings if r is not None), key=lambda r: r.t)),
                 snaps, cp.comparator.summary(until=ended, first=first),
                 tuple(cp.comparator.measured(ended, first=first)), cp.status(), state.cancelled,
                 closed.memory)  # fmt: skip


def _compare_summary(
    plan: RunPlan,
    cp: ComparePipeline,
    span: _Span,
    alone: Mapping[str, MetricsSnapshot],
    idle: list[PowerReading],
    sampler: ResourceSampler,
    wall_s: float,
) -> CompareSummary:
    assert plan.compare is not None
    sides = {
        side: SideSummary(
            config,
            cp.workers[side].delegation_report(),
            span.snaps[side],
            _alone_figures(alone.get(side)),
            measure_rounds(cp.metrics[side], cp.metrics[side].started_at, span.ended, plan.rounds),
            _sha256(cp.workers[side]),
            # Init is the side's own open; peak, steady and GPU are the process's, both sides together.
            run_memory(cp.workers[side], sampler, span.measured_from, span.ended, span.memory),
        )
        for side, config in (("a", plan.config), ("b", plan.compare))
    }
    trace = None
    if cp.trace is not None and plan.trace is not None:
        readings = sampler.readings_between(-float("inf"), float("inf"))
        trace = write_trace(plan.trace, cp.trace, cp, readings, "delegate-scope bench A/B")
    recording = None
    if plan.csv:
        write_comparisons(plan.csv, list(span.comparisons))
        sessions = {side: side_recording(plan.csv, side) for side in ("a", "b")}
        recording = CompareRecording(plan.csv, len(span.comparisons), sessions)
    a_ms, b_ms = sides["a"].inference_ms_median, sides["b"].inference_ms_median
    power, clock = _power(idle, list(span.power), sides, span.snaps, plan.feed.pace)
    snaps = span.snaps
    return CompareSummary(
        source=plan.feed.source,
        paced=plan.feed.pace,
        a=sides["a"],
        b=sides["b"],
        agreement=span.agreement,
        speed_sentence=speed_sentence(a_ms, b_ms, snaps["a"].cpu_ms_per_inference, snaps["b"].cpu_ms_per_inference),
        shared_computed=cp.rgb_cache.computed,
        shared_reused=cp.rgb_cache.reused,
        shared_computed_again=cp.rgb_cache.computed_again,
        status=span.status,
        wall_s=wall_s,
        csv=recording,
        power=power,
        clock_sentence=clock,
        placement=cp.preprocessing,
        plan=plan,
        trace=trace,
        cancelled=span.cancelled,
    )


def _sha256(worker: InferenceWorker) -> str | None:
    spec = worker.model_spec()
    return spec.sha256 if spec else None


def _power(
    idle: list[PowerReading],
    run: list[PowerReading],
    sides: Mapping[str, SideSummary],
    snaps: Mapping[str, MetricsSnapshot],
    paced: bool,
) -> tuple[PowerFigures | None, str | None]:
    """The span's power figures (the GPU's energy per inference over the inferences of the sides that ran
    on it) and, for a paced run whose GPU side left the GPU at its idle clock, the sentence that says so."""
    if not run:
        return None, None
    used = {side: str(s.delegate.used) if s.delegate else s.config.delegate for side, s in sides.items()}
    on_gpu = [side for side, u in used.items() if u == "gpu"]
    counted = on_gpu or list(sides)
    ran_on = "gpu" if on_gpu else used["a"] if used["a"] == used["b"] else None
    power = power_figures(idle, run, sum(snaps[side].inferences_total for side in counted), ran_on)
    clock = None
    if paced and on_gpu:
        fps = snaps[on_gpu[0]].capture_fps
        label = f"GPU (side {'/'.join(s.upper() for s in on_gpu)}) at {fps:.0f} fps"
        clock = paced_clock_sentence(label, power)
    return power, clock


def _worker(cp: ComparePipeline, side: str) -> InferenceWorker:
    return cp.workers[side]


def side_recording(csv_path: Path, side: str) -> Path:
    """X.csv (the per-frame comparison) -> X-a.csv / X-b.csv (each side's full recording)."""
    return csv_path.with_name(f"{csv_path.stem}-{side}{csv_path.suffix}")


def write_comparisons(path: Path, rows: list[FrameComparison]) -> None:
    """One row per compared frame (docs/csv-format.md, "Comparison CSV"); models that are not
    classifiers add their task's columns."""
    tasks = any(r.task is not None for r in rows)
    columns = COMPARISON_COLUMNS + (COMPARISON_TASK_COLUMNS if tasks else [])
    with open(path, "x", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for r in rows:
            cells = comparison_row(r)
            writer.writerow([neutralise(cells[c]) if c in COMPARISON_TEXT_COLUMNS else cells[c] for c in columns])
