"""`report`'s tables as plain text (escaped by the HTML page, drawn by the PNG): one column
per session, and the comparison with the baseline."""

from __future__ import annotations

import math
from collections import Counter

from app.report_data import STAGE_NAMES, STAGES, RecordingData, backend_text


def fmt(value: float | None, digits: int = 2, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}{unit}"


def top_labels_text(labels: Counter, n: int = 3) -> str:
    total = sum(labels.values())
    return ", ".join(f"{label} {count / total:.0%}" for label, count in labels.most_common(n)) if total else "–"


def summary_rows(sessions: list[RecordingData], comparisons: list[dict]) -> list[tuple[str, list[str]]]:
    """The summary table as (row name, one cell per session); plain text, escaped by the caller."""
    agreement = {c["session"].index: c["agreement"]["text"] for c in comparisons}
    rows: list[tuple[str, list[str]]] = []

    def add(name: str, cells: list[str]) -> None:
        rows.append((name, cells))

    ss = [s.summary for s in sessions]
    add("recording", [s.name for s in sessions])
    add("model", [" / ".join(x["models"]) or "–" for x in ss])
    add("backend", [backend_text(x) + (" FALLBACK" if x["fallback"] else "") for x in ss])
    add("source", [" / ".join(x["sources"]) or "–" for x in ss])
    add(
        "inferences",
        [f"{x['inferences']}" + (f" (+{x['warmup']} warm-up)" if x["warmup"] else "") for x in ss],
    )
    add("duration", [fmt(x["duration_s"], 1, " s") for x in ss])
    add("inference fps", [fmt(x["inference_fps"], 1) for x in ss])
    add("capture fps (median)", [fmt(x["capture_fps"], 1) for x in ss])
    add("dropped frames", [f"{x['dropped']} ({fmt(x['dropped_share'] * 100, 0, '%')})" for x in ss])
    for stage in STAGES:
        add(
            f"{STAGE_NAMES[stage]} ms median / p95",
            [f"{fmt(x['stages'][stage]['median'])} / {fmt(x['stages'][stage]['p95'])}" for x in ss],
        )
    add("CPU ms per inference (median)", [fmt(x["cpu_ms"]) for x in ss])
    add("offload ratio (CPU ms / inference ms)", [fmt(x["offload_ratio"]) for x in ss])
    add("process CPU % of machine (median)", [fmt(x["process_cpu_pct"], 1) for x in ss])
    add("top-1 labels", [top_labels_text(x["labels"]) for x in ss])
    if len(sessions) > 1:
        add("top-1 agreement with #1", ["baseline"] + [agreement[s.index] for s in sessions[1:]])
    add(
        "lost rows / skipped lines",
        [f"{'?' if x['lost_rows'] is None else x['lost_rows']} / {x['skipped_lines']}" for x in ss],
    )
    return rows


def comparison_rows(comparisons: list[dict]) -> list[tuple[str, list[str]]]:
    """Comparison table: one row per figure, one column per non-baseline session."""
    if not comparisons:
        return []
    return [
        ("inference (median)", [c["inference"] for c in comparisons]),
        ("inference p95", [c["inference_p95"] for c in comparisons]),
        ("end to end (median)", [c["end_to_end"] for c in comparisons]),
        ("inference fps", [c["fps"] for c in comparisons]),
        ("CPU time per inference", [c["cpu_ms"] for c in comparisons]),
        ("process CPU %", [c["process_cpu"] for c in comparisons]),
        ("top-1 agreement", [c["agreement"]["text"] for c in comparisons]),
        (
            "top-1 label distribution overlap",
            [fmt(c["agreement"]["distribution_overlap"] * 100, 0, "%") for c in comparisons],
        ),
    ]
