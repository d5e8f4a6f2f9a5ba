"""MediaPipe's anchor-based detectors (BlazeFace, palm and pose detection): SSD heads that end without a
post-processing op, decoded as MediaPipe's own graphs decode them.

Such a model gives regressors [1, N, 4 + 2K] (a box and K keypoints per anchor, x before y) beside
scores [1, N, 1] (logits). Reading them takes three steps of MediaPipe's graphs, each followed here:

- the anchors: `SsdAnchorsCalculator` (mediapipe/calculators/tflite/ssd_anchors_calculator.cc) lays a
  grid per stride (ceil(input / stride) cells a side, centres at the cell's middle); consecutive layers
  of one stride share a grid, each adding one anchor per aspect ratio (MediaPipe's graphs give one,
  1.0) plus one more when `interpolated_scale_aspect_ratio` > 0. With `fixed_anchor_size` (every
  MediaPipe detector) each anchor is 1 x 1, so only the centres matter.
- the decoding: `TensorsToDetectionsCalculator` (mediapipe/calculators/tensor/tensors_to_detections_
  calculator.cc) with `reverse_output_order` (x, y, w, h): centre = raw / scale * anchor size + anchor
  centre, size = raw / scale * anchor size, keypoints like centres; score = sigmoid of the logit
  clipped to +-`score_clipping_thresh`; detections below `min_score_thresh`, or of negative width or
  height, dropped.
- the suppression: `NonMaxSuppressionCalculator`'s WEIGHTED algorithm (mediapipe/calculators/util/
  non_max_suppression_calculator.cc): best score first, every remaining detection overlapping it by
  IoU > `min_suppression_threshold` joins its cluster, and the cluster's box and keypoints are the
  score-weighted mean of its members', with the best member's score.

The grid each model was trained with is one of its graph's; the file does not carry it, so the anchor
count the model gives picks it among the configurations of MediaPipe's detectors (`KNOWN_GRIDS`) for the
model's input size. What no file says is taken from those graphs, and said in the task's evidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Every MediaPipe detector graph sets these to the model's input size and to these values.
SCORE_CLIPPING = 100.0  # score_clipping_thresh
SUPPRESSION_IOU = 0.3  # min_suppression_threshold, overlap_type INTERSECTION_OVER_UNION, algorithm WEIGHTED


@dataclass(frozen=True)
class AnchorGrid:
    """One SsdAnchorsCalculator configuration (fixed anchor size, anchor offset 0.5, aspect ratio 1.0)."""

    strides: tuple[int, ...]
    interpolated: bool  # interpolated_scale_aspect_ratio > 0: one more anchor per layer
    graphs: str  # the MediaPipe graphs that set it
    min_score: float  # their min_score_thresh: anchors below it never reach the suppression

    def per_cell(self) -> list[tuple[int, int]]:
        """(stride, anchors per cell) of each grid: consecutive layers of one stride share a grid."""
        grids: list[tuple[int, int]] = []
        for stride in self.strides:
            anchors = 2 if self.interpolated else 1
            if grids and grids[-1][0] == stride:
                grids[-1] = (stride, grids[-1][1] + anchors)
            else:
                grids.append((stride, anchors))
        return grids

    def count(self, width: int, height: int) -> int:
        return sum(math.ceil(width / s) * math.ceil(height / s) * n for s, n in self.per_cell())

    def describe(self) -> str:
        cells = ", ".join(f"stride {s} x{n}" for s, n in self.per_cell())
        return f"strides {list(self.strides)} ({cells} anchors per cell)"


KNOWN_GRIDS = (
    # mediapipe/modules/face_detection/face_detection_short_range.pbtxt (128x128, 896 anchors) and
    # mediapipe/modules/palm_detection/palm_detection_cpu.pbtxt (192x192, 2016 anchors)
    AnchorGrid((8, 16, 16, 16), True, "face_detection_short_range, palm_detection", 0.5),
    # mediapipe/modules/face_detection/face_detection_full_range.pbtxt (192x192, 2304 anchors)
    AnchorGrid((4,), False, "face_detection_full_range", 0.6),
    # mediapipe/modules/pose_detection/pose_detection_cpu.pbtxt (224x224, 2254 anchors); at 256x256 it
    # gives the 2944 anchors of the earlier palm detector
    AnchorGrid((8, 16, 32, 32, 32), True, "pose_detection", 0.5),
    # The back-camera BlazeFace of MediaPipe's earlier releases (256x256, 896 anchors): its graph,
    # face_detection_back_desktop_live.pbtxt, is no longer in MediaPipe's tree; its score floor is taken as
    # the other face graphs' 0.5.
    AnchorGrid((16, 32, 32, 32), True, "face_detection_back", 0.5),
)

# What the keypoints are, by how many a detection has. Face: mediapipe/python/solutions/face_detection.py
# (FaceKeyPoint, the subject's right and left). Palm: only two are named by MediaPipe's graphs
# (mediapipe/modules/hand_landmark/palm_detection_detection_to_roi.pbtxt: 0 the centre of the wrist,
# 2 the MCP of the middle finger). Pose detection: mediapipe/modules/pose_landmark/pose_detection_to_roi.pbtxt
# turns the body from point 0 (the hips' centre) to point 1 (its size and rotation).
_OBJECTS: dict[int, tuple[str, tuple[str, ...]]] = {
    6: ("face", ("right eye", "left eye", "nose tip", "mouth", "right ear tragion", "left ear tragion")),
    7: ("palm", ("wrist center", "palm point 1", "middle finger mcp", *(f"palm point {i}" for i in range(3, 7)))),
    4: ("person", ("hips center", "body size and rotation", "body point 2", "body point 3")),
}


@dataclass(frozen=True)
class AnchorDetectionLayout:
    """A MediaPipe SSD head: regressors [1, N, 4 + 2K] and scores [1, N, 1]."""

    regressors: int  # index among the model's outputs
    scores: int
    anchors: int  # N
    keypoints: int  # K
    grid: AnchorGrid
    input_size: tuple[int, int]  # (width, height): the anchors' grid and the decoding's scales
    label: str  # what is detected, by the keypoint count ("face", "palm"), else "object"
    keypoint_names: tuple[str, ...]


def anchor_layout(
    outputs: Sequence[tuple[str, tuple[int, ...], str]], width: int, height: int
) -> tuple[AnchorDetectionLayout, str] | None:
    """The layout and its evidence when the outputs (name, shape, dtype) are a MediaPipe SSD head whose
    anchor count one of `KNOWN_GRIDS` gives for a `width` x `height` input; None otherwise."""
    if len(outputs) != 2 or any(dtype != "float32" or len(shape) != 3 or shape[0] != 1 for _, shape, dtype in outputs):
        return None
    by_width = sorted(range(2), key=lambda i: outputs[i][1][2])
    scores, regressors = by_width
    anchors, coords = outputs[regressors][1][1], outputs[regressors][1][2]
    if outputs[scores][1][2] != 1 or outputs[scores][1][1] != anchors or coords < 4 or (coords - 4) % 2:
        return None
    grid = next((g for g in KNOWN_GRIDS if g.count(width, height) == anchors), None)
    if grid is None:
        return None
    keypoints = (coords - 4) // 2
    label, names = _OBJECTS.get(keypoints, ("object", tuple(f"keypoint {i}" for i in range(keypoints))))
    layout = AnchorDetectionLayout(regressors, scores, anchors, keypoints, grid, (width, height), label, names)
    evidence = (
        f"structure: outputs '{outputs[regressors][0]}' {list(outputs[regressors][1])} (box and {keypoints} "
        f"keypoints per anchor) and '{outputs[scores][0]}' {list(outputs[scores][1])}: a MediaPipe SSD head without "
        f"a post-processing op; {anchors} anchors are MediaPipe's {grid.describe()} for {width}x{height} "
        f"({grid.graphs}); assumed from those graphs: x/y/w/h scales = the input size, score sigmoid clipped "
        f"at +-{SCORE_CLIPPING:g}, anchors scoring under {grid.min_score:g} dropped, weighted NMS at IoU "
        f"{SUPPRESSION_IOU:g}"
    )
    return layout, evidence


def ssd_anchors(grid: AnchorGrid, width: int, height: int) -> np.ndarray:
    """(N, 2) anchor centres (x, y) normalised to the input, in the model's order: grid by grid, row by
    row, cell by cell, the anchors of a cell together. Every anchor is 1 x 1 (fixed_anchor_size)."""
    centres = []
    for stride, per_cell in grid.per_cell():
        rows, cols = math.ceil(height / stride), math.ceil(width / stride)
        y, x = np.meshgrid((np.arange(rows) + 0.5) / rows, (np.arange(cols) + 0.5) / cols, indexing="ij")
        cell = np.stack([x.reshape(-1), y.reshape(-1)], axis=1)
        centres.append(np.repeat(cell, per_cell, axis=0))
    return np.concatenate(centres).astype(np.float64) if centres else np.zeros((0, 2))


def decode_boxes(
    raw: np.ndarray, anchors: np.ndarray, keypoints: int, scale: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """Raw regressors (N, 4 + 2K) of (x, y, w, h, kx0, ky0, ...) -> boxes (N, 4) of (ymin, xmin, ymax,
    xmax) and keypoints (N, K, 2) of (x, y), normalised to the input. `scale`: (x/w scale, y/h scale)."""
    sx, sy = scale
    ax, ay = anchors[:, 0], anchors[:, 1]  # anchor sizes are 1: the scaled offsets are not multiplied
    cx, cy = raw[:, 0] / sx + ax, raw[:, 1] / sy + ay
    w, h = raw[:, 2] / sx, raw[:, 3] / sy
    boxes = np.stack([cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2], axis=1)
    points = raw[:, 4 : 4 + 2 * keypoints].reshape(len(raw), keypoints, 2)
    points = np.stack([points[..., 0] / sx + ax[:, None], points[..., 1] / sy + ay[:, None]], axis=2)
    return boxes, points


def scores_of(logits: np.ndarray) -> np.ndarray:
    """The sigmoid of each logit clipped to +-SCORE_CLIPPING (float64: no overflow warning)."""
    return 1.0 / (1.0 + np.exp(-np.clip(logits.astype(np.float64), -SCORE_CLIPPING, SCORE_CLIPPING)))


@dataclass(frozen=True)
class Found:
    score: float
    box: tuple[float, float, float, float]  # ymin, xmin, ymax, xmax, normalised to the input
    keypoints: tuple[tuple[float, float], ...]  # (x, y), normalised to the input


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """IoU of `box` with each of `boxes` (ymin, xmin, ymax, xmax); 0 where the union is empty."""
    inter_h = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    inter_w = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    inter = inter_h * inter_w
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    union = area + areas - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def weighted_nms(
    boxes: np.ndarray, keypoints: np.ndarray, scores: np.ndarray, threshold: float = SUPPRESSION_IOU
) -> list[Found]:
    """NonMaxSuppressionCalculator's WEIGHTED algorithm over every detection given (already filtered by
    score): clusters around the best remaining one, each merged to its score-weighted mean."""
    order = np.argsort(-scores, kind="stable")
    remaining = order
    found = []
    while remaining.size:
        top = remaining[0]
        overlap = _iou(boxes[top], boxes[remaining]) > threshold
        members = remaining[overlap]
        box, points = boxes[top], keypoints[top]
        if members.size:
            weights = scores[members]
            total = float(weights.sum())
            box = (boxes[members] * weights[:, None]).sum(axis=0) / total
            points = (keypoints[members] * weights[:, None, None]).sum(axis=0) / total
        ymin, xmin, ymax, xmax = (float(v) for v in box)
        named = tuple((float(x), float(y)) for x, y in points)
        found.append(Found(float(scores[top]), (ymin, xmin, ymax, xmax), named))
        if not members.size:  # the best one overlaps nothing, itself included (an empty box): MediaPipe stops
            break
        remaining = remaining[~overlap]
    return found


def detect(layout: AnchorDetectionLayout, regressors: np.ndarray, logits: np.ndarray, threshold: float) -> list[Found]:
    """The detections of one inference at `threshold` (min_score_thresh) or above, best first."""
    width, height = layout.input_size
    raw = np.asarray(regressors, dtype=np.float64).reshape(layout.anchors, -1)
    scores = scores_of(np.asarray(logits).reshape(layout.anchors, -1)[:, 0])
    keep = scores >= threshold
    if not keep.any():
        return []
    anchors = ssd_anchors(layout.grid, width, height)
    boxes, points = decode_boxes(raw[keep], anchors[keep], layout.keypoints, (float(width), float(height)))
    scores = scores[keep]
    valid = (boxes[:, 2] >= boxes[:, 0]) & (boxes[:, 3] >= boxes[:, 1])  # NaN compares false: dropped too
    valid &= np.isfinite(boxes).all(axis=1) & np.isfinite(points).all(axis=(1, 2))
    return weighted_nms(boxes[valid], points[valid], scores[valid])


# Landmark models whose outputs say more than one flat regressor beside a score does.
# BlazePose (mediapipe/modules/pose_landmark/tensors_to_pose_landmarks_and_segmentation.pbtxt): outputs
# landmarks [1,195] = 39 x (x, y, z, visibility, presence) in input pixels, the pose flag [1,1] (the
# presence score, thresholded at 0.5: under it the graph gives no landmarks; given here with the flag), a
# segmentation [1,H,W,1]
# of logits (SIGMOID), a heatmap and world landmarks. Of the 39 points, 0-32 are the pose, 33-34
# auxiliary points (the next frame's region of interest), the rest unused.
POSE_LANDMARKS = (
    "nose", "left eye (inner)", "left eye", "left eye (outer)", "right eye (inner)", "right eye",
    "right eye (outer)", "left ear", "right ear", "mouth (left)", "mouth (right)", "left shoulder", "right shoulder",
    "left elbow", "right elbow", "left wrist", "right wrist", "left pinky", "right pinky", "left index",
    "right index", "left thumb", "right thumb", "left hip", "right hip", "left knee", "right knee", "left ankle",
    "right ankle", "left heel", "right heel", "left foot index", "right foot index",
)  # fmt: skip
POSE_AUXILIARY = ("auxiliary 1", "auxiliary 2")
# mediapipe/python/solutions/pose_connections.py (POSE_CONNECTIONS)
POSE_BONES = (
    (0, 1), (1, 2), (2, 3), (3, 7), (0, 4), (4, 5), (5, 6), (6, 8), (9, 10), (11, 12), (11, 13), (13, 15),
    (15, 17), (15, 19), (15, 21), (17, 19), (12, 14), (14, 16), (16, 18), (16, 20), (16, 22), (18, 20), (11, 23),
    (12, 24), (23, 24), (23, 25), (24, 26), (25, 27), (26, 28), (27, 29), (28, 30), (29, 31), (30, 32), (27, 31),
    (28, 32),
)  # fmt: skip
POSE_VALUES, POSE_POINTS = 5, 39
POSE_FLAG_THRESHOLD = 0.5  # the graph's ThresholdingCalculator
# Iris (mediapipe/modules/iris_landmark/iris_landmark_cpu.pbtxt): eye contours and brows [1,213] = 71 x
# (x, y, z) and the iris [1,15] = 5 x (x, y, z), in input pixels. The iris points are its centre and four
# edge points, in the order mediapipe/graphs/iris_tracking/calculators/iris_to_render_data_calculator.cc
# reads them (centre 0, top 2, bottom 4, left 3, right 1).
EYE_POINTS, IRIS_POINTS = 71, 5
IRIS_NAMES = ("iris center", "iris right edge", "iris top", "iris left edge", "iris bottom")
IRIS_BONES = tuple((EYE_POINTS + a, EYE_POINTS + b) for a, b in ((1, 2), (2, 3), (3, 4), (4, 1)))  # its outline


@dataclass(frozen=True)
class LandmarkModel:
    """Where a MediaPipe landmark model's points are and what goes with them."""

    kind: str  # "pose" | "iris" | "face mesh"
    parts: tuple[tuple[int, int, int], ...]  # (output index, points read, values per point), in order
    names: tuple[str, ...]
    bones: tuple[tuple[int, int], ...]
    flag: int | None = None  # output index of the presence flag (pose, face mesh)
    mask: int | None = None  # output index of the segmentation logits (pose)
    flag_logit: bool = False  # the flag is a logit, made a probability by a SIGMOID (face mesh)


