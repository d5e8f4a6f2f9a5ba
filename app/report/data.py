"""A recording read for `report`: its rows, events and sidecar as RecordingData, and one
session's summary (median/p95 per stage, rates, CPU, offload ratio, dropped frames, labels).
The text report, the comparison and the plots all start from here."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.backends.describe import software_renderer
from app.errors import UsageError
from app.metrics.window import PERCENTILE_METHOD
from app.recording.ab import comparison_sides
from app.recording.integrity import stop_problem, unreadable_text
from app.recording.segments import Segment, change_text, split_segments
from app.recording.task_figures import TaskFigures, parse_cells
from app.recording.writer import Recording, cell_number, original_text, read_recording

STAGES = ("queue", "preprocess", "inference", "postprocess", "end_to_end")
STAGE_NAMES = {
    "queue": "queue",
    "preprocess": "preprocess",
    "inference": "inference",
    "postprocess": "postprocess",
    "end_to_end": "end to end",
}
# One colour per session (matplotlib's tab10 order, distinguishable for most colour-blind readers).
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22")


def _median(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(np.median(values)) if values.size else math.nan


def _p95(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    # One definition with the live metrics and bench's summary (app/metrics/window.py).
    return float(np.percentile(values, 95, method=PERCENTILE_METHOD)) if values.size else math.nan


@dataclass
class RecordedEvent:
    t_s: float
    kind: str
    text: str  # short label for the plots ("fallback: Core ML needs macOS")


@dataclass(frozen=True)
class StageStats:
    """One stage's latency over the measured rows, ms (NaN: no value recorded)."""

    median: float = math.nan
    p95: float = math.nan


@dataclass(frozen=True)
class SessionSummary:
    """One recording (or segment) summarised: what the report's tables, plots and comparisons show.
    Medians over the measured rows (after bench's `measure` event); NaN where a column was never recorded."""

    inferences: int = 0  # measured
    inferences_total: int = 0  # warm-up included
    warmup: int = 0
    duration_s: float = 0.0
    span_s: float = math.nan  # first to last measured inference
    inference_fps: float = math.nan  # between the first and the last measured inference
    capture_fps: float = math.nan
    stages: Mapping[str, StageStats] = field(default_factory=dict)  # keys: STAGES
    cpu_ms: float = math.nan  # CPU per inference
    offload_ratio: float = math.nan  # CPU ms / inference ms
    process_cpu_pct: float = math.nan
    system_cpu_pct: float = math.nan
    rss_mb: float = math.nan
    gpu_mem_mb: float = math.nan  # NVML's GPU memory of the process and its children (format 4 on)
    gpu_util_pct: float = math.nan
    # The power state (recording format 3 on; NaN where not readable where it ran, or not recorded)
    gpu_sm_clock_mhz: float = math.nan
    gpu_power_w: float = math.nan  # mean of the recorded samples
    cpu_mhz: float = math.nan
    # The GPU's energy per inference from the recorded power (its mean over the inference rate); NaN
    # unless every measured inference ran on the GPU and its power was recorded
    gpu_mj_per_inference: float = math.nan
    dropped: int = 0
    dropped_share: float = math.nan
    models: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)
    throttle_ms: list[str] = field(default_factory=list)
    backends: list[tuple[str, str]] = field(default_factory=list)  # (requested, used), in order of appearance
    fallback: bool = False
    fallback_reasons: list[str] = field(default_factory=list)
    software_gpu: bool = False
    software_adapter: str | None = None  # the software renderer's adapter, as the session's facts name it
    labels: Counter[str] = field(default_factory=Counter)  # top-1 label counts, warm-up included
    task: TaskFigures | None = None  # a model that is not a classifier: what it found (measured rows)
    lost_rows: int | None = None
    skipped_lines: int = 0
    complete: bool | None = None
    error: str | None = None


