"""A segmenter's per-pixel scores -> its class map and the share of the frame each class covers, at a
cost that does not bound a fast accelerator.

Measured on DeepLab v3's 257x257x21 float scores (2-core VM, benchmarks/suite/task_decoding.py):
`np.argmax(axis=2)` is 2.2 ms, nearly all of the decoding, because numpy scans each pixel's 21 scores
as one short row; a 512x512x2 segmenter's argmax took as long. So:
- two classes are compared, not arg-maxed: one vectorised pass (0.1 ms for 512x512) that gives the
  same class as argmax wherever the scores are finite (a tie picks class 0, as argmax's first maximum);
- more classes are arg-maxed on the scores' own dtype (never a float copy);
- where the machine has the cores, the rows are split over a few threads, each reading its part's
  classes and statistics (min, max, float64 sum) in one go: numpy releases the GIL in each, so the
  parts run at once (`BegunMap`; on a 16-vCPU GPU host numpy's argmax alone took 2.5 ms for DeepLab);
- the class map is uint8 wherever the classes fit (a quarter of int32's bytes for every later pass);
- class shares come from exact pixel counts: a count of the ones for two classes, one histogram of the
  map (OpenCV's for uint8, else `np.bincount`) for more.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import cv2
import numpy as np

# Scores (pixels x classes) below this are arg-maxed on the calling thread: splitting costs more than it saves.
_SPLIT_FROM = 1 << 19
_MAX_PARTS = 4  # DeepLab's 257x257x21 in 4 parts: each under 1 MB, the pool's hand-off small beside it
_pool: ThreadPoolExecutor | None = None
# calcHist counts in float32: exact below 2^24 pixels (a 4096x4096 map)
_EXACT_IN_FLOAT32 = 1 << 24
_pool_lock = threading.Lock()


def _parts() -> int:
    """Threads to split a large argmax over: none on a small machine, where the pipeline's own threads
    (capture, inference, results) already hold the cores."""
    return max(1, min(_MAX_PARTS, (os.cpu_count() or 1) // 4))


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_MAX_PARTS, thread_name_prefix="delegate-scope-argmax")
        return _pool


@dataclass(frozen=True)
class Reduced:
    """An output's extremes and float64 sum, read by the parts beside their argmax (all finite)."""

    low: float
    high: float
    total: float


class BegunMap:
    """A class map being made. Split (`parts` > 1), each part of the rows runs on the pool at once and
    reads its scores' min, max and float64 sum beside its classes, so the results thread waits for one
    pass over the scores in parallel instead of making three in series (statistics, then the classes).
    Within a part, two finite classes are compared; a part holding a NaN or an infinity is arg-maxed
    (argmax's answer there), and `reduced` is then None: the caller reads the statistics itself."""

    def __init__(self, scores: np.ndarray, parts: int) -> None:
        h, w, classes = scores.shape
        self._shape, self._scores, self._classes = (h, w), scores, classes
        self._jobs: list[Future[tuple[float, float, float]]] = []
        if parts == 1 or classes < 2 or scores.size < _SPLIT_FROM:
            return
        self._flat = scores.reshape(h * w, classes)
        self._out = np.empty(h * w, np.uint8 if classes <= 256 else np.int32)
        self._bounds = np.linspace(0, h * w, parts + 1).astype(int)
        self._jobs = [_shared_pool().submit(self._part, i) for i in range(parts)]

    def _part(self, i: int) -> tuple[float, float, float]:
        rows = self._flat[self._bounds[i] : self._bounds[i + 1]]
        low, high = rows.min(), rows.max()
        finite = bool(np.isfinite(low) and np.isfinite(high))  # NaN or an infinity shows in one of them
        out = self._out[self._bounds[i] : self._bounds[i + 1]]
        if self._classes == 2 and finite:
            np.greater(rows[:, 1], rows[:, 0], out=out.view(np.bool_))
        else:
            out[:] = np.argmax(rows, axis=1)
        return float(low), float(high), float(rows.sum(dtype=np.float64)) if finite else math.nan

    @property
    def split(self) -> bool:
        return bool(self._jobs)

    def reduced(self) -> Reduced | None:
        """The scores' extremes and sum when split and all finite (waits for the parts); else None."""
        if not self._jobs:
            return None
        parts = [job.result() for job in self._jobs]
        if any(math.isnan(total) for _, _, total in parts):
            return None
        return Reduced(min(p[0] for p in parts), max(p[1] for p in parts), math.fsum(p[2] for p in parts))

    def result(self, finite: bool) -> np.ndarray:
        """The class map; `finite`: every score is (unsplit, two classes are then compared)."""
        if not self._jobs:
            return class_map(self._scores, finite, parts=1)
        for job in self._jobs:
            job.result()
        return self._out.reshape(self._shape)