def landmark_model(outputs: Sequence[tuple[str, tuple[int, ...], str]]) -> tuple[LandmarkModel, str] | None:
    """BlazePose's or the iris model's outputs (name, shape, dtype) recognised by their shapes; None otherwise."""
    flat = {i: math.prod(shape) for i, (_, shape, dtype) in enumerate(outputs)
            if dtype == "float32" and len([d for d in shape if d != 1]) == 1}  # fmt: skip
    singles = [i for i, (_, shape, _) in enumerate(outputs) if math.prod(shape or (1,)) == 1]
    pose = [i for i, n in flat.items() if n == POSE_POINTS * POSE_VALUES]
    if len(pose) == 1 and len(singles) == 1:
        masks = [i for i, (_, shape, _) in enumerate(outputs) if len(shape) == 4 and shape[0] == 1 and shape[3] == 1]
        mask = masks[0] if len(masks) == 1 else None
        model = LandmarkModel("pose", ((pose[0], len(POSE_LANDMARKS) + len(POSE_AUXILIARY), POSE_VALUES),),
                              POSE_LANDMARKS + POSE_AUXILIARY, POSE_BONES, singles[0], mask)  # fmt: skip
        said = f", segmentation '{outputs[mask][0]}' {list(outputs[mask][1])}" if mask is not None else ""
        evidence = (
            f"structure: output '{outputs[pose[0]][0]}' {list(outputs[pose[0]][1])} is BlazePose's 39 points of (x, y, "
            f"z, visibility, presence) beside its pose flag '{outputs[singles[0]][0]}'{said}: 33 named points and 2 "
            f"auxiliary ones; the pose flag is the confidence (MediaPipe's graph gives no points under "
            f"{POSE_FLAG_THRESHOLD:g})"
        )
        return model, evidence
    eyes = [i for i, n in flat.items() if n == EYE_POINTS * 3]
    iris = [i for i, n in flat.items() if n == IRIS_POINTS * 3]
    if len(eyes) == 1 and len(iris) == 1 and len(outputs) == 2:
        names = tuple(f"eye contour {i}" for i in range(EYE_POINTS)) + IRIS_NAMES
        model = LandmarkModel("iris", ((eyes[0], EYE_POINTS, 3), (iris[0], IRIS_POINTS, 3)), names, IRIS_BONES)
        evidence = (
            f"structure: outputs '{outputs[eyes[0]][0]}' {list(outputs[eyes[0]][1])} and '{outputs[iris[0]][0]}' "
            f"{list(outputs[iris[0]][1])}: MediaPipe's iris landmarks, 71 eye-contour points and 5 of the iris "
            "(its centre and four edge points), (x, y, z) in input pixels"
        )
        return model, evidence
    return _face_mesh_with_attention(outputs, flat, singles)


