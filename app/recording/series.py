"""A recorded session turned back into the series the live plots show, for Review. Qt-free.

What was recorded is what is drawn: one point per inference row, at its own time, with the
figures as the row holds them (the latency of that inference; capture and inference fps and CPU %
as the app measured them over its window when the row was written). Nothing is resampled or
smoothed: a resampling window that reached past the first or the last row counted missing frames
and drew a steady 30 fps clip climbing from 25 at the start and dipping at the end, and a 5 s
window turned a step into a slope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.recording.segments import SPLITS, Segment, change_text, split_segments
from app.recording.writer import Recording, cell_number, original_text

# plot key -> recorded column
RECORDED = {
    "capture_fps": "capture_fps",
    "inference_fps": "inference_fps",
    "inference_mean": "inference_ms",
    "preprocess_mean": "preprocess_ms",
    "postprocess_mean": "postprocess_ms",
    "end_to_end_mean": "end_to_end_ms",
    "process_cpu": "process_cpu_pct",
    "system_cpu": "system_cpu_pct",
    "rss_mb": "rss_mb",
    "gpu_mem_mb": "gpu_mem_mb",  # format version 4 on
    "gpu_sm_clock": "gpu_sm_clock_mhz",  # format version 3 on; empty cells (not readable, or older) are gaps
    "cpu_mhz": "cpu_mhz",
    "gpu_power": "gpu_power_w",
}
_QUIET = {"start", "stop", "measure"}


@dataclass
class RecordedSeries:
    t: np.ndarray  # each inference row's t_s, in time order
    values: dict[str, np.ndarray]  # plot key -> the recorded column, one value per row
    markers: list[tuple[float, str]]  # (t_s, label): every change of segment and every other notable event
    segments: list[Segment]


def recorded_series(session: Recording) -> RecordedSeries:
    segments = split_segments(session.rows, session.metadata)
    inferences = [r for g in segments for r in g.inferences]  # time order, rows without a time left out
    t = np.array([cell_number(r["t_s"]) for r in inferences], dtype=float)
    values = {key: np.array([cell_number(r.get(column)) for r in inferences], dtype=float)
              for key, column in RECORDED.items()}  # fmt: skip
    # The segment's number only: Review's table of segments says what changed, in full; labels as long
    # as that overlapped each other on the plot.
    markers = [(g.start_s, circled(g.number)) for g in segments[1:]]
    for r in session.rows:  # what did not start a segment but is worth a line: losses, refusals, errors
        kind, at = original_text(r.get("event", "")), cell_number(r.get("t_s"))
        if kind and kind not in _QUIET and kind not in SPLITS and not math.isnan(at):
            text = change_text(kind, r)
            markers.append((at, _short(f"{kind}: {text}" if text != kind else kind, 32)))
    markers.sort()
    return RecordedSeries(t, values, markers, segments)


def session_series(session: Recording) -> tuple[np.ndarray, dict[str, np.ndarray], list[tuple[float, str]]]:
    """(each inference row's t_s, recorded series by plot key, event markers)."""
    series = recorded_series(session)
    return series.t, series.values, series.markers


def circled(n: int) -> str:
    """① ② ... for segment numbers up to 20, then (21)."""
    return chr(0x2460 + n - 1) if 1 <= n <= 20 else f"({n})"


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
