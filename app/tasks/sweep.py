"""The delegate sweep: the same frames through every configuration this machine offers.

In the spirit of LiteRT's `benchmark_model_performance_options`, but on real frames and with
agreement: the source is read once (`capture_frames`) and replayed, unpaced, to each
configuration in turn (CPU at 1, 2 and all-cores threads, GPU fp16 and fp32, each Core ML
compute-unit choice, for each model), each run by `run_bench` (the live pipeline, headless), so
throughput, latency, CPU per inference (the per-thread attribution of `app/system/thread_cpu.py`),
init and first-inference time are the figures `bench` would give. Each configuration's top-1
answer on every captured frame is compared with the first configuration's.

The sweep does not pin threads to CPUs unless asked (`pin_cpus`): bench's pinning applies only when
the machine has more CPUs than the model has threads, so across thread counts it would change two
things at once (on this 2-core VM it pins 1 thread, never 2).

The power state (app/metrics/energy.py): the idle machine is read once before the first configuration
(`idle_s`), each configuration's clocks, power and energy per inference over its measured span, each
a value or the reason it is missing. `warm_s` holds each configuration busy (unpaced) that long
before its measured span opens: the first configuration would otherwise start at the idle clocks.

A configuration that cannot run here is listed with its reason, never dropped or silently run
somewhere else: sessions open with `fallback=False`. A software GPU renderer (SwiftShader,
llvmpipe: the CPU pretending) is included only when asked for (`allow_software_gpu`).
"""

from __future__ import annotations

import os
import platform
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.backends.options import BackendOptions, ComputeUnits, GpuPrecision
from app.errors import BackendUnavailable
from app.metrics.energy import PowerFigures
from app.metrics.window import MetricsSnapshot
from app.model.agreement import TaskAgreement, compare_tasks
from app.model.classes import class_space
from app.model.decode import TaskResult
from app.model.spec import ModelOptions, ModelSpec, bundled_models, load_model_spec
from app.pipeline import InferenceConfig, Result, State
from app.pipeline.plan import FeedPlan
from app.sources import CapturedFrames, capture_frames
from app.sources.replay import FrameSelection
from app.system.power_counters import PowerReading
from app.system.redact import redact_credentials
from app.tasks.bench import measure_idle, run_bench
from app.tasks.plan import RunPlan, RunState

if TYPE_CHECKING:
    from app.tasks.delegates import DelegateStatus

DEFAULT_FRAMES = 100  # replayed to each configuration (720p demo frames: 2.6 MiB each in memory)
DEFAULT_WARMUP = 5  # inferences of each configuration left out of its figures (after its first one)


class Outcome(StrEnum):
    MEASURED = "measured"
    UNAVAILABLE = "unavailable"  # the backend cannot run on this machine: known before trying
    REFUSED = "refused"  # tried: the backend would not open this model here (the reason says why)
    FAILED = "failed"  # opened, then the run failed
    SKIPPED = "skipped"  # the sweep was cancelled before this configuration


@dataclass(frozen=True)
class SweepEntry:
    """One configuration to run: a model on a backend with its options."""

    model: str  # bundled name or .tflite path
    delegate: str  # "cpu" | "gpu" | "coreml"
    options: BackendOptions
    setting: str  # the option that varies, in words: "1 thread", "fp16", "all"
    unavailable: str | None = None  # why it cannot run here, known before trying

    def label(self, model_name: str = "") -> str:
        name = {"cpu": "CPU", "gpu": "GPU", "coreml": "Core ML"}.get(self.delegate, self.delegate)
        return f"{model_name + ' · ' if model_name else ''}{name} {self.setting}"


