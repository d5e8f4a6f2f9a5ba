"""A/B comparison: the same frames through two sessions (any backend x model x options).

One capture thread feeds two inference threads (each with its own latest-frame slot, so
the faster side is never held back by the slower one). Stage 1 of preprocessing (crop,
shrink, RGB) is computed once per frame and shared, so the sides see identical pixels and
only the model/backend differs. A frame is compared only when both sides have a result
for it. CPU time per inference is each side's own: its inference thread and the threads its
runtime started when it opened (app/system/thread_cpu.py), never the other side's.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from app.metrics.trace import TraceLog
from app.metrics.window import Metrics, MetricsSnapshot
from app.model.agreement import FrameAgreement, TaskAgreement, compare_tasks
from app.model.classes import ClassSpace, class_space
from app.pipeline import Event, Feed, InferenceConfig, Result
from app.pipeline.plan import FeedPlan
from app.sources import CapturedFrames

_PENDING = 256  # results kept per side while waiting for the other side's result of that frame
SPEED_FRAMES = 300  # the A/B speed ratio: medians over the last this many frames both sides inferred


@dataclass(frozen=True)
class SpeedWindow:
    """Both sides' median inference and CPU milliseconds over the same recent frames (paired, so
    the ratio compares like with like), and the span those frames cover."""

    frames: int
    seconds: float
    a_ms: float
    b_ms: float
    a_cpu_ms: float
    b_cpu_ms: float


@dataclass(frozen=True)
class FrameComparison:
    frame_index: int
    at: float  # monotonic, when the second result arrived
    a_top1: str  # a model that is not a classifier: its result's one-line summary
    b_top1: str
    top1_agree: bool  # ... and whether what a user reads of the frame agrees: classifiers by class
    # (app/model/classes.py), the other tasks by class index (app/model/agreement.py), never by label text
    top5_overlap: float | None  # |top5 A ∩ top5 B| / 5 (by label); None for the other tasks
    max_abs_diff: float | None  # max |score A - score B| over classes; None when class sets differ
    tv_distance: float | None  # total variation between the two score vectors, 0..1
    a_inference_ms: float
    b_inference_ms: float
    a_cpu_ms: float
    b_cpu_ms: float
    task: FrameAgreement | None = None  # either side not a classifier: the task's figures
    classes: ClassSpace | None = None  # classifiers: how their classes were matched (None: by label, unknown)


@dataclass
class AgreementSummary:
    frames: int
    top1_agreement: float | None
    top5_overlap: float | None
    max_abs_diff: float | None
    mean_tv_distance: float | None
    scores_comparable: bool
    disagreements: list[FrameComparison] = field(default_factory=list)  # most recent few
    task: TaskAgreement | None = None  # models that are not classifiers: their task's figures
    classes: ClassSpace | None = None  # classifiers: how their classes compare (not comparable: no figure)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "frames": self.frames,
            "top1_agreement": self.top1_agreement,
            "top5_overlap": self.top5_overlap,
            "max_abs_diff": self.max_abs_diff,
            "mean_tv_distance": self.mean_tv_distance,
            "scores_comparable": self.scores_comparable,
            "disagreements": [{"frame": d.frame_index, "a": d.a_top1, "b": d.b_top1} for d in self.disagreements[-10:]],
        }
        if self.task is not None:  # said for the other tasks only: a classifier's A/B JSON stays as it was
            out["task"] = self.task.to_dict()
        if self.classes is not None:
            out["classes"] = self.classes.to_dict()
        return out

    def describe(self) -> str:
        """The agreement line of bench's A/B text (after 'agreement  ')."""
        if not self.frames:
            return "no frame was inferred by both sides"
        if self.task is not None:
            return (f"{self.task.task.value}: {self.task.describe()}; the frame agrees ({self.task.agree_rule()}) "
                    f"on {self.top1_agreement or 0:.1%} of {self.frames:,} frames")  # fmt: skip
        if self.classes is not None and not self.classes.comparable:
            return f"{self.classes.how}: no agreement figure for {self.frames:,} frames"
        if self.top5_overlap is None or self.top1_agreement is None:
            return f"A and B are not of one task: nothing to compare in {self.frames:,} frames"
        line = f"top-1 agrees on {self.top1_agreement:.1%} of {self.frames:,} frames"
        if self.classes is not None and self.classes.offset:
            line += f" ({self.classes.how})"
        line += f"; top-5 overlap {self.top5_overlap:.1%}"
        if self.scores_comparable:
            line += f"; max score difference {self.max_abs_diff:.3g}; mean total variation {self.mean_tv_distance:.3g}"
        else:
            line += "; scores not compared (different class sets): top-1 and top-5 by class"
        return line


