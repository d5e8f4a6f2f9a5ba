"""How far two models' answers on the same frame agree, per task (A/B and the sweep).

- detection: boxes matched one to one by IoU >= 0.5, best pairs first (greedy): the match rate
  (matched / the larger of the two counts), the matched pairs' mean IoU and mean score difference,
  and how many matched pairs carry the same class index; where the detector gives keypoints beside its
  boxes (MediaPipe's face and palm detectors), the matched pairs' points of one name, by distance in A's
  input pixels as keypoints are;
- segmentation: the share of pixels given the same class index, and the mean IoU over the classes
  present in either class map (B's map resized to A's, nearest neighbour, when their resolutions differ);
- keypoints: the mean distance between points of the same name, in A's input pixels;
- raw: per output of the same shape, the largest absolute difference and the cosine similarity.

Classes are compared by the index the model gave, never by label text: one model with its labels
and without them ("bird" / "class 15") gives the same answers, and two label files can spell one
class two ways. Labels are what a user reads, not what is compared.

Pure functions on `TaskResult`s: no thread, no Qt, no pipeline.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from app.model.decode import Detection, Keypoint, TaskResult
from app.model.task import Task

MATCH_IOU = 0.5  # a detection of A and one of B are the same object at this overlap (COCO's AP50 rule)
# A frame "agrees" (the comparison's top1_agree column, the disagreement thumbnails) when what a
# user reads of it is the same on both sides:
PIXEL_AGREE = 0.9  # segmentation: at least this share of pixels given the same class
KEYPOINT_AGREE = 0.05  # keypoints: mean distance at most this share of the input's larger side
COSINE_AGREE = 0.99  # raw: every output's cosine similarity at least this


def iou(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """Intersection over union of two (ymin, xmin, ymax, xmax) boxes; 0 when either is empty.
    Unchanged by scaling either axis, so boxes normalised to the frame give the pixels' IoU."""
    ih = min(a[2], b[2]) - max(a[0], b[0])
    iw = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(0.0, ih) * max(0.0, iw)
    area_a = max(0.0, a[2] - a[0]) * max(0.0, a[3] - a[1])
    area_b = max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])
    union = area_a + area_b - inter
    return inter / union if union > 0 else 0.0


def match_detections(a: Sequence[Detection], b: Sequence[Detection]) -> list[tuple[int, int, float]]:
    """(index in a, index in b, IoU) of the pairs matched one to one at IoU >= MATCH_IOU, the
    best-overlapping pairs first (classes are not required to agree: `class_same` counts that)."""
    pairs = sorted(
        ((iou(da.box, db.box), i, j) for i, da in enumerate(a) for j, db in enumerate(b)),
        key=lambda p: (-p[0], p[1], p[2]),
    )
    used_a: set[int] = set()
    used_b: set[int] = set()
    matched = []
    for overlap, i, j in pairs:
        if overlap < MATCH_IOU:
            break
        if i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        matched.append((i, j, overlap))
    return matched


@dataclass(frozen=True)
class FrameAgreement:
    """One frame's agreement; only the fields of its task are filled."""

    task: Task
    agree: bool  # what a user reads of the frame is the same on both sides (see the constants)
    a_count: int = 0  # detection: the detections of each side ...
    b_count: int = 0
    matched: int = 0  # ... and the pairs matched
    iou_sum: float = 0.0  # over matched pairs
    score_diff_sum: float = 0.0  # |score A - score B| over matched pairs
    class_same: int = 0  # matched pairs with the same class index
    pixel_agreement: float | None = None  # segmentation
    miou: float | None = None
    mean_distance_px: float | None = None  # keypoints (and a detector's, over matched pairs), in A's input pixels
    points: int = 0  # keypoints compared
    max_abs_diff: tuple[float | None, ...] = ()  # raw: per output (None: shapes differ)
    cosine: tuple[float | None, ...] = ()

    @property
    def match_rate(self) -> float | None:
        most = max(self.a_count, self.b_count)
        return self.matched / most if most else None

    @property
    def mean_iou(self) -> float | None:
        return self.iou_sum / self.matched if self.matched else None

    @property
    def mean_score_diff(self) -> float | None:
        return self.score_diff_sum / self.matched if self.matched else None

    @property
    def cosine_min(self) -> float | None:
        known = [c for c in self.cosine if c is not None]
        return min(known) if known else None

    @property
    def max_abs_diff_all(self) -> float | None:
        known = [d for d in self.max_abs_diff if d is not None]
        return max(known) if known else None

    def headline(self) -> float | None:
        """The task's one figure for a frame: match rate, pixel agreement, mean distance, lowest cosine."""
        return {
            Task.DETECTION: self.match_rate,
            Task.SEGMENTATION: self.pixel_agreement,
            Task.KEYPOINTS: self.mean_distance_px,
        }.get(self.task, self.cosine_min)