@dataclass
class RecordingData:
    """One recording, read and summarised."""

    path: Path
    index: int
    colour: str
    meta: dict
    skipped_lines: int
    inferences: list[dict]  # every inference row, in time order
    events: list[RecordedEvent]
    measured_from: float | None  # t_s of bench's `measure` event (warm-up done), if any
    measured_to: float | None = None  # t_s of a compare bench's `measure_end` event (its summary's end), if any
    label: str = ""  # legend text: model + backend
    t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    summary: SessionSummary = field(default_factory=SessionSummary)  # summarise(), once read
    segment: Segment | None = None  # a part of a recording cut at its switches (app/recording/segments.py)
    segments_in_recording: int = 1
    unreadable: str | None = None  # "X.csv: 7 lines could not be read (first at line N: why)" (recording/integrity.py)
    stop_problem: str | None = None  # why the recording did not stop cleanly, None when it did

    @property
    def facts(self) -> Mapping[str, Any] | None:
        """The delegate facts of the session this ran (sidecar); None when not recorded."""
        if self.segment is not None:
            return self.segment.facts
        sessions = [f for f in _dict(self.meta.get("sessions")).values() if isinstance(f, dict)]
        return sessions[0] if len(sessions) == 1 else None

    @property
    def segmented(self) -> bool:
        return self.segment is not None and self.segments_in_recording > 1

    @property
    def name(self) -> str:
        return self.path.name

    def column(self, name: str, rows: list[dict] | None = None) -> np.ndarray:
        return np.array([cell_number(r.get(name)) for r in (self.inferences if rows is None else rows)], dtype=float)

    @property
    def measured(self) -> list[dict]:
        """The rows the figures summarise: after bench's warm-up when there was one, else all."""
        if self.measured_from is None:
            return self.inferences
        end = math.inf if self.measured_to is None else self.measured_to
        rows = [r for r in self.inferences if self.measured_from <= cell_number(r["t_s"]) <= end]
        return rows or self.inferences


def load_session(path: Path, index: int) -> RecordingData:
    """Read one recording as one session; any problem is a UsageError with one plain line."""
    path = Path(path)
    session = _read(path)
    return _build(path, index, session, [r for r in session.rows if not math.isnan(cell_number(r.get("t_s")))])


def load_segments(path: Path, first_index: int) -> list[RecordingData]:
    """Read one recording cut at every switch, fallback, source or A/B change: one RecordingData per
    segment (one alone when nothing changed), numbered on from `first_index`."""
    path = Path(path)
    session = _read(path)
    segments = [g for g in split_segments(session.rows, session.metadata) if g.inferences]
    if len(segments) <= 1:
        data = load_session(path, first_index)
        data.segment = segments[0] if segments else None
        return [data]
    out = []
    for i, segment in enumerate(segments):
        data = _build(path, first_index + i, session, segment.rows)
        data.segment, data.segments_in_recording = segment, len(segments)
        data.summary = summarise(data)
        out.append(data)
    return out