# The face mesh with attention (mediapipe/modules/face_landmark/tensors_to_face_landmarks_with_attention.pbtxt):
# six landmark tensors — the mesh, 468 x (x, y, z); lips, 80 x (x, y); each eye, 71 x (x, y); each iris, 5 x
# (x, y), all in input pixels — and the face flag, a logit (face_landmark_side_model_cpu.pbtxt: SIGMOID, then
# a threshold of 0.5). Its graph refines the mesh's lip and eye points with the lips' and eyes' tensors and
# appends the irises as points 468-477; here the mesh's own points are given, with the irises appended.
MESH_POINTS, LIPS_POINTS = 468, 80


def _face_mesh_with_attention(
    outputs: Sequence[tuple[str, tuple[int, ...], str]], flat: dict[int, int], singles: list[int]
) -> tuple[LandmarkModel, str] | None:
    sized = {n: [i for i, m in flat.items() if m == n] for n in (MESH_POINTS * 3, LIPS_POINTS * 2, EYE_POINTS * 2,
                                                                 IRIS_POINTS * 2)}  # fmt: skip
    counts = [len(v) for v in sized.values()]
    if counts != [1, 1, 2, 2] or len(singles) != 1 or len(outputs) != 7:
        return None
    mesh, irises = sized[MESH_POINTS * 3][0], sized[IRIS_POINTS * 2]
    # Left first: by the tensors' names where they say it, else in the model's order, as the graph splits them.
    left, right = sorted(irises, key=lambda i: "right" in outputs[i][0].lower())
    names = (tuple(f"mesh {i}" for i in range(MESH_POINTS)) + tuple(f"left {n}" for n in IRIS_NAMES)
             + tuple(f"right {n}" for n in IRIS_NAMES))  # fmt: skip
    bones = tuple((MESH_POINTS + IRIS_POINTS * side + a - EYE_POINTS, MESH_POINTS + IRIS_POINTS * side + b - EYE_POINTS)
                  for side in (0, 1) for a, b in IRIS_BONES)  # fmt: skip
    model = LandmarkModel("face mesh", ((mesh, MESH_POINTS, 3), (left, IRIS_POINTS, 2), (right, IRIS_POINTS, 2)),
                          names, bones, flag=singles[0], flag_logit=True)  # fmt: skip
    evidence = (
        f"structure: output '{outputs[mesh][0]}' {list(outputs[mesh][1])} beside lips, eyes and irises tensors and "
        f"a face flag '{outputs[singles[0]][0]}': MediaPipe's face mesh with attention, 468 mesh points (x, y, z) "
        "and 5 points of each iris; the lips' and eyes' refinements of the mesh are not applied; the face flag "
        "through a sigmoid is the confidence"
    )
    return model, evidence


def sigmoid(values: np.ndarray) -> np.ndarray:
    """MediaPipe's SIGMOID activation (visibility, presence, a segmentation's logits), without overflow."""
    return 1.0 / (1.0 + np.exp(-np.clip(np.asarray(values, dtype=np.float64), -500.0, 500.0)))
