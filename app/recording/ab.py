"""The window's recording of an A/B comparison, as `bench --compare-* --csv` records one: side A's
rows, side B's rows and the per-frame comparison. The recording the user named (X.csv) holds side
A, as it does without a comparison; side B is a recording of its own beside it (X-b.csv, the same
format, so `report X.csv X-b.csv` draws the pair) and the per-frame comparison is X-compare.csv
(bench's comparison columns and cells, task columns always). B's files open when B first runs during the recording, so a
comparison started after Record is recorded too. Format: docs/csv-format.md.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from app.pipeline.compare import (
    COMPARISON_COLUMNS,
    COMPARISON_TASK_COLUMNS,
    COMPARISON_TEXT_COLUMNS,
    FrameComparison,
    comparison_row,
)
from app.recording.writer import RecordingWriter, sidecar_path


def b_recording(path: Path) -> Path:
    """X.csv (side A) -> X-b.csv (side B's own recording)."""
    return Path(path).with_name(f"{Path(path).stem}-b{Path(path).suffix}")


def comparison_recording(path: Path) -> Path:
    """X.csv (side A) -> X-compare.csv (one row per frame both sides inferred)."""
    return Path(path).with_name(f"{Path(path).stem}-compare{Path(path).suffix}")


COMPARISON_FORMAT = "delegate-scope-comparison"  # its sidecar's "format": how a reader tells it from a recording


def comparison_sides(path: Path) -> tuple[str, str] | None:
    """The side files an X-compare.csv was written beside (from its sidecar, else by its name), or None
    when `path` is not a comparison file: for `report`, to say what to pass instead."""
    try:
        meta = json.loads(sidecar_path(Path(path)).read_text(encoding="utf-8"))
        if isinstance(meta, dict) and meta.get("format") == COMPARISON_FORMAT:
            return str(meta.get("side_a") or "X.csv"), str(meta.get("side_b") or "X-b.csv")
    except (OSError, ValueError, UnicodeError, RecursionError):  # RecursionError: nesting deeper than Python's stack
        pass
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            header = f.readline().strip().split(",")
    except OSError:
        return None
    if header[: len(COMPARISON_COLUMNS)] != list(COMPARISON_COLUMNS):
        return None
    path, suffix = Path(path), Path(path).suffix
    stem = path.stem
    window = (f"{stem[: -len('-compare')]}{suffix}", f"{stem[: -len('-compare')]}-b{suffix}")  # X-compare.csv
    bench = (f"{stem}-a{suffix}", f"{stem}-b{suffix}")  # bench --compare-* --csv X.csv writes X-a.csv, X-b.csv
    if stem.endswith("-compare") and (path.parent / window[0]).exists():
        return window
    return bench


class ComparisonWriter:
    """Writes each frame's comparison as it is made, through the recorder's bounded queue and thread, in
    bench's cells (`comparison_row`). Always with the task columns: the window may switch either side to
    a model of another task while recording, and a CSV's header cannot grow."""

    def __init__(self, path: Path, side_a: Path, side_b: Path) -> None:
        meta = {"format": COMPARISON_FORMAT, "side_a": side_a.name, "side_b": side_b.name}
        self.recorder = RecordingWriter(path, meta, columns=COMPARISON_COLUMNS + COMPARISON_TASK_COLUMNS,
                                        text_columns=COMPARISON_TEXT_COLUMNS)  # fmt: skip

    def add(self, c: FrameComparison) -> None:
        self.recorder.add_row(comparison_row(c))


# ---- the frames an A/B run's agreement counts: one definition for bench and report ------------


def measured_comparisons(comparisons: Iterable[FrameComparison], start: float, end: float) -> list[FrameComparison]:
    """The frames an A/B run's agreement counts: those compared (the second side's result in) within the
    measured span, `start` to `end` on the monotonic clock: the instants each side's recording marks with
    its `measure` and `measure_end` events. bench summarises exactly these and writes exactly these to its
    comparison CSV, so `report` reads the same count back (`read_compared`)."""
    return [c for c in comparisons if start <= c.at <= end]


@dataclass(frozen=True)
class ComparedFrames:
    """A comparison CSV read back: its frames, and how many of them agree (its `top1_agree` cells)."""

    path: Path
    frames: int
    agree: int
    task: str | None  # a model that is not a classifier: its task (the frame agrees, per app/model/agreement.py)


def comparison_between(a: Path, b: Path) -> Path | None:
    """The per-frame comparison written beside two side recordings of one A/B run, in either order:
    bench's X.csv beside X-a.csv and X-b.csv, the window's X-compare.csv beside X.csv and X-b.csv."""
    for first, second in ((Path(a), Path(b)), (Path(b), Path(a))):
        if first.parent != second.parent or first.suffix != second.suffix:
            continue
        stem, suffix = first.stem, first.suffix
        candidates = []
        if stem.endswith("-a") and second.stem == stem[:-2] + "-b":  # bench: X-a.csv, X-b.csv -> X.csv
            candidates.append(first.with_name(stem[:-2] + suffix))
        if second.stem == stem + "-b":  # the window: X.csv, X-b.csv -> X-compare.csv
            candidates.append(comparison_recording(first))
        for path in candidates:
            if _is_comparison(path):
                return path
    return None


def _is_comparison(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            header = next(csv.reader(f), [])
    except OSError:
        return False
    return header[: len(COMPARISON_COLUMNS)] == list(COMPARISON_COLUMNS)


def read_compared(path: Path | None) -> ComparedFrames | None:
    """A comparison CSV's frames and agreeing frames; None when there is none or it cannot be read. A row
    whose `top1_agree` is not 0 or 1 (torn, damaged) is not a compared frame."""
    if path is None or not _is_comparison(path):
        return None
    frames = agree = 0
    tasks: set[str] = set()
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            for row in csv.DictReader(f):
                verdict = row.get("top1_agree")
                if verdict not in ("0", "1"):
                    continue
                frames += 1
                agree += verdict == "1"
                if row.get("task"):
                    tasks.add(str(row["task"]))
    except (OSError, csv.Error):
        return None
    return ComparedFrames(Path(path), frames, agree, tasks.pop() if len(tasks) == 1 else None)
