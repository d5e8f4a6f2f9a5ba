"""A recorded session turned back into the series the live plots show, so a recording can be
reviewed in the same plots: the same sliding-window rates and latency statistics, sampled on
the same clock the window uses. Qt-free."""

from __future__ import annotations

import math

import numpy as np

from app.recording import Recording, cell_number

_STAGES = ("preprocess", "inference", "postprocess", "end_to_end")


MAX_SAMPLES = 100_000  # 5.5 hours at the live plots' 0.2 s step; longer recordings are sampled more coarsely


def session_series(
    session: Recording, step_s: float = 0.2, window_s: float = 5.0
) -> tuple[np.ndarray, dict[str, np.ndarray], list[tuple[float, str]]]:
    """(sample times in s since the recording started, series by plot key, event markers)."""
    # Rows without a readable time cannot be placed on the time axis (a damaged or edited recording).
    inferences = [r for r in session.rows if not r.get("event") and not math.isnan(cell_number(r.get("t_s")))]
    events = [
        (cell_number(r["t_s"]), f"{r['event']}: {r.get('backend_used') or ''} {r.get('model') or ''}".strip())
        for r in session.rows
        if r.get("event") and r["event"] not in ("start", "stop", "measure")
    ]
    events = [(t, text) for t, text in events if not math.isnan(t)]
    if not inferences:
        return np.zeros(0), {}, events
    t = np.array([cell_number(r["t_s"]) for r in inferences])
    order = np.argsort(t, kind="stable")  # rows are written in order; sort anyway, then slice windows
    t = t[order]
    stage = {s: np.array([cell_number(r[f"{s}_ms"]) for r in inferences])[order] for s in _STAGES}
    columns = ("capture_fps", "process_cpu_pct", "system_cpu_pct")
    column = {c: np.array([cell_number(r[c]) for r in inferences])[order] for c in columns}
    start = float(t[0])
    # A recording claiming a span of years (a damaged time column) must not ask for billions of samples.
    step_s = max(step_s, (float(t[-1]) - start) / MAX_SAMPLES)
    samples = np.arange(start, float(t[-1]) + step_s, step_s)
    keys = (
        "capture_fps", "inference_fps", "display_fps", "inference_mean", "inference_p95", "preprocess_mean",
        "postprocess_mean", "end_to_end_mean", "process_cpu", "system_cpu",
    )  # fmt: skip
    out = {k: np.full(len(samples), np.nan) for k in keys}
    lows = np.maximum(start, samples - window_s)
    first = np.searchsorted(t, lows, side="right")  # window (lo, now], as app.metrics uses
    last = np.searchsorted(t, samples, side="right")
    for i, (a, b) in enumerate(zip(first, last, strict=True)):
        if b <= a:
            continue
        span = samples[i] - lows[i]
        out["inference_fps"][i] = (b - a) / span if span > 0 else np.nan
        # These columns were already measured over a window when recorded: take the latest.
        out["capture_fps"][i] = column["capture_fps"][b - 1]
        out["process_cpu"][i] = column["process_cpu_pct"][b - 1]
        out["system_cpu"][i] = column["system_cpu_pct"][b - 1]
        for s in _STAGES:
            values = stage[s][a:b]
            values = values[~np.isnan(values)]
            if values.size:
                out[f"{s}_mean"][i] = values.mean()
                if s == "inference":
                    out["inference_p95"][i] = np.percentile(values, 95)
    return samples, out, events
