"""A model's outputs -> what they say, per task: detections, a class map, keypoints, or each output's
statistics. Positions are mapped back to the original frame (normalised to its width and height)
through the box the model saw, so overlays and JSON need no knowledge of the model's input size.

Classification stays with `postprocess.Postprocessor` (top-k); this reads the other tasks, and
every task's outputs are summarised (`OutputStats`) so nothing a model returns goes unseen.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.model import segmentation
from app.model.mediapipe import POSE_FLAG_THRESHOLD, AnchorDetectionLayout, LandmarkModel, detect, sigmoid
from app.model.preprocess import CropBox
from app.model.skeleton import names_and_bones
from app.model.spec import ModelSpec
from app.model.task import DetectionLayout, KeypointsLayout, SegmentationLayout, Task
from app.tflite.file import TensorInfo

# The score a detection needs to be kept, unless the user says (--score-threshold, the window's control):
# LiteRT's examples draw above 0.5.
DETECTION_THRESHOLD = 0.5
_MASK_PROBABILITY = 0.5  # a single-channel mask: foreground where the model says more than this


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class OutputStats:
    """One output tensor as the runtime returned it (dequantized when it is quantized)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    min: float | None  # over its finite values; None when it has none
    max: float | None
    mean: float | None
    non_finite: int  # NaN and infinities: a broken model or a numerics problem, never hidden

    @classmethod
    def of(cls, info: TensorInfo, array: np.ndarray, values: np.ndarray | None = None) -> OutputStats:
        """`values`: `dequantized(info, array)` when the caller has it already."""
        shape = tuple(int(d) for d in np.shape(array))
        array = np.asarray(array)
        if array.dtype.kind not in "biuf":  # strings, objects: shown by name and shape only
            return cls(info.name, shape, info.dtype, None, None, None, 0)
        if values is None and array.size and array.dtype.kind in "iuf":
            # Per inference on the results thread: a segmenter's 257x257x21 scores took 9 ms through a
            # float64 copy and a mask, against 0.6 ms read in place (min, max, then the mean).
            first, last = array.min(), array.max()
            if np.isfinite(first) and np.isfinite(last):  # NaN or an infinity would show in one of them
                return cls._read(info, array, float(first), float(last), float(array.mean(dtype=np.float64)))
        values = dequantized(info, array) if values is None else values
        finite = values[np.isfinite(values)] if values.size else values
        low: float | None
        high: float | None
        mean: float | None
        if finite.size:
            low, high, mean = float(finite.min()), float(finite.max()), float(finite.mean(dtype=np.float64))
        else:
            low = high = mean = None
        return cls(info.name, shape, info.dtype, low, high, mean, int(values.size - finite.size))

    @classmethod
    def reduced(cls, info: TensorInfo, array: np.ndarray, found: segmentation.Reduced) -> OutputStats:
        """From a finite output's extremes and float64 sum read elsewhere (a segmenter's split argmax): the
        mean summed by parts, equal to `of`'s to float64 rounding."""
        return cls._read(info, array, found.low, found.high, found.total / max(1, array.size))

    @classmethod
    def _read(cls, info: TensorInfo, array: np.ndarray, lo: float, hi: float, average: float) -> OutputStats:
        """A finite output's figures from its raw extremes and mean."""
        if info.scale and array.dtype.kind in "iu":  # dequantization is affine: the same on each figure
            zero, scale = float(info.zero_point or 0), float(info.scale)
            lo, hi, average = (lo - zero) * scale, (hi - zero) * scale, (average - zero) * scale
            if scale < 0:
                lo, hi = hi, lo
        return cls(info.name, tuple(int(d) for d in np.shape(array)), info.dtype, lo, hi, average, 0)

    def to_dict(self) -> dict[str, object]:
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, 6)

        out: dict[str, object] = {"name": self.name, "shape": list(self.shape), "dtype": self.dtype,
                                  "min": r(self.min), "max": r(self.max), "mean": r(self.mean)}  # fmt: skip
        if self.non_finite:
            out["non_finite"] = self.non_finite
        return out


def dequantized(info: TensorInfo, array: np.ndarray) -> np.ndarray:
    """float64 values: integer outputs with a quantization scale dequantized, others as they are."""
    return dequantize(array, info.scale, info.zero_point)