@dataclass(frozen=True)
class SweepRow:
    """What one configuration did."""

    model: str  # the model's display name
    model_ref: str
    delegate: str
    setting: str
    label: str
    outcome: Outcome
    reason: str | None = None  # not measured: why
    accelerator: str | None = None
    adapter: str | None = None
    software: bool = False  # a software GPU renderer: "GPU" figures that are the CPU's
    nodes_delegated: int | None = None
    nodes_total: int | None = None
    inferences: int = 0  # measured (after warm-up)
    inference_fps: float | None = None  # throughput, unpaced
    latency_p50_ms: float | None = None  # the inference stage
    latency_p95_ms: float | None = None
    end_to_end_p50_ms: float | None = None
    cpu_ms_per_inference: float | None = None  # inference thread + the runtime's threads
    cpu_per_wall: float | None = None
    init_ms: float | None = None
    first_inference_ms: float | None = None
    top1_agreement: float | None = None  # with the first configuration, over the frames both answered
    classes: str | None = None  # how the classes were matched with the first's, or why they do not compare
    agreement_frames: int = 0
    top1: dict[int, int] = field(default_factory=dict, repr=False)  # captured frame -> top-1 class index
    # A model that is not a classifier (said in JSON only then): its task, the feeder of its inputs
    # that are not the frame, what it found (TaskFigures.to_dict) and its task's agreement with the
    # first configuration (TaskAgreement.to_dict; top1_agreement is then the share of frames that agree).
    task: str | None = None
    feed: str | None = None
    results: dict | None = None
    agreement: dict | None = None
    answers: dict[int, TaskResult] = field(default_factory=dict, repr=False)  # frame index -> its result
    model_sha256: str | None = None  # the model file's: a gate matches rows by it (app/gates)
    rounds: dict | None = None  # the measured span in rounds (Rounds.to_dict): medians and spread, for gates
    power: PowerFigures | None = None  # clocks, power and energy per inference over the measured span
    # What the configuration's open added to the resident set (its init footprint, app/metrics/memory.py) and
    # the process's peak over its measured span; None where not readable.
    memory_init_mb: float | None = None
    memory_peak_mb: float | None = None

    @property
    def measured(self) -> bool:
        return self.outcome == Outcome.MEASURED

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("top1", "answers")}
        d["power"] = self.power.to_dict() if self.power is not None else None
        for key in ("task", "feed", "results", "agreement", "classes", "rounds"):
            if d[key] is None:
                del d[key]
        return d


@dataclass(frozen=True)
class SweepResult:
    source: str
    source_description: str
    frame_size: tuple[int, int]  # width, height
    frames: int  # captured, replayed to each configuration
    warmup: int
    machine: str
    cpu_count: int
    started: str  # ISO time
    wall_s: float
    baseline: str | None  # the first configuration measured: agreement is against it
    rows: tuple[SweepRow, ...]
    cancelled: bool = False
    pinned: bool = False  # the inference thread pinned to CPUs of its own (bench's policy)
    idle_s: float = 0.0  # seconds the idle machine was read before the first configuration
    warm_s: float = 0.0  # each configuration held busy at least this long before measuring
    frame_selection: FrameSelection | None = None  # which of the source's frames were captured (spread over it)

    def measured(self) -> list[SweepRow]:
        return [r for r in self.rows if r.measured]

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "rows"}  # rows: their own to_dict (power)
        d["frame_size"] = list(self.frame_size)
        d["rows"] = [r.to_dict() for r in self.rows]
        d["frame_selection"] = self.frame_selection.to_dict() if self.frame_selection else None
        return d


@dataclass(frozen=True)
class SweepProgress:
    """Where a running sweep is: configuration `index` of `total`, `done` of `frames` inferences."""

    index: int
    total: int
    label: str
    phase: str  # "capturing", "opening", "measuring", "done"
    done: int = 0
    frames: int = 0


def thread_counts(cores: int | None = None) -> list[int]:
    """1, 2 and all cores (N), each once and in order."""
    n = max(1, cores or os.cpu_count() or 1)
    return sorted({1, min(2, n), n})