def compare_tasks(a: TaskResult, b: TaskResult) -> FrameAgreement:
    """A's and B's results on one frame (keypoint distances in A's input pixels). Results of
    different tasks are compared as raw outputs."""
    if a.task != b.task:
        return _raw(Task.RAW, a, b)
    if a.task == Task.DETECTION:
        return detection_agreement(a.detections, b.detections, a.input_size)
    if a.task == Task.SEGMENTATION and a.class_map is not None and b.class_map is not None:
        return segmentation_agreement(a.class_map, b.class_map)
    if a.task == Task.KEYPOINTS:
        return keypoint_agreement(a.keypoints, b.keypoints, a.input_size)
    return _raw(a.task, a, b)


def detection_agreement(
    a: Sequence[Detection], b: Sequence[Detection], input_size: tuple[int, int] = (0, 0)
) -> FrameAgreement:
    """The frame agrees when every detection of either side is matched, each pair of one class index, and
    where the pairs carry keypoints, those of one name at most KEYPOINT_AGREE of the input's larger side
    apart on average (distances in `input_size` pixels, A's)."""
    matched = match_detections(a, b)
    class_same = sum(a[i].index == b[j].index for i, j, _ in matched)
    agree = len(matched) == len(a) == len(b) and class_same == len(matched)
    width, height = input_size
    distances = []
    for i, j, _ in matched:
        theirs = {k.name: k for k in b[j].keypoints}
        distances += [math.hypot((k.x - theirs[k.name].x) * width, (k.y - theirs[k.name].y) * height)
                      for k in a[i].keypoints if k.name in theirs]  # fmt: skip
    mean = float(np.mean(distances)) if distances else None
    if mean is not None:
        agree = agree and mean <= KEYPOINT_AGREE * max(width, height)
    return FrameAgreement(
        Task.DETECTION,
        agree,
        a_count=len(a),
        b_count=len(b),
        matched=len(matched),
        iou_sum=sum(o for _, _, o in matched),
        score_diff_sum=sum(abs(a[i].score - b[j].score) for i, j, _ in matched),
        class_same=class_same,
        mean_distance_px=mean,
        points=len(distances),
    )


def segmentation_agreement(a: np.ndarray, b: np.ndarray) -> FrameAgreement:
    """Two class maps (B's resized to A's shape, nearest neighbour, when they differ). The frame agrees
    when at least PIXEL_AGREE of its pixels have one class index on both sides: a class on a few
    pixels at an edge, present on one side only, is not a different answer."""
    if b.shape != a.shape:
        b = cv2.resize(b.astype(np.int32), (a.shape[1], a.shape[0]), interpolation=cv2.INTER_NEAREST)
    same = a == b
    pixel = float(same.mean()) if a.size else 1.0
    ious = []
    for c in np.union1d(np.unique(a), np.unique(b)):
        in_a, in_b = a == c, b == c
        union = int(np.count_nonzero(in_a | in_b))
        ious.append(int(np.count_nonzero(in_a & in_b)) / union)
    miou = float(np.mean(ious)) if ious else None
    return FrameAgreement(Task.SEGMENTATION, pixel >= PIXEL_AGREE, pixel_agreement=pixel, miou=miou)


def keypoint_agreement(a: Sequence[Keypoint], b: Sequence[Keypoint], input_size: tuple[int, int]) -> FrameAgreement:
    """Points paired by name; positions (normalised to the frame, as the model saw all of it) in input pixels."""
    width, height = input_size
    theirs = {k.name: k for k in b}
    distances = [
        math.hypot((k.x - theirs[k.name].x) * width, (k.y - theirs[k.name].y) * height)
        for k in a
        if k.name in theirs
    ]
    mean = float(np.mean(distances)) if distances else None
    agree = mean is not None and mean <= KEYPOINT_AGREE * max(width, height) and len(a) == len(b)
    return FrameAgreement(Task.KEYPOINTS, agree, mean_distance_px=mean, points=len(distances))


