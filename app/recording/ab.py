"""The window's recording of an A/B comparison, as `bench --compare-* --csv` records one: side A's
rows, side B's rows and the per-frame comparison. The recording the user named (X.csv) holds side
A, as it does without a comparison; side B is a recording of its own beside it (X-b.csv, the same
format, so `report X.csv X-b.csv` draws the pair) and the per-frame comparison is X-compare.csv
(bench's comparison columns). B's files open when B first runs during the recording, so a
comparison started after Record is recorded too. Format: docs/csv-format.md.
"""

from __future__ import annotations

from pathlib import Path

from app.pipeline.compare import COMPARISON_COLUMNS, FrameComparison
from app.recording.writer import RecordingWriter


def b_recording(path: Path) -> Path:
    """X.csv (side A) -> X-b.csv (side B's own recording)."""
    return Path(path).with_name(f"{Path(path).stem}-b{Path(path).suffix}")


def comparison_recording(path: Path) -> Path:
    """X.csv (side A) -> X-compare.csv (one row per frame both sides inferred)."""
    return Path(path).with_name(f"{Path(path).stem}-compare{Path(path).suffix}")


class ComparisonWriter:
    """Writes each frame's comparison as it is made, through the recorder's bounded queue and thread."""

    def __init__(self, path: Path, side_a: Path, side_b: Path) -> None:
        meta = {"format": "delegate-scope-comparison", "side_a": side_a.name, "side_b": side_b.name}
        self.recorder = RecordingWriter(path, meta, columns=COMPARISON_COLUMNS, text_columns={"a_top1", "b_top1"})

    def add(self, c: FrameComparison) -> None:
        self.recorder.add_row(
            {
                "frame_id": c.frame_index,
                "a_top1": c.a_top1,
                "b_top1": c.b_top1,
                "top1_agree": int(c.top1_agree),
                "top5_overlap": c.top5_overlap,
                "max_abs_diff": c.max_abs_diff,
                "tv_distance": c.tv_distance,
                "a_inference_ms": c.a_inference_ms,
                "b_inference_ms": c.b_inference_ms,
                "a_cpu_ms": c.a_cpu_ms,
                "b_cpu_ms": c.b_cpu_ms,
            }
        )