def plan_sweep(
    models: list[str],
    *,
    allow_software_gpu: bool = False,
    statuses: Mapping[str, DelegateStatus] | None = None,
    cores: int | None = None,
) -> list[SweepEntry]:
    """Every configuration for every model, in run order. `statuses` are `delegate_statuses()` by
    name (the window has them already; None: asked now, which probes the GPU in a child process).
    A backend that cannot run here gives one entry per model, with the reason."""
    if statuses is None:
        from app.tasks.delegates import delegate_statuses

        statuses = {s.name: s for s in delegate_statuses()}
    n = max(1, cores or os.cpu_count() or 1)
    gpu_reason = _gpu_reason(statuses.get("gpu"), allow_software_gpu)
    coreml_reason = coreml.reason if (coreml := statuses.get("coreml")) else None
    entries: list[SweepEntry] = []
    for model in models:
        for threads in thread_counts(n):
            setting = f"{threads} thread{'s' if threads > 1 else ''}" + (" (all cores)" if threads == n > 1 else "")
            entries.append(SweepEntry(model, "cpu", BackendOptions(threads=threads), setting))
        if gpu_reason:
            entries.append(SweepEntry(model, "gpu", BackendOptions(), " / ".join(GpuPrecision), gpu_reason))
        else:
            for precision in GpuPrecision:
                options = BackendOptions(precision=precision, allow_software=allow_software_gpu)
                entries.append(SweepEntry(model, "gpu", options, precision))
        if coreml_reason:
            entries.append(SweepEntry(model, "coreml", BackendOptions(), "(any compute units)", coreml_reason))
        else:
            for units in ComputeUnits:
                entries.append(SweepEntry(model, "coreml", BackendOptions(compute_units=units), units))
    return entries


def _gpu_reason(status: DelegateStatus | None, allow_software: bool) -> str | None:
    reason = status.reason if status else "not probed"
    if reason and status and status.software:
        return None if allow_software else f"{reason} (included only when software GPU is allowed)"
    return reason


@dataclass(frozen=True)
class SweepPlan:
    """Every setting of a sweep, built once by its caller (the command's options, the window's dialog)."""

    source: str | CapturedFrames  # a spec (captured here), or frames captured already
    entries: tuple[SweepEntry, ...]
    frames: int = DEFAULT_FRAMES  # captured once and replayed to each configuration
    warmup: int = DEFAULT_WARMUP
    pin_cpus: bool = False
    model_options: ModelOptions = field(default_factory=ModelOptions)  # --task, --input-shape, --inputs: every model
    # The idle machine read this long before the first configuration (None: bench's default, 2 s where an
    # energy counter is readable); each configuration's warm-up lasts at least `warm_s`.
    idle_s: float | None = None
    warm_s: float = 0.0
    trace_parts: Path | None = None  # a folder: each configuration's timeline as <its index>.json (sweep --trace)

    def run_plan(self, entry: SweepEntry, captured: CapturedFrames, idle: tuple[PowerReading, ...]) -> RunPlan:
        """One configuration's run: the same replayed frames, unpaced; only the model and backend change. Never
        a fallback: a configuration that cannot run here says why."""
        config = InferenceConfig(model=entry.model, delegate=entry.delegate, options=entry.options, fallback=False,
                                 model_options=self.model_options)  # fmt: skip
        feed = FeedPlan(captured, pace=False, pin_cpus=self.pin_cpus)
        trace = self.trace_parts / f"{self.entries.index(entry)}.json" if self.trace_parts is not None else None
        return RunPlan(config=config, feed=feed, frames=len(captured.images), warmup=self.warmup, warm_s=self.warm_s,
                       idle_readings=idle, trace=trace)  # fmt: skip