# The per-frame comparison's CSV columns (docs/csv-format.md, "Comparison CSV"): bench and the window.
COMPARISON_COLUMNS = [
    "frame_id", "a_top1", "b_top1", "top1_agree", "top5_overlap", "max_abs_diff", "tv_distance",
    "a_inference_ms", "b_inference_ms", "a_cpu_ms", "b_cpu_ms",
]  # fmt: skip
# ... and, when the models are not classifiers, their task's figures per frame (empty where not the task's).
COMPARISON_TASK_COLUMNS = [
    "task", "a_count", "b_count", "matched", "mean_iou", "mean_score_diff", "pixel_agreement", "miou",
    "mean_distance_px", "cosine_min",
]  # fmt: skip
COMPARISON_TEXT_COLUMNS = frozenset({"a_top1", "b_top1"})  # labels and summaries: neutralised as CSV text


def comparison_row(c: FrameComparison) -> dict[str, str]:
    """A comparison's cells as the comparison CSV writes them: every COMPARISON_COLUMNS and
    COMPARISON_TASK_COLUMNS cell (the task's empty for classifiers), labels not yet neutralised. The one
    home of that format: bench's file and the window's X-compare.csv both write these."""
    row = {
        "frame_id": str(c.frame_index),
        "a_top1": c.a_top1,
        "b_top1": c.b_top1,
        "top1_agree": str(int(c.top1_agree)),
        "top5_overlap": "" if c.top5_overlap is None else f"{c.top5_overlap:.3g}",
        "max_abs_diff": "" if c.max_abs_diff is None else f"{c.max_abs_diff:.6g}",
        "tv_distance": "" if c.tv_distance is None else f"{c.tv_distance:.6g}",
        "a_inference_ms": f"{c.a_inference_ms:.6g}",
        "b_inference_ms": f"{c.b_inference_ms:.6g}",
        "a_cpu_ms": f"{c.a_cpu_ms:.6g}",
        "b_cpu_ms": f"{c.b_cpu_ms:.6g}",
    }
    return row | {column: _cell(value) for column, value in _task_values(c).items()}


def _task_values(c: FrameComparison) -> dict[str, object]:
    """A comparison's COMPARISON_TASK_COLUMNS (None: empty)."""
    t = c.task
    if t is None:
        return dict.fromkeys(COMPARISON_TASK_COLUMNS)
    detection = t.task == "detection"
    return {
        "task": t.task.value,
        "a_count": t.a_count if detection else None,
        "b_count": t.b_count if detection else None,
        "matched": t.matched if detection else None,
        "mean_iou": t.mean_iou,
        "mean_score_diff": t.mean_score_diff,
        "pixel_agreement": t.pixel_agreement,
        "miou": t.miou,
        "mean_distance_px": t.mean_distance_px,
        "cosine_min": t.cosine_min,
    }


def _cell(value: object) -> str:
    if value is None:
        return ""
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def compare_results(a: Result, b: Result, at: float, classes: ClassSpace | None = None) -> FrameComparison:
    """`classes`: how the two classifiers' classes match (app/model/classes.py); without it, labels are
    compared as text (two label files can spell one class two ways: only for callers that know no spec)."""
    if a.task is not None or b.task is not None:
        return _compare_tasks(a, b, at)
    a_top, b_top = a.top[:5], b.top[:5]
    if classes is not None:
        agree = bool(classes.agree(a_top[0].index, b_top[0].index)) if a_top and b_top else False
        mapped = {classes.a_index(p.index) for p in b_top}
        overlap = len({p.index for p in a_top} & mapped) / max(1, min(5, len(a_top), len(b_top)))
    else:
        a_labels, b_labels = {p.label for p in a_top}, {p.label for p in b_top}
        agree = bool(a_top and b_top and a_top[0].label == b_top[0].label)
        overlap = len(a_labels & b_labels) / max(1, min(5, len(a_top), len(b_top)))
    comparable = a.scores.shape == b.scores.shape and (classes is None or (classes.comparable and not classes.offset))
    diff = tv = None
    if comparable:
        delta = np.abs(a.scores.astype(np.float64) - b.scores.astype(np.float64))
        diff = float(delta.max())
        pa, pb = _as_distribution(a.scores), _as_distribution(b.scores)
        tv = float(0.5 * np.abs(pa - pb).sum())
    return _comparison(
        a,
        b,
        at,
        a_top1=a_top[0].label if a_top else "",
        b_top1=b_top[0].label if b_top else "",
        top1_agree=agree,
        top5_overlap=overlap,
        max_abs_diff=diff,
        tv_distance=tv,
        classes=classes,
    )