def start_class_map(scores: np.ndarray, parts: int | None = None) -> BegunMap:
    """Begin `class_map(scores, ...)`, split over `parts` threads (default: by the machine's cores)."""
    return BegunMap(scores, _parts() if parts is None else max(1, parts))


def class_map(scores: np.ndarray, finite: bool, parts: int | None = None) -> np.ndarray:
    """(h, w, classes) scores -> (h, w) class per pixel: uint8 up to 256 classes, else int32; what
    `np.argmax(scores, axis=2)` gives. `finite`: the caller knows every score is finite (a NaN makes
    argmax pick it; then argmax itself runs). `parts`: threads to split over (default: by the machine)."""
    h, w, classes = scores.shape
    dtype = np.uint8 if classes <= 256 else np.int32
    if classes == 1:
        return np.zeros((h, w), dtype)
    if classes == 2 and finite:
        # argmax's first maximum: class 1 only where it scores strictly more.
        return np.greater(scores[..., 1], scores[..., 0]).view(np.uint8)
    if parts == 1 or classes <= 2 or scores.size < _SPLIT_FROM or (parts is None and _parts() == 1):
        return np.argmax(scores.reshape(h * w, classes), axis=1).astype(dtype).reshape(h, w)
    return start_class_map(scores, parts).result(finite)


def class_shares(classes: np.ndarray, binary: bool = False) -> list[tuple[int, float]]:
    """(class, share of the pixels) of each class present, in class order, from exact pixel counts;
    negative indices (no class) are left out of the count and the total alike. `binary`: the map holds
    0 and 1 only (two classes compared, a mask over one half), so one count of the ones is all of it."""
    flat = classes.reshape(-1)
    if flat.size == 0:
        return []
    if binary:
        ones = int(np.count_nonzero(flat))
        counts = np.array([flat.size - ones, ones])
    elif flat.dtype == np.uint8 and flat.size < _EXACT_IN_FLOAT32:
        # OpenCV's histogram: 0.27 ms for 512x512 against 0.50 ms for np.bincount, which widens to int64 first.
        counts = cv2.calcHist([flat.reshape(-1, 1)], [0], None, [256], [0, 256]).reshape(-1).astype(np.int64)
    else:
        if flat.dtype.kind == "i" and flat.min() < 0:
            flat = flat[flat >= 0]
        counts = np.bincount(flat)
    total = max(1, int(counts.sum()))
    present = np.flatnonzero(counts)
    return [(int(c), int(counts[c]) / total) for c in present]


def foreground(
    output: np.ndarray, class_map: bool, probabilities: bool, scale: float | None = None, zero_point: int | None = None
) -> np.ndarray:
    """A segmenter's output [1,h,w,C] (or a class map [1,h,w]) -> (h, w) uint8: 255 x the probability that a
    pixel is not class 0 (the background), cut to a whole number as MediaPipe's segmentation calculator makes
    its mask (mediapipe/calculators/tflite/tflite_tensors_to_segmentation_calculator.cc: the softmax of its two
    channels, the hair's taken, times 255). Scores are logits unless `probabilities` (a SOFTMAX makes them);
    one channel is a probability itself; a class map's pixel is 0 or 255. A NaN is 0."""
    a = np.asarray(output)
    h, w = a.shape[1], a.shape[2]
    if class_map:
        return np.not_equal(a.reshape(h, w), 0).view(np.uint8) * np.uint8(255)
    scores = a.reshape(h, w, -1)
    if scale is not None:
        scores = (scores.astype(np.float32) - np.float32(zero_point or 0)) * np.float32(scale)
    elif scores.dtype != np.float32:
        scores = scores.astype(np.float32)
    classes = scores.shape[2]
    with np.errstate(over="ignore", invalid="ignore"):
        if classes == 1 or probabilities:
            # one class's probability; or 1 - the background's (every other class's, summed)
            p = scores[..., 0].copy() if classes == 1 else np.subtract(np.float32(1), scores[..., 0])
            np.clip(p, 0, 1, out=p)
            p *= 255
        elif classes == 2:
            # 1 / (1 + e^(l0 - l1)): the softmax of two, an infinity giving 0 or 255, never a NaN
            p = np.subtract(scores[..., 0], scores[..., 1])
            np.exp(p, out=p)
            p += 1
            np.divide(np.float32(255), p, out=p)
        else:
            # 1 - 1 / sum_k e^(l_k - l0): every class against the background's, an overflow giving 255
            total = np.exp(scores - scores[..., :1]).sum(axis=2, dtype=np.float32)
            p = np.subtract(np.float32(255), np.divide(np.float32(255), total))
        np.nan_to_num(p, copy=False, nan=0.0)
        return p.astype(np.uint8)
