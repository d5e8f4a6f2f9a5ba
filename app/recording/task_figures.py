"""What a run of a model that is not a classifier found, per inference and over the run.

Per inference: the recording's task columns (`task_cells`, docs/csv-format.md). Over a run:
`TaskFigures`, summed from those same cells, so `bench` (from its results) and `report` (from a
recording) give the same figures: results per frame, the labels seen (detections, classes present)
with how often and their mean score or share of pixels, the mean keypoint score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from app.model.decode import TaskResult
from app.model.task import Task
from app.recording.writer import TASK_COLUMNS, original_text

__all__ = ["TASK_COLUMNS", "TaskFigures", "parse_cells", "task_cells", "task_values"]
_LABELS_SHOWN = 20  # labels a summary lists, most frequent first


def task_values(result: TaskResult) -> tuple[list[str], list[float | None]]:
    """(labels, scores) of one result: detections (label, score), classes present (label, share of
    pixels), keypoints (name, score or None), raw outputs (name, mean)."""
    if result.task == Task.DETECTION:
        return [d.label for d in result.detections], [d.score for d in result.detections]
    if result.task == Task.SEGMENTATION:
        return [label for _, label, _ in result.class_fractions], [share for _, _, share in result.class_fractions]
    if result.task == Task.KEYPOINTS:
        return [k.name for k in result.keypoints], [k.score for k in result.keypoints]
    return [s.name for s in result.outputs], [s.mean for s in result.outputs]


def task_cells(result: TaskResult) -> dict[str, object]:
    """The TASK_COLUMNS of one inference row ("|" separates a list's items, as in top_labels)."""
    labels, scores = task_values(result)
    return {
        "task": result.task.value,
        "result_count": result.count(),
        "result_labels": "|".join(label.replace("|", "/") for label in labels),
        "result_scores": "|".join("" if s is None else f"{s:.6g}" for s in scores),
        "result": result.summary(),
    }


def parse_cells(row: dict[str, str]) -> tuple[str, int, list[str], list[float | None]] | None:
    """A recording row's task cells back: (task, count, labels, scores); None for a row without them."""
    task = original_text(row.get("task") or "")
    if not task:
        return None
    try:
        count = int(float(row.get("result_count") or 0))
    except ValueError:
        count = 0
    labels_text, scores_text = original_text(row.get("result_labels") or ""), row.get("result_scores") or ""
    labels = labels_text.split("|") if labels_text else []
    scores: list[float | None] = []
    for cell in scores_text.split("|") if scores_text else []:
        try:
            value = float(cell)
            scores.append(value if math.isfinite(value) else None)
        except ValueError:
            scores.append(None)
    return task, count, labels, scores


@dataclass
class _Label:
    frames: int = 0  # inferences it appears in
    score_sum: float = 0.0
    scores: int = 0


@dataclass
class TaskFigures:
    """A run's results summed up (one task; a run that switches task is read as its last)."""

    task: str = ""
    frames: int = 0
    count_sum: int = 0
    count_max: int = 0
    keypoint_score_sum: float = 0.0
    keypoint_scores: int = 0
    labels: dict[str, _Label] = field(default_factory=dict)

    def add(self, task: str, count: int, labels: Sequence[str], scores: Sequence[float | None]) -> None:
        if task != self.task:  # a switch to a model of another task: its figures start over
            self.task, self.frames, self.count_sum, self.count_max = task, 0, 0, 0
            self.keypoint_score_sum, self.keypoint_scores, self.labels = 0.0, 0, {}
        self.frames += 1
        self.count_sum += count
        self.count_max = max(self.count_max, count)
        if task == Task.RAW:
            return
        if task == Task.KEYPOINTS:
            known = [s for s in scores if s is not None]
            self.keypoint_score_sum += sum(known)
            self.keypoint_scores += len(known)
            return
        for i, label in enumerate(dict.fromkeys(labels)):  # a label once per frame (two ties: one frame)
            seen = self.labels.setdefault(label, _Label())
            seen.frames += 1
            score = scores[i] if i < len(scores) else None
            if score is not None:
                seen.score_sum += score
                seen.scores += 1

    def add_result(self, result: TaskResult) -> None:
        labels, scores = task_values(result)
        self.add(result.task.value, result.count(), labels, scores)

    @property
    def mean_count(self) -> float | None:
        return self.count_sum / self.frames if self.frames else None

    @property
    def mean_keypoint_score(self) -> float | None:
        return self.keypoint_score_sum / self.keypoint_scores if self.keypoint_scores else None

    def top_labels(self) -> list[tuple[str, int, float | None]]:
        """(label, frames it appears in, its mean score or share), most frequent first."""
        ranked = sorted(self.labels.items(), key=lambda kv: (-kv[1].frames, kv[0]))[:_LABELS_SHOWN]
        return [(k, v.frames, v.score_sum / v.scores if v.scores else None) for k, v in ranked]

    def count_name(self) -> str:
        names = {"detection": "detections", "segmentation": "classes present", "keypoints": "keypoints"}
        return names.get(self.task, "outputs")

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "task": self.task,
            "frames": self.frames,
            "counted": self.count_name(),
            "mean_result_count": self.mean_count,
            "max_result_count": self.count_max,
        }
        if self.task in (Task.DETECTION, Task.SEGMENTATION):
            key = "mean_score" if self.task == Task.DETECTION else "mean_share"
            out["labels"] = [{"label": k, "frames": n, key: v} for k, n, v in self.top_labels()]
        if self.task == Task.KEYPOINTS:
            out["mean_keypoint_score"] = self.mean_keypoint_score
        return out

    def describe(self) -> str:
        """One line: '1.9 detections per frame (max 3); person in 100% of frames (mean score 0.71), ...'."""
        if not self.frames:
            return "no result"
        text = f"{self.mean_count or 0:.1f} {self.count_name()} per frame (max {self.count_max})"
        if self.task == Task.KEYPOINTS and self.mean_keypoint_score is not None:
            text += f"; mean keypoint score {self.mean_keypoint_score:.2f}"
        if self.task in (Task.DETECTION, Task.SEGMENTATION):
            what = "mean score" if self.task == Task.DETECTION else "mean share"
            shown = [
                f"{label} in {n / self.frames:.0%} of frames"
                + ("" if v is None else f" ({what} {v:.2f})" if self.task == Task.DETECTION else f" ({what} {v:.0%})")
                for label, n, v in self.top_labels()[:5]
            ]
            if shown:
                text += "; " + ", ".join(shown)
        return text