def _read(path: Path) -> Recording:
    path = Path(path)
    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if path.is_dir():
        raise UsageError(f"{path}: is a folder, not a recording (give the .csv file)")
    try:
        session = read_recording(path)
    except ValueError:
        sides = comparison_sides(path)
        if sides is not None:  # the A/B per-frame file: say which files make the report
            raise UsageError(
                f"{path}: this is an A/B comparison's per-frame file, not a recording; report the two sides: "
                f"report {sides[0]} {sides[1]}"
            ) from None
        raise UsageError(f"{path}: not a Delegate Scope recording (the header is not the CSV format's)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not any(not r.get("event") and not math.isnan(cell_number(r.get("t_s"))) for r in session.rows):
        rows = [r for r in session.rows if not math.isnan(cell_number(r.get("t_s")))]
        what = f"{len(rows)} event row{'s' if len(rows) != 1 else ''} and " if rows else ""
        raise UsageError(f"{path}: empty recording ({what}no inference rows): nothing to report")
    return session


def _build(path: Path, index: int, session: Recording, rows: list[dict]) -> RecordingData:
    inferences = [r for r in rows if not r.get("event")]
    inferences.sort(key=lambda r: cell_number(r["t_s"]))
    events: list[RecordedEvent] = []
    measured_from = measured_to = None
    for r in rows:
        kind = original_text(r["event"])
        if not kind:
            continue
        t = cell_number(r["t_s"])
        if kind == "measure":
            measured_from = t
        elif kind == "measure_end":
            measured_to = t
        events.append(RecordedEvent(t, kind, _event_text(kind, r)))
    meta = session.metadata if isinstance(session.metadata, dict) else {}
    data = RecordingData(
        path,
        index,
        COLOURS[index % len(COLOURS)],
        meta,
        session.skipped_lines,
        inferences,
        events,
        measured_from,
        measured_to,
    )
    data.t = data.column("t_s")
    data.unreadable, data.stop_problem = unreadable_text(path.name, session), stop_problem(session)
    data.summary = summarise(data)
    return data


def _event_text(kind: str, row: dict) -> str:
    message = original_text(row.get("message", ""))
    if kind == "measure":
        return "warm-up done"
    if kind == "measure_end":
        return "measured span ends"
    if kind in ("open", "switch"):
        text = f"{kind}: {change_text(kind, row).removeprefix('switch to ')}"
    elif kind == "stop":
        text = "stop"
    else:
        text = f"{kind}: {message}" if message else kind
    return text if len(text) <= 48 else text[:47] + "…"


def dropped_frames(rows: list[dict]) -> int:
    """Frames captured but never inferred: frame_id gaps between consecutive inferences of one source.

    The capture thread overwrites a frame that inference did not take in time; frame ids count on,
    so a gap of k ids between two inferred frames is k frames dropped. A new source (or an id that
    goes backwards) starts counting afresh."""
    dropped = 0
    previous: tuple[str, float] | None = None
    for r in rows:
        source, frame = r.get("source", ""), cell_number(r.get("frame_id"))
        if math.isnan(frame):
            previous = None
            continue
        if previous is not None and previous[0] == source and frame > previous[1] + 1:
            dropped += int(frame - previous[1] - 1)
        previous = (source, frame)
    return dropped


def _distinct(rows: list[dict], column: str) -> list[str]:
    seen: dict[str, None] = {}
    for r in rows:
        value = original_text(r.get(column, ""))
        if value:
            seen[value] = None
    return list(seen)


def _dict(value: object) -> Mapping[str, Any]:
    """A sidecar value that should be an object: itself when it is one, else empty."""
    return value if isinstance(value, dict) else {}


def summarise(s: RecordingData) -> SessionSummary:
    """The session's figures over its measured rows (labels, backends and models over every row)."""
    rows = s.measured
    t = s.column("t_s", rows)
    span = float(t[-1] - t[0]) if len(t) > 1 else math.nan
    stages = {}
    for stage in STAGES:
        values = s.column(f"{stage}_ms", rows)
        stages[stage] = StageStats(median=_median(values), p95=_p95(values))
    cpu_ms = _median(s.column("inference_cpu_ms", rows))
    inf_ms = stages["inference"].median
    dropped = dropped_frames(rows)
    pairs = _backend_pairs(s.inferences)
    # A segment ran one session: its own facts, not every session of the recording.
    all_facts = [s.segment.facts] if s.segment is not None else list(_dict(s.meta.get("sessions")).values())
    fallback_reasons = _fallback_reasons(s, all_facts)
    software_facts = [f for f in all_facts if isinstance(f, dict) and f.get("software")]
    labels = Counter(original_text(r.get("top1_label", "")) for r in s.inferences)
    labels.pop("", None)
    lost = s.meta.get("lost_rows")
    gpu_w, gpu_mj = _gpu_energy(s, rows, span)
    return SessionSummary(
        inferences=len(rows),
        inferences_total=len(s.inferences),
        warmup=sum(1 for r in s.inferences if s.measured_from is not None and cell_number(r["t_s"]) < s.measured_from),
        duration_s=float(s.t[-1] - s.t[0]) if len(s.t) > 1 else 0.0,
        span_s=span,
        # inferences per second between the first and the last measured inference
        inference_fps=(len(rows) - 1) / span if span and span > 0 else math.nan,
        capture_fps=_median(s.column("capture_fps", rows)),
        stages=stages,
        cpu_ms=cpu_ms,
        offload_ratio=cpu_ms / inf_ms if inf_ms and inf_ms > 0 and not math.isnan(cpu_ms) else math.nan,
        process_cpu_pct=_median(s.column("process_cpu_pct", rows)),
        system_cpu_pct=_median(s.column("system_cpu_pct", rows)),
        rss_mb=_median(s.column("rss_mb", rows)),
        gpu_mem_mb=_median(s.column("gpu_mem_mb", rows)),
        gpu_util_pct=_median(s.column("gpu_util_pct", rows)),
        gpu_sm_clock_mhz=_median(s.column("gpu_sm_clock_mhz", rows)),
        gpu_power_w=gpu_w,
        cpu_mhz=_median(s.column("cpu_mhz", rows)),
        gpu_mj_per_inference=gpu_mj,
        dropped=dropped,
        dropped_share=dropped / (dropped + len(rows)) if rows else math.nan,
        models=_distinct(s.inferences, "model"),
        sources=_distinct(s.inferences, "source"),
        threads=_distinct(s.inferences, "threads"),
        throttle_ms=_distinct(s.inferences, "throttle_ms"),
        backends=pairs,
        fallback=any(req and used and req != used for req, used in pairs) or bool(fallback_reasons),
        fallback_reasons=list(dict.fromkeys(fallback_reasons)),
        software_gpu=bool(software_facts),
        software_adapter=str(software_facts[0].get("adapter") or "") or None if software_facts else None,
        labels=labels,
        task=_task_figures(rows),
        lost_rows=lost if isinstance(lost, int) else None,
        skipped_lines=s.skipped_lines,
        complete=s.meta.get("complete") if isinstance(s.meta.get("complete"), bool) else None,
        error=str(s.meta["error"]) if s.meta.get("error") else None,
    )


def _backend_pairs(rows: list[dict]) -> list[tuple[str, str]]:
    """The (requested, used) backends of the rows, each once, in order of appearance."""
    pairs = []
    for r in rows:
        pair = (original_text(r.get("backend_requested", "")), original_text(r.get("backend_used", "")))
        if pair not in pairs:
            pairs.append(pair)
    return pairs


def _fallback_reasons(s: RecordingData, all_facts: Sequence[object]) -> list[str]:
    """Why the session fell back: its facts' reasons, then its fallback events' (repeats kept)."""
    reasons = [str(f["fallback_reason"]) for f in all_facts if isinstance(f, dict) and f.get("fallback_reason")]
    return reasons + [e.text.split(": ", 1)[-1] for e in s.events if e.kind == "fallback"]


def _gpu_energy(s: RecordingData, rows: list[dict], span: float) -> tuple[float, float]:
    """The GPU's mean recorded power (W) and its energy per inference (mJ): NaN unless recorded, the energy
    also unless every measured row ran on the GPU."""
    watts = s.column("gpu_power_w", rows)
    gpu_w = float(np.nanmean(watts)) if np.isfinite(watts).any() else math.nan
    rate = (len(rows) - 1) / span if span and span > 0 else math.nan
    on_gpu = bool(rows) and all(original_text(r.get("backend_used", "")) == "gpu" for r in rows)
    return gpu_w, gpu_w / rate * 1000.0 if on_gpu and rate > 0 else math.nan


def _task_figures(rows: list[dict]) -> TaskFigures | None:
    """What a model that is not a classifier found over the rows; None when no row has task columns."""
    task = None
    for r in rows:  # the task columns (docs/csv-format.md): empty or absent in a classifier's rows
        cells = parse_cells(r)
        if cells is not None:
            task = task or TaskFigures()
            task.add(*cells)
    return task


def backend_text(summary: SessionSummary) -> str:
    parts = []
    for requested, used in summary.backends:
        if requested and used and requested != used:
            parts.append(f"{requested}→{used}")
        else:
            parts.append(used or requested or "?")
    # A software "GPU" is said as every view says it (app/backends/describe.py: backend_words).
    return " / ".join(parts) + (
        f" (GPU software: {software_renderer(summary.software_adapter)})" if summary.software_gpu else ""
    )


def session_label(summary: SessionSummary) -> str:
    text = f"{' / '.join(summary.models) or '?'} on {backend_text(summary)}"
    return text + (" (fallback)" if summary.fallback else "")