def dequantize(array: np.ndarray, scale: float | None, zero_point: int | None) -> np.ndarray:
    """float64 values: an integer array with a scale as the real values it stands for (scale × (q − zero
    point)), anything else as it is."""
    values = np.asarray(array)
    if scale and np.issubdtype(values.dtype, np.integer):
        return (values.astype(np.float64) - float(zero_point or 0)) * float(scale)
    return values.astype(np.float64)


@dataclass(frozen=True)
class Detection:
    index: int  # the class index the model gave
    label: str
    score: float
    box: tuple[float, float, float, float]  # ymin, xmin, ymax, xmax, normalised to the original frame
    keypoints: tuple[Keypoint, ...] = ()  # an anchor-based detector's (a face's eyes, nose...): no score each

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"index": self.index, "label": self.label, "score": round(self.score, 6),
                                  "box": [round(v, 6) for v in self.box]}  # fmt: skip
        if self.keypoints:  # said only when the model gives them: other detectors' JSON stays as it was
            out["keypoints"] = [{"name": k.name, "x": round(k.x, 6), "y": round(k.y, 6)} for k in self.keypoints]
        return out


@dataclass(frozen=True)
class Keypoint:
    name: str
    x: float  # normalised to the original frame
    y: float
    score: float | None  # MoveNet gives one per point, BlazePose its visibility; other landmark regressors none
    presence: float | None = None  # BlazePose: how likely the point is in the frame at all

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"name": self.name, "x": round(self.x, 6), "y": round(self.y, 6),
                                  "score": None if self.score is None else round(self.score, 6)}  # fmt: skip
        if self.presence is not None:  # said only where the model gives it
            out["presence"] = round(self.presence, 6)
        return out


@dataclass(frozen=True)
class TaskResult:
    """What one inference of a non-classifier says. Only the fields of its task are filled."""

    task: Task
    outputs: tuple[OutputStats, ...]
    detections: tuple[Detection, ...] = ()
    # (h, w) class per pixel at the model's resolution, over `crop`: uint8 where the classes fit, else int32
    class_map: np.ndarray | None = None
    class_fractions: tuple[tuple[int, str, float], ...] = ()  # (class, label, share of pixels), largest first
    keypoints: tuple[Keypoint, ...] = ()
    # Pairs of indices into `keypoints`; none when a point could not be placed (the indices would shift).
    bones: tuple[tuple[int, int], ...] = ()
    crop: CropBox | None = None  # where in the frame the model looked (a class map covers it)
    values: tuple[np.ndarray, ...] = ()  # raw: every output, dequantized (what A/B compares)
    input_size: tuple[int, int] = (0, 0)  # the image input's (width, height): keypoint distances' unit
    # Detection: the score a detection needed (`detections` holds those at or above it) and how many
    # valid detections the model gave below it: what the threshold hid, said beside what it kept.
    threshold: float = DETECTION_THRESHOLD
    below_threshold: int = 0
    # Keypoints of a model that scores the whole answer (BlazePose's pose flag): that score.
    confidence: float | None = None

    def count(self) -> int:
        """The result count a user reads: detections, classes present, keypoints, or outputs."""
        if self.task == Task.DETECTION:
            return len(self.detections)
        if self.task == Task.SEGMENTATION:
            return len(self.class_fractions)
        if self.task == Task.KEYPOINTS:
            return len(self.keypoints)
        return len(self.outputs)

    def summary(self, most: int = 3) -> str:
        """One line: 'person 0.72, tie 0.66', 'background 64%, cat 36%', '17 keypoints, mean score 0.28'."""
        if self.task == Task.DETECTION:
            hidden = f" ({self.below_threshold} below {self.threshold:g})" if self.below_threshold else ""
            if not self.detections:
                return f"no detection at {self.threshold:g} or above{hidden}"
            return ", ".join(f"{d.label} {d.score:.2f}" for d in self.detections[:most]) + hidden
        if self.task == Task.SEGMENTATION:
            return ", ".join(f"{label} {share:.0%}" for _, label, share in self.class_fractions[:most])
        if self.task == Task.KEYPOINTS:
            scores = [k.score for k in self.keypoints if k.score is not None]
            mean = f", mean score {sum(scores) / len(scores):.2f}" if scores else ""
            flag = "" if self.confidence is None else f", confidence {self.confidence:.2f}"
            if self.confidence is not None and self.confidence < POSE_FLAG_THRESHOLD:
                flag += f" (under {POSE_FLAG_THRESHOLD:g}: MediaPipe's graph gives no points)"
            return f"{len(self.keypoints)} keypoints{mean}{flag}"
        return "; ".join(_stats_line(s) for s in self.outputs[:most])

    def to_dict(self) -> dict[str, object]:
        """`predict --json`'s task fields (its `outputs` list included)."""
        out: dict[str, object] = {}
        if self.task == Task.DETECTION:
            out["detections"] = [d.to_dict() for d in self.detections]
            out["score_threshold"] = self.threshold
            out["below_threshold"] = self.below_threshold
        elif self.task == Task.SEGMENTATION:
            shape = list(self.class_map.shape) if self.class_map is not None else []
            out["segmentation"] = {"classes": {label: round(share, 6) for _, label, share in self.class_fractions},
                                   "mask_shape": shape}  # fmt: skip
        elif self.task == Task.KEYPOINTS:
            out["keypoints"] = [k.to_dict() for k in self.keypoints]
            if self.confidence is not None:
                out["confidence"] = round(self.confidence, 6)
            if self.class_map is not None:  # BlazePose's segmentation: the person's share of the frame it saw
                out["mask"] = {
                    "shape": list(self.class_map.shape),
                    "foreground": round(float(self.class_map.mean()) if self.class_map.size else 0.0, 6),
                }
        out["outputs"] = [s.to_dict() for s in self.outputs]
        return out