def run_sweep(
    plan: SweepPlan,
    progress: Callable[[SweepProgress], None] | None = None,
    stop: threading.Event | None = None,
) -> SweepResult:
    """Capture the plan's frames (or take the frames given) and run every entry on them in turn. SourceError
    when the source gives no frame; a model that cannot be read raises ModelError before anything runs.
    `stop` ends the sweep early: the rows not run say so."""
    started, wall_started = time.monotonic(), datetime.now().astimezone()
    specs = {m: load_model_spec(m, options=plan.model_options) for m in dict.fromkeys(e.model for e in plan.entries)}
    names = {m: spec.display_name for m, spec in specs.items()}
    total = len(plan.entries)
    if progress:
        progress(SweepProgress(0, total, redact_credentials(str(plan.source)), "capturing"))
    source = plan.source
    captured = source if isinstance(source, CapturedFrames) else capture_frames(source, plan.frames)
    count = len(captured.images)
    idle = tuple(measure_idle(plan.idle_s))
    rows: list[SweepRow] = []
    baseline: SweepRow | None = None
    for index, entry in enumerate(plan.entries):
        if stop is not None and stop.is_set():
            rows.append(_row(entry, names, Outcome.SKIPPED, "the sweep was cancelled"))
            continue
        if entry.unavailable:
            rows.append(_row(entry, names, Outcome.UNAVAILABLE, entry.unavailable))
            continue
        if progress:
            progress(SweepProgress(index, total, entry.label(names[entry.model]), "opening", 0, count))
        row = _measure(entry, names, plan.run_plan(entry, captured, idle), index, total, progress, stop)
        if row.measured and baseline is None:
            baseline = row
        row = _agree(row, baseline, specs)
        # Only the baseline's decoded results are compared again (class maps are 0.25 MB a frame).
        rows.append(row if row is baseline else replace(row, answers={}))
    if progress:
        progress(SweepProgress(total, total, "", "done", count, count))
    rows = [replace(row, model_sha256=specs[row.model_ref].sha256) for row in rows]
    return _result(plan, captured, rows, baseline, idle, wall_started, time.monotonic() - started, stop)


def _result(
    plan: SweepPlan,
    captured: CapturedFrames,
    rows: list[SweepRow],
    baseline: SweepRow | None,
    idle: tuple[PowerReading, ...],
    wall_started: datetime,
    wall_s: float,
    stop: threading.Event | None,
) -> SweepResult:
    return SweepResult(
        source=redact_credentials(captured.spec),  # what the result says is shown and saved: no stream password
        source_description=redact_credentials(captured.info.description),
        frame_size=(captured.images[0].shape[1], captured.images[0].shape[0]),
        frames=len(captured.images),
        warmup=plan.warmup,
        machine=f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        cpu_count=os.cpu_count() or 1,
        started=wall_started.isoformat(timespec="seconds"),
        wall_s=wall_s,
        baseline=baseline.label if baseline else None,
        rows=tuple(rows),
        cancelled=stop is not None and stop.is_set(),
        pinned=plan.pin_cpus,
        idle_s=idle[-1].t - idle[0].t if len(idle) > 1 else 0.0,
        warm_s=plan.warm_s,
        frame_selection=captured.selection,
    )