def _compare_tasks(a: Result, b: Result, at: float) -> FrameComparison:
    """Either side is not a classifier: its task's agreement (a classifier against another task has
    no output to pair, and never agrees)."""
    task = compare_tasks(a.task, b.task) if a.task is not None and b.task is not None else None
    return _comparison(
        a,
        b,
        at,
        a_top1=_said(a),
        b_top1=_said(b),
        top1_agree=task.agree if task is not None else False,
        top5_overlap=None,
        max_abs_diff=task.max_abs_diff_all if task is not None else None,
        tv_distance=None,
        task=task,
    )


def _comparison(
    a: Result,
    b: Result,
    at: float,
    *,
    a_top1: str,
    b_top1: str,
    top1_agree: bool,
    top5_overlap: float | None,
    max_abs_diff: float | None,
    tv_distance: float | None,
    task: FrameAgreement | None = None,
    classes: ClassSpace | None = None,
) -> FrameComparison:
    """The frame's comparison: how the two agree (as given), its number and each side's timings."""
    return FrameComparison(a.frame_index, at, a_top1, b_top1, top1_agree, top5_overlap, max_abs_diff, tv_distance,
                           a.timing.inference_ms, b.timing.inference_ms, a.timing.inference_cpu_ms,
                           b.timing.inference_cpu_ms, task, classes)  # fmt: skip


def _comparable(c: FrameComparison) -> bool:
    """Whether a frame's "disagreement" means anything: not when the two classifiers' classes do not compare."""
    return c.classes is None or c.classes.comparable


def _said(r: Result) -> str:
    """What a result says in one line: its task's summary, or a classifier's top-1 label."""
    return r.task.summary() if r.task is not None else (r.top[0].label if r.top else "")


def _as_distribution(scores: np.ndarray) -> np.ndarray:
    s = np.clip(scores.astype(np.float64), 0.0, None)
    total = s.sum()
    return s / total if total > 0 else s


class Comparator:
    """Matches A's and B's results by frame and keeps the comparisons (thread-safe)."""

    def __init__(self, keep: int = 100_000) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, OrderedDict[int, Result]] = {"a": OrderedDict(), "b": OrderedDict()}
        self.comparisons: deque[FrameComparison] = deque(maxlen=keep)
        self._disagreements: deque[FrameComparison] = deque(maxlen=50)

    def add(self, side: str, result: Result, classes: ClassSpace | None = None) -> FrameComparison | None:
        other = "b" if side == "a" else "a"
        with self._lock:
            match = self._pending[other].pop(result.frame_index, None)
            if match is None:
                mine = self._pending[side]
                mine[result.frame_index] = result
                while len(mine) > _PENDING:
                    mine.popitem(last=False)
                return None
            # Results older than the matched frame can never be matched now: drop them.
            for index in [i for i in self._pending[other] if i < result.frame_index]:
                del self._pending[other][index]
            a, b = (result, match) if side == "a" else (match, result)
            comparison = compare_results(a, b, time.monotonic(), classes)
            self.comparisons.append(comparison)
            if not comparison.top1_agree and _comparable(comparison):
                self._disagreements.append(comparison)
            return comparison

    def reset(self) -> None:
        with self._lock:
            self.comparisons.clear()
            self._disagreements.clear()

    def speed(self, frames: int = SPEED_FRAMES) -> SpeedWindow | None:
        """Medians over the last `frames` frames both sides inferred: one slow frame or a few seconds of
        contention move it little (the 5 s metrics window's p50 swung 1.5x-1.9x within seconds)."""
        with self._lock:
            rows = list(itertools.islice(reversed(self.comparisons), frames))
        if not rows:
            return None
        medians = np.median([(c.a_inference_ms, c.b_inference_ms, c.a_cpu_ms, c.b_cpu_ms) for c in rows], axis=0)
        return SpeedWindow(len(rows), rows[0].at - rows[-1].at, *(float(m) for m in medians))

    def measured(self, until: float, first: int | None = None) -> list[FrameComparison]:
        """The comparisons made up to `until` (monotonic), the `first` of them only when given: a run's
        measured span, once reset at its start (`bench --frames N` counts exactly N)."""
        with self._lock:
            return [c for c in self.comparisons if c.at <= until][:first]

    def summary(
        self, since: float | None = None, until: float | None = None, first: int | None = None
    ) -> AgreementSummary:
        """Over the comparisons made after `since` and up to `until` (None: no bound), the `first` of them
        only when given."""

        def within(c: FrameComparison) -> bool:
            return (since is None or c.at > since) and (until is None or c.at <= until)

        with self._lock:
            rows = [c for c in self.comparisons if within(c)][:first]
            counted = {id(c) for c in rows}
            disagreements = [c for c in self._disagreements if id(c) in counted]
        if not rows:
            return AgreementSummary(0, None, None, None, None, False, [])
        tasks = [c.task for c in rows if c.task is not None]
        if tasks or any(c.top5_overlap is None for c in rows):
            return AgreementSummary(
                frames=len(rows),
                top1_agreement=sum(c.top1_agree for c in rows) / len(rows),  # frames that agree, per the task
                top5_overlap=None,
                max_abs_diff=None,
                mean_tv_distance=None,
                scores_comparable=False,
                disagreements=disagreements,
                task=TaskAgreement.of(t for t in tasks if t.task == tasks[-1].task) if tasks else None,
            )
        diffs = [c.max_abs_diff for c in rows if c.max_abs_diff is not None]
        tvs = [c.tv_distance for c in rows if c.tv_distance is not None]
        classes = rows[-1].classes  # the models now running: a switch mid-run starts a new comparison
        comparable = classes is None or classes.comparable
        return AgreementSummary(
            frames=len(rows),
            top1_agreement=sum(c.top1_agree for c in rows) / len(rows) if comparable else None,
            top5_overlap=float(np.mean([c.top5_overlap or 0.0 for c in rows])),
            max_abs_diff=max(diffs) if diffs else None,
            mean_tv_distance=float(np.mean(tvs)) if tvs else None,
            scores_comparable=len(diffs) == len(rows),
            disagreements=disagreements if comparable else [],
            classes=classes,
        )