def _stats_line(s: OutputStats) -> str:
    if s.min is None:
        return f"{s.name} {'x'.join(map(str, s.shape))}: no finite value"
    return f"{s.name} {'x'.join(map(str, s.shape))}: {s.min:.3g}..{s.max:.3g}, mean {s.mean:.3g}"


@dataclass(frozen=True)
class _Ready:
    """A class map made at once (the model's own, or a mask over one half)."""

    classes: np.ndarray

    def result(self, finite: bool) -> np.ndarray:
        return self.classes


class TaskDecoder:
    """One per model, reused for every result (like Postprocessor)."""

    def __init__(self, spec: ModelSpec, threshold: float = DETECTION_THRESHOLD) -> None:
        self.spec = spec
        self.threshold = threshold
        self._task = spec.kind
        layout = spec.task.layout if spec.task else None
        self._layout = layout
        self._size = (spec.input_width, spec.input_height) if spec.image_input is not None else (0, 0)
        if isinstance(layout, KeypointsLayout):
            self._names, self._bones = names_and_bones(layout.points)
            if layout.model is not None:
                self._names, self._bones = layout.model.names, layout.model.bones

    def decode(self, outputs: Sequence[np.ndarray], crop: CropBox, frame_size: tuple[int, int]) -> TaskResult:
        """`outputs`: every output in model order; `crop`: what the model saw of a frame of `frame_size`."""
        infos = self.spec.outputs
        layout = self._layout
        if not isinstance(layout, DetectionLayout | AnchorDetectionLayout | SegmentationLayout | KeypointsLayout):
            # Raw: nothing decoded, so the values themselves are the result (A/B compares them).
            values = tuple(
                dequantized(info, array) if np.asarray(array).dtype.kind in "biuf" else np.asarray(array)
                for info, array in zip(infos, outputs, strict=False)
            )
            stats = tuple(OutputStats.of(i, a, v) for i, a, v in zip(infos, outputs, values, strict=False))
            return TaskResult(self._task, stats, crop=crop, values=values, input_size=self._size)
        # A segmenter's class map begins first: split over threads, its parts read its output's statistics too.
        begun = self._class_map(layout, outputs) if isinstance(layout, SegmentationLayout) else None
        reduced = begun.reduced() if isinstance(begun, segmentation.BegunMap) else None
        scores_at = layout.output if isinstance(layout, SegmentationLayout) else -1
        stats = tuple(
            OutputStats.reduced(info, array, reduced) if reduced is not None and i == scores_at
            else OutputStats.of(info, array)
            for i, (info, array) in enumerate(zip(infos, outputs, strict=False))
        )  # fmt: skip
        if isinstance(layout, DetectionLayout | AnchorDetectionLayout):
            threshold = self.threshold  # once: the window may change it while this runs
            if isinstance(layout, AnchorDetectionLayout):
                found = self._anchored(layout, outputs, crop, frame_size)
                kept = tuple(d for d in found if d.score >= threshold)
                below = len(found) - len(kept)
            else:
                kept, below = self._detections(layout, outputs, crop, frame_size, threshold)
            return TaskResult(self._task, stats, detections=kept, crop=crop, input_size=self._size,
                              threshold=threshold, below_threshold=below)  # fmt: skip
        if isinstance(layout, SegmentationLayout):
            assert begun is not None
            out = stats[layout.output]
            classes = begun.result(out.min is not None and not out.non_finite)
            binary = not layout.class_map and layout.classes <= 2  # a 0/1 map: compared, or over one half
            return TaskResult(self._task, stats, class_map=classes, crop=crop, input_size=self._size,
                              class_fractions=self._fractions(classes, binary))  # fmt: skip
        if layout.model is not None:
            points, confidence, mask = self._landmarks(layout.model, outputs, crop, frame_size)
            bones = self._bones if len(points) == len(self._names) else ()
            return TaskResult(self._task, stats, keypoints=points, bones=bones, crop=crop, class_map=mask,
                              input_size=self._size, confidence=confidence)  # fmt: skip
        points = self._keypoints(layout, outputs, crop, frame_size)
        bones = self._bones if len(points) == layout.points else ()
        return TaskResult(self._task, stats, keypoints=points, bones=bones, crop=crop,
                          input_size=self._size)  # fmt: skip

    def _detections(
        self,
        layout: DetectionLayout,
        outputs: Sequence[np.ndarray],
        crop: CropBox,
        frame_size: tuple[int, int],
        threshold: float,
    ) -> tuple[tuple[Detection, ...], int]:
        """The valid detections at or above `threshold`, best first, and how many valid ones were below it."""
        infos = self.spec.outputs
        boxes = dequantized(infos[layout.boxes], outputs[layout.boxes]).reshape(-1, 4)
        classes = dequantized(infos[layout.classes], outputs[layout.classes]).reshape(-1)
        scores = dequantized(infos[layout.scores], outputs[layout.scores]).reshape(-1)
        count_values = dequantized(infos[layout.count], outputs[layout.count]).reshape(-1)
        n = min(len(boxes), len(classes), len(scores))
        if count_values.size and math.isfinite(count_values[0]):
            n = max(0, min(n, int(count_values[0])))
        found = []
        below = 0
        for i in range(n):
            score, cls, box = float(scores[i]), float(classes[i]), boxes[i]
            if not (math.isfinite(score) and math.isfinite(cls) and np.isfinite(box).all()):
                continue
            if score < threshold:
                below += 1
                continue
            ymin, xmin = _to_frame(float(box[0]), float(box[1]), crop, frame_size)
            ymax, xmax = _to_frame(float(box[2]), float(box[3]), crop, frame_size)
            index = int(cls)
            found.append(Detection(index, self.spec.label(index), score, (ymin, xmin, ymax, xmax)))
        return tuple(sorted(found, key=lambda d: -d.score)), below

    def _anchored(
        self,
        layout: AnchorDetectionLayout,
        outputs: Sequence[np.ndarray],
        crop: CropBox,
        frame_size: tuple[int, int],
    ) -> tuple[Detection, ...]:
        """A MediaPipe SSD head's detections (app/model/mediapipe.py) at its graph's min_score_thresh or above,
        best first: the floor the model was made for, under any --score-threshold (a lower one shows no more:
        below it every anchor, background included, would take part in the suppression)."""
        infos = self.spec.outputs
        regressors = dequantized(infos[layout.regressors], outputs[layout.regressors])
        logits = dequantized(infos[layout.scores], outputs[layout.scores])
        label = self.spec.label(0) if self.spec.labels.labels else layout.label
        found = []
        for d in detect(layout, regressors, logits, layout.grid.min_score):
            ymin, xmin = _to_frame(d.box[0], d.box[1], crop, frame_size)
            ymax, xmax = _to_frame(d.box[2], d.box[3], crop, frame_size)
            points = []
            for name, (x, y) in zip(layout.keypoint_names, d.keypoints, strict=False):
                fy, fx = _to_frame(y, x, crop, frame_size)
                points.append(Keypoint(name, fx, fy, None))
            found.append(Detection(0, label, d.score, (ymin, xmin, ymax, xmax), tuple(points)))
        return tuple(found)

    def _class_map(self, layout: SegmentationLayout, outputs: Sequence[np.ndarray]) -> _Ready | segmentation.BegunMap:
        """The class map, begun: its `result` takes whether the output's scores are all finite."""
        out = np.asarray(outputs[layout.output])
        if layout.class_map:
            return _Ready(out.reshape(out.shape[1], out.shape[2]).astype(np.int32))
        scores = out.reshape(out.shape[1], out.shape[2], -1)
        if scores.shape[2] == 1:  # one class's probability: foreground above one half
            values = dequantized(self.spec.outputs[layout.output], scores[..., 0])
            return _Ready((values > _MASK_PROBABILITY).view(np.uint8))
        # On the raw values: dequantization is monotonic, so they pick the same class.
        return segmentation.start_class_map(scores)

    def _fractions(self, class_map: np.ndarray, binary: bool = False) -> tuple[tuple[int, str, float], ...]:
        shares = [(c, self.spec.label(c), share) for c, share in segmentation.class_shares(class_map, binary)]
        return tuple(sorted(shares, key=lambda s: -s[2]))

    def _keypoints(
        self, layout: KeypointsLayout, outputs: Sequence[np.ndarray], crop: CropBox, frame_size: tuple[int, int]
    ) -> tuple[Keypoint, ...]:
        values = np.asarray(outputs[layout.output], dtype=np.float64).reshape(-1)[: layout.points * layout.values]
        values = values.reshape(layout.points, layout.values)
        height, width = self.spec.input_height, self.spec.input_width
        points = []
        for i, row in enumerate(values):
            if layout.style == "movenet":  # (y, x, score), normalised to the input
                y, x, score = float(row[0]), float(row[1]), float(row[2])
            else:  # (x, y[, z]) in input pixels
                x, y, score = float(row[0]) / width, float(row[1]) / height, None
            if not (math.isfinite(x) and math.isfinite(y)):
                continue
            fy, fx = _to_frame(y, x, crop, frame_size)
            points.append(Keypoint(self._names[i], fx, fy, _finite(score) if score is not None else None))
        return tuple(points)

    def _landmarks(
        self, model: LandmarkModel, outputs: Sequence[np.ndarray], crop: CropBox, frame_size: tuple[int, int]
    ) -> tuple[tuple[Keypoint, ...], float | None, np.ndarray | None]:
        """A MediaPipe pose or iris model's points (x, y in input pixels; BlazePose's visibility and presence
        through a sigmoid, as its graph's TensorsToLandmarksCalculator), its pose flag and its mask (the
        segmentation's sigmoid over one half, over `crop`). The points are given under a pose flag of 0.5
        too, where MediaPipe's graph drops them: the flag beside them says so (`TaskResult.summary`)."""
        infos = self.spec.outputs
        confidence = None
        if model.flag is not None:
            value = float(dequantized(infos[model.flag], outputs[model.flag]).reshape(-1)[0])
            confidence = _finite(float(sigmoid(np.asarray(value))) if model.flag_logit else value)
        mask = None
        if model.mask is not None:
            logits = dequantized(infos[model.mask], outputs[model.mask])
            mask = (sigmoid(logits.reshape(logits.shape[1], logits.shape[2])) > _MASK_PROBABILITY).astype(np.int32)
        height, width = self.spec.input_height, self.spec.input_width
        points: list[Keypoint] = []
        names = iter(model.names)
        for output, count, values in model.parts:
            rows = dequantized(infos[output], outputs[output]).reshape(-1)[: count * values].reshape(count, values)
            for row in rows:
                name = next(names)
                x, y = float(row[0]) / width, float(row[1]) / height
                if not (math.isfinite(x) and math.isfinite(y)):
                    continue
                visibility = _finite(float(sigmoid(row[3]))) if values >= 5 else None
                presence = _finite(float(sigmoid(row[4]))) if values >= 5 else None
                fy, fx = _to_frame(y, x, crop, frame_size)
                points.append(Keypoint(name, fx, fy, visibility, presence))
        return tuple(points), confidence, mask


def _to_frame(y: float, x: float, crop: CropBox, frame_size: tuple[int, int]) -> tuple[float, float]:
    """A point normalised to what the model saw -> normalised to the whole frame, clipped to it."""
    width, height = frame_size
    fy = (crop.y + y * crop.height) / max(1, height)
    fx = (crop.x + x * crop.width) / max(1, width)
    return min(1.0, max(0.0, fy)), min(1.0, max(0.0, fx))
