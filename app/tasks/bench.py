"""`delegate-scope bench`: the headless twin of the window. Runs the live pipeline on a source
for N frames or S seconds and summarises what the window would have shown."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import psutil

from app.backends import DelegationReport
from app.errors import DelegateScopeError
from app.metrics.bottleneck import Bottleneck, find_bottleneck
from app.metrics.energy import PowerFigures, power_figures
from app.metrics.memory import (
    MemoryDelta,
    MemoryFigures,
    MemoryReading,
    gpu_mb,
    memory_figures,
)
from app.metrics.resources import CpuMark, ResourceSampler, cpu_percentages
from app.metrics.rounds import Rounds, measure_rounds
from app.metrics.trace import TraceLog
from app.metrics.window import Metrics, MetricsSnapshot
from app.model.feed import FeedFacts
from app.model.spec import ModelFacts, ModelSpec, load_model_spec
from app.model.task import Task
from app.pipeline import Event, InferenceConfig, InferenceWorker, Pipeline, Result, State, Status
from app.pipeline.preprocess_thread import PreprocessPlacement
from app.recording.rows import RowSink
from app.recording.task_figures import TaskFigures
from app.recording.trace import TraceFacts, write_trace
from app.recording.writer import RecordingWriter
from app.sources import SourceInfo, kind_of, reads_on_demand
from app.system.cpu_affinity import CpuSplit
from app.system.names import Delegate
from app.system.power_counters import PowerReading
from app.tasks.plan import RunPlan, RunState
from app.tasks.span import SpanEnd, close_span, open_span, warm_up_done, warmed_up

IDLE_S = 2.0


_POLL_S = 0.05  # how often the run's end and the pipeline's status are checked
# A snapshot of a long run costs milliseconds of GIL (O(rows): 3.8 ms at 18,000 inferences
# here), taken from the threads being measured: the progress line is refreshed twice a second.
_PROGRESS_EVERY_S = 0.5
# How long the end of a run waits for the next result to close the measured span (a seconds
# limit, a source that ended); past it the span closes once the pipeline has stopped.
_CLOSE_WAIT_S = 2.0


@dataclass(frozen=True)
class MeasuredCpu:
    """Process and system CPU over exactly the measured span, as the sampler counts them."""

    from_wall: float
    to_wall: float
    seconds: float
    process_cpu_pct_machine: float
    process_cpu_pct_cores: float
    system_cpu_pct: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class RecordingFacts:
    """The recording a bench wrote (its rows count events and inferences)."""

    path: Path
    rows: int
    lost_rows: int
    error: str | None

    def to_dict(self) -> dict[str, object]:
        return {"path": str(self.path), "rows": self.rows, "lost_rows": self.lost_rows, "error": self.error}


@dataclass(frozen=True)
class BenchSummary:
    """What a bench measured; `to_dict()` is the JSON of `bench --json` (docs), nothing reads it back."""

    source_spec: str
    source: SourceInfo | None
    config: InferenceConfig
    delegate: DelegationReport | None
    cpu_affinity: CpuSplit | None
    # Of the measured span; its CPU % cover that whole span (measured_cpu), not the sampler's newest
    # 0.5 s reading (which the per-row CSV columns keep).
    metrics: MetricsSnapshot
    bottleneck: Bottleneck | None  # which stage set the rate
    repeated_images_reused: int
    status: Status
    events: tuple[Event, ...]
    wall_s: float
    first_result_s: float | None  # from the process's creation (imports included) to the first result
    measured_cpu: MeasuredCpu | None  # process and system CPU over exactly the measured span
    csv: RecordingFacts | None = None
    # A model that is not a classifier: what it found over the measured span ...
    task: TaskFigures | None = None
    feed: FeedFacts | None = None  # ... and a model with inputs that are not the frame: their feeder
    rounds: Rounds | None = None  # the measured span in rounds: each figure's median and spread (gates)
    power: PowerFigures | None = None  # clocks, power and energy per inference over the measured span
    placement: PreprocessPlacement | None = None  # preprocessing on the capture thread or its own, and why
    memory: MemoryFigures | None = None  # the model's init footprint, the span's peak and median, GPU memory
    plan: RunPlan | None = None  # every setting, as the run ran
    cancelled: bool = False  # the caller cancelled it (RunState.cancel) before its end
    trace: TraceFacts | None = None  # the timeline written (bench --trace)

    def error(self) -> DelegateScopeError | None:
        """The typed error that ended the run (its exit code), if one did."""
        return self.status.error()

    def to_dict(self) -> dict[str, Any]:
        summary: dict[str, Any] = {
            # "spec" first; the source's own info, when there is one, gives its value.
            "source": {"spec": self.source_spec, **(self.source.__dict__ if self.source else {})},
            "config": self.config.to_dict(),
            "delegate": self.delegate.to_dict() if self.delegate else None,
            "cpu_affinity": self.cpu_affinity.to_dict() if self.cpu_affinity else None,
            "metrics": self.metrics.to_dict(),
            "bottleneck": self.bottleneck.to_dict() if self.bottleneck else None,
            # Frames that repeat an image (the synthetic cycle) reuse its tensor: the rate then shows
            # the delegate, and each frame's preprocess figure is what computing that image cost.
            "preprocessing": {
                "repeated_images_reused": self.repeated_images_reused,
                **({"placement": self.placement.to_dict()} if self.placement else {}),
            },
            "status": self.status.to_dict(),
            # Each event as its fields, but the report (the summary's `delegate` says it) and with the
            # model it opened as JSON.
            "events": [
                {
                    k: v.to_dict() if isinstance(v, ModelFacts | MemoryDelta) else v
                    for k, v in e.__dict__.items()
                    if k != "report"
                }
                for e in self.events
            ],
            "wall_s": self.wall_s,
            "first_result_s": self.first_result_s,
            "measured_cpu": self.measured_cpu.to_dict() if self.measured_cpu else None,
        }
        if self.csv:
            summary["csv"] = self.csv.to_dict()
        # Said only for models that are not one-input classifiers: a classifier's JSON stays as it was.
        if self.task is not None:
            summary["task"] = self.task.to_dict()
        if self.feed is not None:
            summary["feed"] = self.feed.to_dict()
        if self.rounds is not None:
            summary["rounds"] = self.rounds.to_dict()
        if self.power is not None:
            summary["power"] = self.power.to_dict()
        if self.memory is not None:
            summary["memory"] = self.memory.to_dict()
        if self.plan is not None:
            summary["plan"] = self.plan.to_dict()
        if self.trace is not None:
            summary["trace"] = self.trace.to_dict()
        return summary


class _Span:
    """The measured span, opened and closed on the results thread, right after the pipeline counted
    the result: the metrics then count exactly the inference rows recorded between `measure` and the
    span's end (a poll from another thread would see one more result published, or one fewer).

    Opens once `warmup` results are in (the metrics are reset: warm-up stays out of the figures), unless
    the run already ends; closes at `frames` results, or at the first result after `end()`, or at
    `close_now()` once the pipeline has stopped. Results after the close are neither counted in the
    summary nor recorded.
    """

    def __init__(
        self, plan: RunPlan, metrics: Metrics, recorder: RecordingWriter | None, task: TaskFigures | None = None
    ) -> None:
        self._plan, self._metrics, self._recorder = plan, metrics, recorder
        self.task = task  # summed over the measured span's results, as the metrics are
        self.sink: RowSink | None = None
        self._lock = threading.Lock()
        self._end = False
        self.closed = threading.Event()
        self.opened: SpanEnd | None = None  # read as the span opened (`span.py`: one rule with A/B's)
        self.ended: SpanEnd | None = None  # read as it closed
        self.read_power: Callable[[], PowerReading | None] = lambda: None
        self._first_at: float | None = None  # the first result's time: `warm_s` counts from it
        self.snapshot: MetricsSnapshot | None = None

    @property
    def measured_from(self) -> float | None:
        return self.opened.t if self.opened else None

    def open_now(self) -> None:
        with self._lock:
            self._open()

    def on_result(self, result: Result) -> None:
        with self._lock:
            if self.closed.is_set():
                return
            if self.sink:
                self.sink.on_result(result)
            if self.task is not None and result.task is not None and self.measured_from is not None:
                self.task.add_result(result.task)
            done = self._metrics.inferences_total
            if self.measured_from is None:
                now = time.monotonic()
                self._first_at = now if self._first_at is None else self._first_at
                if warmed_up(self._plan, done, now - self._first_at) and not self._end:
                    self._open()
            elif self._end or (self._plan.frames is not None and done >= self._plan.frames):
                self._close()

    def on_event(self, event: Event) -> None:
        with self._lock:  # events are no inferences: recorded until the recorder stops
            if self.sink:
                self.sink.on_event(event)

    def end(self) -> None:
        with self._lock:
            self._end = True

    def close_now(self) -> None:
        with self._lock:
            if not self.closed.is_set():
                self._close()

    def _open(self) -> None:
        self._metrics.reset()  # warm-up inferences (first-run costs, caches) stay out of the figures
        if self.task is not None:
            self.task = TaskFigures()
        self.opened = open_span(self.read_power)
        if self._recorder:
            self._recorder.add_row({"event": "measure", "message": warm_up_done(self._plan)})

    def _close(self) -> None:
        self.ended = close_span(self.read_power)
        self.snapshot = self._metrics.snapshot(self.ended.t)
        self.closed.set()


class _BenchRun:
    """What one bench run holds while it runs: the sampler, the pipeline, its metrics, the recording
    and the measured span, made and started together, released together."""

    def __init__(self, plan: RunPlan, on_result: Callable[[Result], None] | None) -> None:
        self.plan = plan
        self.sampler = ResourceSampler()
        self.sampler.start()
        idle = plan.idle_readings
        self.idle = list(idle) if idle is not None else read_idle(self.sampler, plan.idle_s)
        self.metrics = Metrics(window_s=3600.0, sampler=self.sampler)  # bench summarises the whole measured run
        # A model that is not a classifier records its task's columns and sums up what it found.
        tasks_too = not_a_classifier(plan.config)
        self.recorder = RecordingWriter(plan.csv, tasks=tasks_too) if plan.csv else None
        self.span = _Span(plan, self.metrics, self.recorder, TaskFigures() if tasks_too else None)
        self.span.read_power = self.sampler.read_power_now
        self.first: list[float] = []  # monotonic time of the first result, for the start-up figure
        self.trace = TraceLog() if plan.trace else None  # None: the pipeline's trace hooks do nothing
        self.pipeline = Pipeline(
            replace(plan.feed, loop=plan.loops),
            plan.config,
            metrics=self.metrics,
            on_result=lambda r: _first_result(self.first, r, self.span, on_result),
            on_event=self.span.on_event if self.recorder else None,
            trace=self.trace,
        )
        if self.recorder:
            pipeline = self.pipeline
            self.span.sink = RowSink(self.recorder, lambda: pipeline.worker, lambda: plan.feed.spec, self.metrics)
        if plan.warmup == 0:
            self.span.open_now()  # no result can precede the span
        self.started = time.monotonic()
        self.pipeline.start()
        self.released = False

    def measure(self, state: RunState) -> bool:
        """Poll until the span closes, the time is up, the pipeline ends or the caller cancels; True
        when cancelled."""
        plan, pipeline, span = self.plan, self.pipeline, self.span
        shown = -float("inf")
        while not state.cancelled:
            time.sleep(_POLL_S)
            if pipeline.status().state == State.ERROR or pipeline.finished():
                return False
            measured_from = span.measured_from
            if measured_from is None:
                continue
            # At least once per measured run, as it ends too.
            if state.progress and time.monotonic() - shown >= _PROGRESS_EVERY_S:
                shown = time.monotonic()
                # Counters only, but for this: a snapshot is O(rows) and holds the GIL the measured threads need.
                state.progress(self.metrics.inferences_total, plan.frames, self.metrics.snapshot())
                if state.cancelled:  # asked for from the progress callback itself
                    return True
            if span.closed.is_set():  # `frames` results measured
                return False
            if plan.seconds is not None and time.monotonic() - measured_from >= plan.seconds:
                return False
        return True

    def end(self) -> Status:
        """Close the span at the next result (unless none comes), stop everything; the status that ended
        the run (read before the stop, which would overwrite an error with "stopped")."""
        span, pipeline = self.span, self.pipeline
        span.end()
        if span.measured_from is not None and pipeline.status().state != State.ERROR and not pipeline.finished():
            span.closed.wait(_CLOSE_WAIT_S)
        status = pipeline.status()
        self.release()
        return status

    def release(self) -> None:
        """Stop the pipeline and the sampler and close the span: nothing is published any more, so the
        snapshot counts what was recorded. Idempotent: also what an exception leaves behind."""
        if self.released:
            return
        self.released = True
        self.pipeline.stop()
        self.span.close_now()
        self.sampler.stop()


def run_bench(
    plan: RunPlan, state: RunState | None = None, on_result: Callable[[Result], None] | None = None
) -> BenchSummary:
    """Run the pipeline as `plan` says; return the summary (metrics snapshot, delegate facts, events).
    `state`: progress and cancel; `on_result` sees every published result, warm-up included (a sweep's
    agreement)."""
    state = state or RunState()
    run = _BenchRun(plan, on_result)
    try:
        cancelled = run.measure(state)
        status = run.end()
    finally:
        run.release()
    return _summary(run, status, cancelled)


def _summary(run: _BenchRun, status: Status, cancelled: bool) -> BenchSummary:
    """What the finished run measured, assembled once everything has stopped."""
    plan, pipeline, span, metrics = run.plan, run.pipeline, run.span, run.metrics
    opened, ended = span.opened, span.ended
    assert span.snapshot is not None and ended is not None
    measured_cpu = _measured_cpu(opened.cpu, ended.cpu) if opened else None
    snap = span.snapshot
    if measured_cpu:
        snap = replace(snap, **{k: getattr(measured_cpu, k) for k in _SPAN_CPU_KEYS})
    report = pipeline.delegation_report()
    rounds = power = None
    if opened is not None:
        rounds = measure_rounds(metrics, metrics.started_at, ended.t, plan.rounds)
        during = run.sampler.power_between(opened.t, ended.t)
        ends = [r for r in (opened.power, *during, ended.power) if r is not None]
        used = str(report.used) if report is not None else None
        power = power_figures(run.idle, sorted(ends, key=lambda r: r.t), snap.inferences_total, used)
    recording = None
    if run.recorder:
        run.recorder.add_row({"event": "stop", "message": "cancelled" if cancelled else status.message})
        run.recorder.update_metadata(
            settings={"bench": plan.to_dict(), "config": plan.config.to_dict()}, summary=snap.to_dict()
        )
        done = run.recorder.stop()
        recording = RecordingFacts(done.path, done.rows, done.lost_rows, done.error)
    trace = None
    if run.trace is not None and plan.trace is not None:  # the whole run, warm-up included
        readings = run.sampler.readings_between(-float("inf"), float("inf"))
        trace = write_trace(plan.trace, run.trace, pipeline, readings, "delegate-scope bench")
    first = run.first
    return BenchSummary(
        source_spec=plan.feed.spec,
        source=pipeline.source_info(),
        config=plan.config,
        delegate=report,
        cpu_affinity=pipeline.cpu_split(),
        metrics=snap,
        bottleneck=find_bottleneck(snap, pipeline.config.throttle_ms),
        repeated_images_reused=pipeline.rgb_cache.repeats_reused,
        status=status,
        events=tuple(pipeline.events()),
        wall_s=time.monotonic() - run.started,
        first_result_s=_process_age_s() - (time.monotonic() - first[0]) if first else None,
        measured_cpu=measured_cpu,
        csv=recording,
        task=span.task,
        feed=pipeline.feed_facts(),
        rounds=rounds,
        power=power,
        placement=pipeline.preprocessing,
        plan=plan,
        cancelled=cancelled,
        memory=run_memory(pipeline.worker, run.sampler, span.measured_from, ended.t, ended.memory),
        trace=trace,
    )


def run_memory(
    worker: InferenceWorker,
    sampler: ResourceSampler,
    since: float | None,
    until: float | None,
    peak: MemoryReading | None,
) -> MemoryFigures:
    """A side's memory over a measured span: its session's open (init, split into mapped files and the
    runtime's anonymous memory), the process's peak (VmHWM since the span opened) and median resident set
    over the span, and the most GPU memory NVML gave this process and its children in the span's samples."""
    opened = worker.opened()
    readings = sampler.readings_between(since, until) if since is not None and until is not None else []
    # From the sampler's readings: by the time the summary is made the GPU session has closed and NVML lists
    # no process of this app (an H200 host's GPU run read null there, 51 MiB in the span's samples).
    gpu = [r.gpu_mem_mb for r in readings if r.gpu_mem_mb is not None]
    gpu_reading = (max(gpu), None) if gpu else gpu_mb()
    return memory_figures(opened.memory if opened else None, [r.rss_mb for r in readings], peak, gpu_reading)


def measure_idle(idle_s: float | None = None) -> list[PowerReading]:
    """The idle machine's readings over `idle_s` seconds (None: IDLE_S where an energy counter is
    readable, else none), from a sampler of its own: a sweep's, once before its first configuration."""
    with ResourceSampler() as sampler:
        return read_idle(sampler, idle_s)


def read_idle(sampler: ResourceSampler, idle_s: float | None) -> list[PowerReading]:
    """From a running sampler: readings of the machine idle before the run (its idle power and clock);
    none when no energy counter is readable and the user asked for no idle time."""
    first = sampler.read_power_now()
    if first is None:
        return []
    readable = (first.gpu is not None and first.gpu.energy_j is not None) or first.cpu_package_energy_j is not None
    seconds = idle_s if idle_s is not None else (IDLE_S if readable else 0.0)
    if seconds <= 0:
        return []
    t0 = first.t
    time.sleep(seconds)  # the sampler reads meanwhile, every interval
    last = sampler.read_power_now()
    return [first, *sampler.power_between(t0 + 1e-9, time.monotonic() - 1e-9), *([last] if last else [])]


def gpu_process_pays(config: InferenceConfig, spec: ModelSpec, source: str, pace: bool) -> bool:
    """bench --gpu-process auto: the GPU session in a process of its own where that pays for itself, that is
    where the inference thread queues frames in it (app/pipeline/worker.py, _queue_of): the GPU asked for,
    nothing pacing the runs (a file or the synthetic source read unpaced, no throttle) and a classifier of
    one image input. Paced, and from a camera or stream whatever `pace` says (the device paces it), the runs
    wait for frames anyway and the child's hand-off would only add to each one's latency."""
    kind = kind_of(source)  # None, a bad spec: the pipeline's open says what is wrong with it, in this process
    one_image = spec.is_image_classifier
    unpaced = kind is not None and reads_on_demand(kind, pace) and config.throttle_ms == 0
    return config.delegate == Delegate.GPU and unpaced and one_image


def not_a_classifier(config: InferenceConfig) -> bool:
    """Whether `config`'s model is read as another task than classification (its recording then has the
    task columns, docs/csv-format.md). A model that cannot be read: False, the pipeline's open says why."""
    try:
        kind = load_model_spec(config.model, labels_file=config.labels, options=config.model_options).kind
    except DelegateScopeError:
        return False
    return kind != Task.CLASSIFICATION


_SPAN_CPU_KEYS = ("process_cpu_pct_machine", "process_cpu_pct_cores", "system_cpu_pct")


def _measured_cpu(start: tuple[CpuMark, float], end: tuple[CpuMark, float]) -> MeasuredCpu:
    """Process and system CPU between two (mark, wall clock) readings, as the sampler counts them."""
    span = cpu_percentages(start[0], end[0], os.cpu_count() or 1)
    if span is None:
        return MeasuredCpu(start[1], end[1], 0.0, 0.0, 0.0, 0.0)
    return MeasuredCpu(
        start[1], end[1], span.span_s, span.process_cpu_pct_machine, span.process_cpu_pct_cores, span.system_cpu_pct
    )


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


def _first_result(first: list[float], result: Result, span: _Span, also: Callable[[Result], None] | None) -> None:
    if not first:
        first.append(time.monotonic())
    span.on_result(result)
    if also:
        also(result)
