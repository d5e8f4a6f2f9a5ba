"""The window's recording of an A/B comparison, as `bench --compare-* --csv` records one: side A's
rows, side B's rows and the per-frame comparison. The recording the user named (X.csv) holds side
A, as it does without a comparison; side B is a recording of its own beside it (X-b.csv, the same
format, so `report X.csv X-b.csv` draws the pair) and the per-frame comparison is X-compare.csv
(bench's comparison columns and cells, task columns always). B's files open when B first runs during the recording, so a
comparison started after Record is recorded too. Format: docs/csv-format.md.
"""

from __future__ import annotations

import json
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