def output_agreement(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> tuple[tuple[float | None, ...], ...]:
    """(max |a - b|, cosine similarity) per output pair of the same shape, in A's order; (None, None)
    where the shapes differ. Values as given (dequantize first to compare real values)."""
    out: list[tuple[float | None, float | None]] = []
    for x, y in zip(a, b, strict=False):
        if x.shape != y.shape or x.dtype.kind not in "biuf" or y.dtype.kind not in "biuf":  # strings: not compared
            out.append((None, None))
            continue
        xf, yf = np.asarray(x, np.float64).reshape(-1), np.asarray(y, np.float64).reshape(-1)
        if not (np.isfinite(xf).all() and np.isfinite(yf).all()):
            out.append((None, None))
            continue
        diff = float(np.max(np.abs(xf - yf))) if xf.size else 0.0
        norms = float(np.linalg.norm(xf) * np.linalg.norm(yf))
        # Two zero vectors are the same; one zero against another vector shares no direction.
        cosine = float(np.dot(xf, yf) / norms) if norms > 0 else (1.0 if diff == 0 else 0.0)
        out.append((diff, min(1.0, max(-1.0, cosine))))
    return tuple(out)


def _raw(task: Task, a: TaskResult, b: TaskResult) -> FrameAgreement:
    pairs = output_agreement(a.values, b.values)
    diffs = tuple(p[0] for p in pairs)
    cosines = tuple(p[1] for p in pairs)
    agree = bool(pairs) and len(a.values) == len(b.values) and all(c is not None and c >= COSINE_AGREE for c in cosines)
    return FrameAgreement(task, agree, max_abs_diff=diffs, cosine=cosines)


@dataclass(frozen=True)
class TaskAgreement:
    """Frames' agreements summed up: the figures `bench --compare-*` and the sweep report."""

    task: Task
    frames: int
    agreeing: int  # frames whose `agree` holds
    match_rate: float | None = None  # detection: matched pairs / the larger count, over every frame
    mean_iou: float | None = None
    mean_score_diff: float | None = None
    class_agreement: float | None = None  # matched pairs with the same class index
    detections_a: int = 0
    detections_b: int = 0
    pixel_agreement: float | None = None  # segmentation: mean over frames
    miou: float | None = None
    mean_distance_px: float | None = None  # keypoints: mean over frames (detection: over every keypoint pair)
    max_distance_px: float | None = None  # ... and the frames' worst mean
    max_abs_diff: tuple[float | None, ...] = ()  # raw: per output, the largest over frames
    cosine_mean: tuple[float | None, ...] = ()  # ... the mean cosine over frames
    cosine_min: tuple[float | None, ...] = ()  # ... and the lowest

    @classmethod
    def of(cls, frames: Iterable[FrameAgreement]) -> TaskAgreement | None:
        rows = list(frames)
        if not rows:
            return None
        task = rows[0].task
        base = cls(task, len(rows), sum(r.agree for r in rows))
        if task == Task.DETECTION:
            matched = sum(r.matched for r in rows)
            most = sum(max(r.a_count, r.b_count) for r in rows)
            pointed = [r for r in rows if r.mean_distance_px is not None]
            points = sum(r.points for r in pointed)
            return cls(
                task,
                base.frames,
                base.agreeing,
                match_rate=matched / most if most else None,
                mean_iou=sum(r.iou_sum for r in rows) / matched if matched else None,
                mean_score_diff=sum(r.score_diff_sum for r in rows) / matched if matched else None,
                class_agreement=sum(r.class_same for r in rows) / matched if matched else None,
                detections_a=sum(r.a_count for r in rows),
                detections_b=sum(r.b_count for r in rows),
                mean_distance_px=sum((r.mean_distance_px or 0.0) * r.points for r in pointed) / points
                if points
                else None,
                max_distance_px=max((r.mean_distance_px or 0.0) for r in pointed) if pointed else None,
            )
        if task == Task.SEGMENTATION:
            return cls(task, base.frames, base.agreeing, pixel_agreement=_mean(r.pixel_agreement for r in rows),
                       miou=_mean(r.miou for r in rows))  # fmt: skip
        if task == Task.KEYPOINTS:
            distances = [r.mean_distance_px for r in rows if r.mean_distance_px is not None]
            return cls(task, base.frames, base.agreeing, mean_distance_px=_mean(distances),
                       max_distance_px=max(distances) if distances else None)  # fmt: skip
        outputs = max(len(r.cosine) for r in rows)
        per = range(outputs)
        return cls(
            task,
            base.frames,
            base.agreeing,
            max_abs_diff=tuple(_max(r.max_abs_diff[i] for r in rows if i < len(r.max_abs_diff)) for i in per),
            cosine_mean=tuple(_mean(r.cosine[i] for r in rows if i < len(r.cosine)) for i in per),
            cosine_min=tuple(_min(r.cosine[i] for r in rows if i < len(r.cosine)) for i in per),
        )

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"task": self.task.value, "frames": self.frames, "agreeing_frames": self.agreeing}
        if self.task == Task.DETECTION:
            out.update(match_iou=MATCH_IOU, match_rate=self.match_rate, mean_iou=self.mean_iou,
                       mean_score_diff=self.mean_score_diff, class_agreement=self.class_agreement,
                       detections_a=self.detections_a, detections_b=self.detections_b)  # fmt: skip
            if self.mean_distance_px is not None:  # said only for detectors with keypoints
                out.update(keypoint_mean_distance_px=self.mean_distance_px,
                           keypoint_max_distance_px=self.max_distance_px)  # fmt: skip
        elif self.task == Task.SEGMENTATION:
            out.update(pixel_agreement=self.pixel_agreement, miou=self.miou, agree_at_pixel_agreement=PIXEL_AGREE)
        elif self.task == Task.KEYPOINTS:
            out.update(mean_distance_px=self.mean_distance_px, max_distance_px=self.max_distance_px)
        else:
            out.update(max_abs_diff=list(self.max_abs_diff), cosine_mean=list(self.cosine_mean),
                       cosine_min=list(self.cosine_min))  # fmt: skip
        return out

    def agree_rule(self) -> str:
        """When one of its frames agrees (FrameAgreement.agree), in words."""
        if self.task == Task.DETECTION:
            points = (
                ""
                if self.mean_distance_px is None
                else f", their keypoints at most {KEYPOINT_AGREE:.0%} of the input's larger side apart on average"
            )
            return "every detection matched, each pair of one class" + points
        if self.task == Task.SEGMENTATION:
            return f"at least {PIXEL_AGREE:.0%} of its pixels of one class"
        if self.task == Task.KEYPOINTS:
            return f"keypoints at most {KEYPOINT_AGREE:.0%} of the input's larger side apart on average"
        return f"every output's cosine similarity at least {COSINE_AGREE:g}"

    def describe(self) -> str:
        """One line: 'detections matched (IoU >= 0.5) 100.0%, mean IoU 1.000, mean score difference 0'."""
        if self.task == Task.DETECTION:
            if self.match_rate is None:
                return f"no detection on either side in {self.frames:,} frames"
            return (f"detections matched (IoU >= {MATCH_IOU:g}) {self.match_rate:.1%} "
                    f"({self.detections_a:,} A, {self.detections_b:,} B), mean IoU {_f(self.mean_iou, '.3f')}, "
                    f"mean score difference {_f(self.mean_score_diff, '.3g')}, same class "
                    f"{_f(self.class_agreement, '.1%')}" + ("" if self.mean_distance_px is None else
                    f", keypoints mean distance {self.mean_distance_px:.2f} input px "
                    f"(worst frame {_f(self.max_distance_px, '.2f')})"))  # fmt: skip
        if self.task == Task.SEGMENTATION:
            return f"pixels agree (same class) {_f(self.pixel_agreement, '.1%')}, mIoU {_f(self.miou, '.3f')}"
        if self.task == Task.KEYPOINTS:
            return (f"keypoints mean distance {_f(self.mean_distance_px, '.2f')} input px "
                    f"(worst frame {_f(self.max_distance_px, '.2f')})")  # fmt: skip
        parts = [
            f"output {i}: max |A-B| {_f(d, '.3g')}, cosine {_f(c, '.4f')}"
            for i, (d, c) in enumerate(zip(self.max_abs_diff, self.cosine_mean, strict=False))
        ]
        return "; ".join(parts) or "no output comparable"


def _f(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def _max(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _min(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return min(known) if known else None
