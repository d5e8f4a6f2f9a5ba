"""`report`'s tables as plain text (escaped by the HTML page, drawn by the PNG): one column
per session, and the comparison with the baseline."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping

from app.recording.segments import delegate_facts
from app.report.compare import Comparison
from app.report.data import STAGE_NAMES, STAGES, RecordingData, SessionSummary, backend_text

# The delegation facts that head each column (HTML table and PNG header), in this order.
FACT_ROWS = ("runs on", "threads", "nodes delegated", "ops left on CPU", "adapter", "init / first inference")
FACT_NAMES = {"init / first inference": "open: init / first inference"}


def facts_of(s: RecordingData) -> Mapping[str, str]:
    """The delegation facts of a column by name (`delegate_facts`' lines)."""
    return dict(delegate_facts(s.facts, s.inferences))


def header_lines(s: RecordingData, files: int = 1) -> list[tuple[str, str]]:
    """What heads a column in the PNG: where it comes from, what ran and its delegation facts (what
    changed at a segment's start is the box's title). `files`: recordings in the report."""
    x, facts = s.summary, facts_of(s)
    lines = []
    if files > 1 or not s.segmented:
        lines.append(("recording", s.name))
    if s.segmented and s.segment is not None:
        g = s.segment
        lines.append(("part", f"{g.number} of {s.segments_in_recording}, {g.start_s:.1f}–{g.end_s:.1f} s"))
    lines.append(("model", " / ".join(x.models) or "–"))
    lines.append(("backend", backend_text(x) + (" FALLBACK" if x.fallback else "")))
    lines += [(FACT_NAMES.get(name, name), facts[name]) for name in FACT_ROWS if name in facts]
    return lines + integrity_lines(s)


def where_text(s: RecordingData) -> str:
    """Which recording, and for a segment which part of it: 'rec.csv, part 2 of 3, 12.0–24.6 s'."""
    if not s.segmented or s.segment is None:
        return s.name
    g = s.segment
    return f"{s.name}, part {g.number} of {s.segments_in_recording}, {g.start_s:.1f}–{g.end_s:.1f} s"


def fmt(value: float | None, digits: int = 2, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}{unit}"


def top_labels_text(labels: Counter, n: int = 3) -> str:
    total = sum(labels.values())
    return ", ".join(f"{label} {count / total:.0%}" for label, count in labels.most_common(n)) if total else "–"


def summary_rows(sessions: list[RecordingData], comparisons: list[Comparison]) -> list[tuple[str, list[str]]]:
    """The summary table as (row name, one cell per session); plain text, escaped by the caller."""
    agreement = {c.session.index: c.agreement.text for c in comparisons}
    rows: list[tuple[str, list[str]]] = []

    def add(name: str, cells: list[str]) -> None:
        rows.append((name, cells))

    ss = [s.summary for s in sessions]
    add("recording", [where_text(s) for s in sessions])
    if any(s.segmented for s in sessions):
        add("changed at its start", [(s.segment.change if s.segmented and s.segment else "") or "–" for s in sessions])
    add("model", [" / ".join(x.models) or "–" for x in ss])
    add("backend", [backend_text(x) + (" FALLBACK" if x.fallback else "") for x in ss])
    facts = [facts_of(s) for s in sessions]
    for name in FACT_ROWS:
        if any(name in f for f in facts):
            add(FACT_NAMES.get(name, name), [f.get(name, "–") for f in facts])
    add("source", [" / ".join(x.sources) or "–" for x in ss])
    add(
        "inferences",
        [f"{x.inferences}" + (f" (+{x.warmup} warm-up)" if x.warmup else "") for x in ss],
    )
    add("duration", [fmt(x.duration_s, 1, " s") for x in ss])
    add("inference fps", [fmt(x.inference_fps, 1) for x in ss])
    add("capture fps (median)", [fmt(x.capture_fps, 1) for x in ss])
    add("dropped frames", [f"{x.dropped} ({fmt(x.dropped_share * 100, 0, '%')})" for x in ss])
    for stage in STAGES:
        add(
            f"{STAGE_NAMES[stage]} ms median / p95",
            [f"{fmt(x.stages[stage].median)} / {fmt(x.stages[stage].p95)}" for x in ss],
        )
    add("CPU ms per inference (median)", [fmt(x.cpu_ms) for x in ss])
    add("offload ratio (CPU ms / inference ms)", [fmt(x.offload_ratio) for x in ss])
    add("process CPU % of machine (median)", [fmt(x.process_cpu_pct, 1) for x in ss])
    add("memory: resident / GPU (median)", [_memory(x) for x in ss])
    add("GPU SM clock / power", [_gpu_power(x) for x in ss])
    add("GPU energy per inference", [_gpu_energy(x) for x in ss])
    add("CPU clock (median of cores)", [_recorded(x.cpu_mhz, "MHz") for x in ss])
    add("top-1 labels", [top_labels_text(x.labels) for x in ss])
    if any(x.task is not None for x in ss):  # models that are not classifiers: what they found
        add("task", [x.task.task if x.task else "classification" for x in ss])
        add("results", [x.task.describe() if x.task else "–" for x in ss])
    if len(sessions) > 1:
        add("top-1 agreement with its baseline", ["baseline"] + [agreement[s.index] for s in sessions[1:]])
    add("rows lost while recording", [_lost(x) for x in ss])
    add("lines that could not be read", [_unreadable(s) for s in sessions])
    add("stopped cleanly", [_stopped(s) for s in sessions])
    return rows


def _lost(x: SessionSummary) -> str:
    """Rows the recorder dropped when the disk stalled: its sidecar counts them."""
    return "not recorded (no sidecar)" if x.lost_rows is None else str(x.lost_rows)


def _unreadable(s: RecordingData) -> str:
    """'7 lines (first at line 75: 2 cells where the header has 38)', or '0'."""
    if not s.unreadable:
        return "0"
    return s.unreadable.removeprefix(f"{s.name}: ").replace(" could not be read", "")


def _stopped(s: RecordingData) -> str:
    return "yes" if s.stop_problem is None else "NO: " + s.stop_problem.removeprefix("not stopped cleanly: ")


def integrity_lines(s: RecordingData) -> list[tuple[str, str]]:
    """What a PNG's header box says of a recording that was not read whole or not stopped cleanly."""
    out = []
    if s.unreadable:
        out.append(("NOT READ", _unreadable(s)))
    if s.stop_problem:
        out.append(("NOT STOPPED CLEANLY", s.stop_problem.removeprefix("not stopped cleanly: ")))
    return out


def comparison_rows(comparisons: list[Comparison]) -> list[tuple[str, list[str]]]:
    """Comparison table: one row per figure, one column per non-baseline session."""
    if not comparisons:
        return []
    return [
        ("compared with", [c.baseline.label for c in comparisons]),
        ("inference (median)", [c.inference for c in comparisons]),
        ("inference p95", [c.inference_p95 for c in comparisons]),
        ("end to end (median)", [c.end_to_end for c in comparisons]),
        ("inference fps", [c.fps for c in comparisons]),
        ("CPU time per inference", [c.cpu_ms for c in comparisons]),
        ("process CPU %", [c.process_cpu for c in comparisons]),
        ("top-1 agreement", [c.agreement.text for c in comparisons]),
        (
            "top-1 label distribution overlap",
            [fmt(c.agreement.distribution_overlap * 100, 0, "%") for c in comparisons],
        ),
    ]


NOT_RECORDED = "not recorded (not readable where it ran, or a recording before format 3)"


def _recorded(value: float, unit: str) -> str:
    return NOT_RECORDED if math.isnan(value) else f"{value:.0f} {unit}"


def _memory(x: SessionSummary) -> str:
    """'212 MB / GPU 96 MB'; a GPU column left empty (no NVML where it ran, or a recording before format 4)
    says so."""
    gpu = "GPU not recorded" if math.isnan(x.gpu_mem_mb) else f"GPU {x.gpu_mem_mb:.0f} MB"
    return f"{fmt(x.rss_mb, 0, ' MB')} / {gpu}"


def _gpu_power(x: SessionSummary) -> str:
    if math.isnan(x.gpu_sm_clock_mhz) and math.isnan(x.gpu_power_w):
        return NOT_RECORDED
    return f"{_recorded(x.gpu_sm_clock_mhz, 'MHz')} (median) / {_recorded(x.gpu_power_w, 'W')} (mean)"


def _gpu_energy(x: SessionSummary) -> str:
    if not math.isnan(x.gpu_mj_per_inference):
        return f"{x.gpu_mj_per_inference:.2f} mJ (mean recorded power / inference rate, idle included)"
    if math.isnan(x.gpu_power_w):
        return "–"
    return "– (not every inference ran on the GPU)"