def _measure(
    entry: SweepEntry,
    names: dict[str, str],
    plan: RunPlan,
    index: int,
    total: int,
    progress: Callable[[SweepProgress], None] | None,
    stop: threading.Event | None,
) -> SweepRow:
    label = entry.label(names[entry.model])
    count = plan.frames or 1  # the captured frames: each configuration measures one lap of them
    # Unpaced replay (`bench`): each captured frame is taken once per lap; warm-up plus `count` measured
    # inferences cover every captured frame at least once.
    top1: dict[int, int] = {}
    answers: dict[int, TaskResult] = {}

    def on_result(result: Result) -> None:
        if result.top:
            top1[result.frame_index % count] = result.top[0].index
        if result.task is not None:
            # By the frame's own index, not its place in the lap: a generated input is picked by that
            # index (app/model/feed.py), so only the same index means the same inputs on every row.
            answers[result.frame_index] = result.task

    def on_progress(done: int, frames: int | None, _snap: MetricsSnapshot) -> None:
        if progress:
            progress(SweepProgress(index, total, label, "measuring", done, frames or count))

    state = RunState(progress=on_progress, cancel=stop or threading.Event())
    summary = run_bench(plan, state, on_result=on_result)
    if summary.cancelled:
        return _row(entry, names, Outcome.SKIPPED, "the sweep was cancelled while this configuration ran")
    status = summary.status
    if status.state == State.ERROR:
        refused = status.exit_code == BackendUnavailable.exit_code
        return _row(entry, names, Outcome.REFUSED if refused else Outcome.FAILED, status.message)
    m, d = summary.metrics, summary.delegate
    inference, e2e = m.latency["inference"], m.latency["end_to_end"]
    if not inference.count:
        return _row(entry, names, Outcome.FAILED, "no inference was measured")
    return replace(
        _row(entry, names, Outcome.MEASURED, None),
        accelerator=d.accelerator if d else None,
        adapter=d.adapter if d else None,
        software=bool(d.software) if d else False,
        nodes_delegated=d.nodes_delegated if d else None,
        nodes_total=d.nodes_total if d else None,
        inferences=m.inferences_total,
        inference_fps=m.inference_fps,
        latency_p50_ms=inference.p50,
        latency_p95_ms=inference.p95,
        end_to_end_p50_ms=e2e.p50,
        cpu_ms_per_inference=m.cpu_ms_per_inference,
        cpu_per_wall=m.cpu_per_wall,
        init_ms=d.init_ms if d else None,
        first_inference_ms=d.first_inference_ms if d else None,
        top1=dict(top1),
        task=summary.task.task if summary.task else None,
        feed=summary.feed.source if summary.task and summary.feed else None,
        results=summary.task.to_dict() if summary.task else None,
        answers=dict(answers),
        rounds=summary.rounds.to_dict() if summary.rounds else None,
        power=summary.power,
        memory_init_mb=summary.memory.init_mb if summary.memory else None,
        memory_peak_mb=summary.memory.peak_mb if summary.memory else None,
    )


def _row(entry: SweepEntry, names: dict[str, str], outcome: Outcome, reason: str | None) -> SweepRow:
    """A row naming its configuration (one that ran gets its figures by `replace`)."""
    return SweepRow(
        model=names[entry.model],
        model_ref=str(entry.model),
        delegate=entry.delegate,
        setting=entry.setting,
        label=entry.label(names[entry.model]),
        outcome=outcome,
        reason=reason,
    )


def _agree(row: SweepRow, baseline: SweepRow | None, specs: Mapping[str, ModelSpec]) -> SweepRow:
    """The row with its top-1 agreement against the baseline, over the frames both answered."""
    if not row.measured or baseline is None:
        return row
    if row.task is not None or baseline.task is not None:
        return _agree_tasks(row, baseline)
    common = row.top1.keys() & baseline.top1.keys()
    if not common:
        return row
    # By class, never by label text (two label files spell one ImageNet class two ways): app/model/classes.py.
    classes = class_space(specs[baseline.model_ref], specs[row.model_ref])  # read once by run_sweep
    if not classes.comparable:
        return replace(row, agreement_frames=len(common), classes=classes.how)
    same = sum(bool(classes.agree(baseline.top1[k], row.top1[k])) for k in common)
    return replace(row, top1_agreement=same / len(common), agreement_frames=len(common),
                   classes=classes.how if classes.offset or classes.by_label else None)  # fmt: skip


def _agree_tasks(row: SweepRow, baseline: SweepRow) -> SweepRow:
    """A model that is not a classifier: its task's agreement with the baseline on the frames both
    answered (top1_agreement: the share of those frames that agree, app/model/agreement.py)."""
    common = sorted(row.answers.keys() & baseline.answers.keys())
    frames = [compare_tasks(baseline.answers[k], row.answers[k]) for k in common]
    total = TaskAgreement.of(frames)
    if total is None:
        return row
    return replace(row, top1_agreement=total.agreeing / total.frames, agreement_frames=total.frames,
                   agreement=total.to_dict())  # fmt: skip


def default_models() -> list[str]:
    """The bundled models, in the order `bundled_models()` lists them."""
    return list(bundled_models())