class ComparePipeline(Feed):
    """One capture, two inference workers ("a", "b"), and the comparator fed by both."""

    def __init__(
        self,
        feed: FeedPlan | str | CapturedFrames,  # never pinned: one inference thread per process may be
        a: InferenceConfig,
        b: InferenceConfig,
        *,
        metrics: dict[str, Metrics] | None = None,
        on_result: Callable[[str, Result], None] | None = None,
        on_event: Callable[[str, Event], None] | None = None,
        on_comparison: Callable[[FrameComparison], None] | None = None,
        trace: TraceLog | None = None,  # both sides' inferences and the shared capture on one timeline
    ) -> None:
        self.comparator = Comparator()
        self._class_space: tuple[tuple[str, str, str, str], ClassSpace] | None = None
        self._on_comparison = on_comparison  # a recording of the comparison (the window's)
        self.thumbnails: deque[tuple[FrameComparison, np.ndarray]] = deque(maxlen=12)  # disagreements, for demos
        self._on_side_result = on_result
        metrics = metrics or {"a": Metrics(window_s=3600.0), "b": Metrics(window_s=3600.0)}
        super().__init__(feed, {"a": a, "b": b}, metrics=metrics, on_result=self._result, on_event=on_event,
                         trace=trace)  # fmt: skip
        self.metrics = {side: worker.metrics for side, worker in self.workers.items()}

    compares = True

    def _result(self, side: str, r: Result) -> None:
        # The side's own result goes out before the comparison it completes: a recording then holds
        # this frame on both sides before it is asked to record their comparison (app/live/recording.py).
        if self._on_side_result:
            self._on_side_result(side, r)
        comparison = self.comparator.add(side, r, self._classes())
        if comparison is not None and self._on_comparison is not None:
            self._on_comparison(comparison)
        if comparison is not None and not comparison.top1_agree and _comparable(comparison):
            pixels = self.rgb_cache.peek(r.frame_index)  # what both models saw (RGB, input size)
            if pixels is not None:
                self.thumbnails.append((comparison, pixels))

    def _classes(self) -> ClassSpace | None:
        """How the two sides' classes compare, worked out once per pair of models."""
        a, b = self.workers["a"].model_spec(), self.workers["b"].model_spec()
        if a is None or b is None:
            return None
        key = (a.sha256, b.sha256, a.labels.source, b.labels.source)
        if self._class_space is None or self._class_space[0] != key:
            self._class_space = (key, class_space(a, b))
        return self._class_space[1]

    def reset(self) -> None:
        for metrics in self.metrics.values():
            metrics.reset()
        self.comparator.reset()

    def snapshots(self, now: float | None = None) -> dict[str, MetricsSnapshot]:
        return {side: m.snapshot(now) for side, m in self.metrics.items()}
