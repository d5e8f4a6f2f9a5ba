"""What a model does (its task) and which of its tensors say it, inferred with the evidence shown.

The task decides how frames are fed (classification keeps the centre crop; the other image tasks
see the whole frame resized, as LiteRT's Task Library feeds them) and how outputs are read. It
comes from, in order: the user's `--task`, the model's TFLite Support metadata (the tensor names
its metadata writers give: `location`/`category`/`score`/`number of detections` for an object
detector, `segmentation_masks` for a segmenter), then the graph's structure. Whatever is not
recognised is `raw`: every output is summarised and nothing is decoded by guess. MediaPipe's own
models (anchor-based detectors, BlazePose, iris) are recognised by their outputs' shapes and read by
the rules of its graphs (app/model/mediapipe.py).

One vector out is not always class scores: a backbone cut at its pooling (MobileNet's AvgPool, an
embedder's L2-normalised output) gives features, values that are no distribution. Such a vector is
read as `raw` when nothing says it is scores: no SOFTMAX/LOGISTIC feeds it, no labels come with it,
and a pooling op (or its name: pool, embedding, feature) made it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from app.errors import ModelError
from app.model.mediapipe import MESH_POINTS, AnchorDetectionLayout, LandmarkModel, anchor_layout, landmark_model
from app.tflite.file import TensorInfo, TfliteInfo


class Task(StrEnum):
    CLASSIFICATION = "classification"
    DETECTION = "detection"
    SEGMENTATION = "segmentation"
    KEYPOINTS = "keypoints"
    RAW = "raw"


# tensorflow/lite/kernels/detection_postprocess.cc: the op's outputs, in this order.
DETECTION_POSTPROCESS = "CUSTOM:TFLite_Detection_PostProcess"
_DETECTION_OUTPUTS = ("boxes", "classes", "scores", "count")
# TFLite Support's metadata writers (object_detector.py, image_segmenter.py) name the outputs so.
# (The older writer of the SSD examples says "locations", "classes", "scores".)
_DETECTION_METADATA_NAMES = {"location": "boxes", "locations": "boxes", "category": "classes", "classes": "classes",
                             "score": "scores", "scores": "scores", "number of detections": "count"}  # fmt: skip
_SEGMENTATION_METADATA_NAME = "segmentation_masks"
IMAGE_DTYPES = ("float32", "uint8", "int8")
_CLASS_MAP_DTYPES = ("int64", "int32", "uint8", "int8", "int16")
# Point counts of the usual landmark models: MediaPipe's hand (21), pose (33) and face mesh (468,
# 478 with irises). They only break a tie when a regressor's length divides by both 2 and 3.
_KNOWN_POINTS = (21, 33, 468, 478)
# What feeds a vector out (TfliteInfo.output_ops, seen through reshapes): an activation that makes
# probabilities, or a pooling/normalisation that makes features (global average pool, MEAN, L2 norm).
PROBABILITY_OPS = ("SOFTMAX", "LOGISTIC")
_FEATURE_OPS = ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D", "MEAN", "REDUCE_MAX", "SUM", "L2_NORMALIZATION")
_FEATURE_NAME = re.compile(r"pool|embed|feature", re.IGNORECASE)


@dataclass(frozen=True)
class ClassificationLayout:
    output: int  # index among the model's outputs
    classes: int
    fed_by: str = ""  # the op that computes the output ("SOFTMAX", "FULLY_CONNECTED"...); "" unknown
    features: bool = False  # read as class scores on request only: the vector is features (see _features)

    @property
    def probabilities(self) -> bool:
        """The graph itself makes the scores probabilities (softmax or a sigmoid per class)."""
        return self.fed_by in PROBABILITY_OPS


@dataclass(frozen=True)
class DetectionLayout:
    boxes: int  # [1, N, 4]: ymin, xmin, ymax, xmax, normalised to the model's input
    classes: int  # [1, N]: class indices as floats
    scores: int  # [1, N]
    count: int  # [1]: how many of the N are valid


@dataclass(frozen=True)
class SegmentationLayout:
    output: int
    class_map: bool  # True: one class index per pixel (an argmax inside the model); False: scores per class
    classes: int  # score channels; 0 for a class map (its labels say how many)
    fed_by: str = ""  # the op that computes the output ("SOFTMAX": already probabilities); "" unknown
    # The image input's 4th channel takes the previous result's mask (MediaPipe's hair segmentation), not
    # an alpha: fed back per frame (app/model/preprocess.py, PreviousMask).
    previous_mask: bool = False

    @property
    def probabilities(self) -> bool:
        return self.fed_by in PROBABILITY_OPS


@dataclass(frozen=True)
class KeypointsLayout:
    output: int
    points: int
    values: int  # per point: 3 = (y, x, score) for "movenet", (x, y, z) for "landmarks"; 2 = (x, y)
    style: str  # "movenet": normalised (y, x, score); "landmarks": x, y[, z] in input pixels
    # A MediaPipe model of several outputs (BlazePose, iris): where its points are, what goes with them;
    # `output` and `values` are then its first part's.
    model: LandmarkModel | None = None


@dataclass(frozen=True)
class RawLayout:
    pass


Layout = (
    ClassificationLayout | DetectionLayout | AnchorDetectionLayout | SegmentationLayout | KeypointsLayout | RawLayout
)


@dataclass(frozen=True)
class TaskChoice:
    task: Task
    layout: Layout
    evidence: str  # why this task: shown beside it, so a wrong guess can be traced and overridden
    image_input: int | None  # which input takes the frame; None: no input is an image

    def to_dict(self) -> dict[str, object]:
        return {"name": self.task.value, "evidence": self.evidence}


def image_input_index(inputs: Sequence[TensorInfo]) -> int | None:
    """The first input shaped as one image: [1, H, W, C], C of 1, 3 or 4, a pixel dtype, H and W fixed."""
    for i, t in enumerate(inputs):
        sig = t.shape_signature if len(t.shape_signature) == len(t.shape) else t.shape
        if (
            len(t.shape) == 4
            and t.shape[3] in (1, 3, 4)
            and t.dtype in IMAGE_DTYPES
            and t.shape[0] in (1, -1)
            and min(t.shape[1], t.shape[2]) > 1
            and all(d == -1 or d > 1 for d in (sig[1], sig[2]))  # -1: dynamic, set by --input-shape
        ):
            return i
    return None


def _squeezed(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(d for d in shape if d != 1)


def _classification(outputs: Sequence[TensorInfo], info: TfliteInfo | None) -> ClassificationLayout | None:
    """Today's classifier: one output, one axis of at least two class scores (float or quantized)."""
    if len(outputs) != 1 or outputs[0].dtype not in ("float32", "float16", "uint8", "int8"):
        return None
    dims = _squeezed(outputs[0].shape)
    fed_by = info.output_ops[0] if info is not None and info.output_ops else ""
    return ClassificationLayout(0, dims[0], fed_by) if len(dims) == 1 and dims[0] >= 2 else None


def _features(out: TensorInfo, layout: ClassificationLayout, names: Sequence[str], labelled: bool) -> str | None:
    """Why a vector that could be class scores is a feature vector (an embedding), or None when it may be
    scores. Labels or a softmax/sigmoid keep it a classifier: a SqueezeNet ends in an average pool of
    its 1000 logits, and its labels say so."""
    if labelled or layout.probabilities:
        return None
    metadata_name = names[0] if len(names) == 1 else ""
    named = next((n for n in (out.name, metadata_name) if _FEATURE_NAME.search(n)), None)
    if layout.fed_by not in _FEATURE_OPS and named is None:
        return None
    made = f"comes from {layout.fed_by}" if layout.fed_by in _FEATURE_OPS else f"is named '{named}'"
    return (
        f"structure: output '{out.name}' {list(out.shape)} {out.dtype} {made}, with no SOFTMAX or LOGISTIC "
        "before it and no labels: a feature vector (an embedding), not class scores; every value is summarised "
        "(--task classification reads them as values, --labels makes it a classifier)"
    )


def labels_beside(path: Path, labels_file: Path | None, embedded: Sequence[str]) -> bool:
    """Whether labels come with the model: --labels, a labels file beside it (app/model/spec.py `_labels`
    looks for the same names) or labels its metadata embeds."""
    if labels_file is not None or embedded:
        return True
    return any(p.is_file() for p in (path.with_suffix(".txt"), path.parent / "labels.txt"))


def _detection(info: TfliteInfo | None) -> tuple[DetectionLayout, str] | None:
    if info is None:
        return None
    positions = {tensor: i for i, tensor in enumerate(info.output_tensors)}
    for node, outputs in sorted(info.custom_node_outputs.items()):
        if info.op_types[node] == DETECTION_POSTPROCESS and len(outputs) == 4 and all(t in positions for t in outputs):
            b, c, s, n = (positions[t] for t in outputs)
            evidence = f"structure: node {node} is TFLite_Detection_PostProcess and its 4 outputs are the model's"
            return DetectionLayout(b, c, s, n), evidence
    return None


def _detection_from_metadata(names: Sequence[str]) -> DetectionLayout | None:
    roles = {_DETECTION_METADATA_NAMES[n.strip().lower()]: i for i, n in enumerate(names)
             if n.strip().lower() in _DETECTION_METADATA_NAMES}  # fmt: skip
    if len(roles) != 4:
        return None
    return DetectionLayout(roles["boxes"], roles["classes"], roles["scores"], roles["count"])


def _segmentation(
    image: TensorInfo, outputs: Sequence[TensorInfo], index: int, info: TfliteInfo | None = None
) -> SegmentationLayout | None:
    """A dense map at a quarter of the input's size or more: scores [1,H,W,C] (C of 1 = one class's
    probability), or a class map [1,H,W] / [1,H,W,1] of integers. Backbone feature maps are 1/8 to
    1/32 of the input, so they are not taken for one."""
    out = outputs[index]
    fed_by = info.output_ops[index] if info is not None and index < len(info.output_ops) else ""
    shape = out.shape
    if len(shape) == 4 and shape[0] == 1:
        h, w, c = shape[1], shape[2], shape[3]
    elif len(shape) == 3 and shape[0] == 1:
        h, w, c = shape[1], shape[2], 1
    else:
        return None
    if h * 4 < image.shape[1] or w * 4 < image.shape[2] or h < 8 or w < 8:
        return None
    if out.dtype in _CLASS_MAP_DTYPES and c == 1 and out.scale is None:
        return SegmentationLayout(index, class_map=True, classes=0)
    if out.dtype in ("float32", "float16", "uint8", "int8") and len(shape) == 4 and c <= 1024:
        return SegmentationLayout(index, class_map=False, classes=c, fed_by=fed_by)
    return None


def _keypoints(outputs: Sequence[TensorInfo]) -> tuple[KeypointsLayout, str] | None:
    for i, out in enumerate(outputs):
        dims = _squeezed(out.shape)
        if out.dtype != "float32":
            continue
        # MoveNet single pose: [1, 1, K, 3] of (y, x, score), normalised.
        if len(out.shape) >= 3 and len(dims) == 2 and dims[1] == 3 and dims[0] >= 2:
            return KeypointsLayout(i, dims[0], 3, "movenet"), (
                f"structure: output '{out.name}' is {list(out.shape)}: {dims[0]} points of (y, x, score)"
            )
    if len(outputs) < 2:
        return None
    # Landmark regressors: one flat output of 3N (or 2N) values, the others single scores (presence,
    # handedness), as MediaPipe's hand, pose and face landmark models give them.
    flat = [i for i, o in enumerate(outputs) if o.dtype == "float32" and len(_squeezed(o.shape)) == 1]
    singles = [i for i, o in enumerate(outputs) if math.prod(o.shape or (1,)) == 1]
    world = ""
    if len(flat) == 2 and math.prod(outputs[flat[0]].shape) == math.prod(outputs[flat[1]].shape):
        # MediaPipe's hand landmarks (mediapipe/modules/hand_landmark/hand_landmark_cpu.pbtxt): the image's
        # landmarks first, its world landmarks (metres from the hand's centre) last, of the same length.
        world = f"; '{outputs[flat[1]].name}' after it, of the same length, is MediaPipe's world landmarks, not drawn"
        flat = flat[:1]
        singles.append(len(outputs))  # counted with the others: every output has its place
    if len(flat) != 1 or len(flat) + len(singles) != len(outputs):
        return None
    out = outputs[flat[0]]
    length = _squeezed(out.shape)[0]
    values = _values_per_point(length)
    if values is None:
        return None
    evidence = (
        f"structure: output '{out.name}' is {list(out.shape)}: {length // values} points of "
        f"{'(x, y, z)' if values == 3 else '(x, y)'}, beside {len(singles) - bool(world)} single-value output(s)"
        f"{world}"
    )
    return KeypointsLayout(flat[0], length // values, values, "landmarks"), evidence


def _values_per_point(length: int) -> int | None:
    if length < 6:
        return None
    for values in (3, 2):
        if length % values == 0 and length // values in _KNOWN_POINTS:
            return values
    return 3 if length % 3 == 0 else 2 if length % 2 == 0 else None


def infer_task(
    inputs: Sequence[TensorInfo],
    outputs: Sequence[TensorInfo],
    info: TfliteInfo | None,
    metadata_output_names: Sequence[str] = (),
    requested: Task | None = None,
    labelled: bool = False,
) -> TaskChoice:
    """The model's task and the layout of its outputs; `requested` (--task) must fit the model.
    `labelled`: labels come with the model (`labels_beside`), so a lone vector out is class scores."""
    image = image_input_index(inputs)
    choices: list[TaskChoice] = []
    if image is not None:
        choices.extend(_image_choices(inputs[image], outputs, info, metadata_output_names, image, labelled))
    choices.append(TaskChoice(Task.RAW, RawLayout(), _raw_evidence(image, inputs), image))
    if image is not None and inputs[image].shape[3] == 4:
        choices = [_fourth_channel(c) for c in choices]
    if requested is None:
        return choices[0]
    for choice in choices:
        if choice.task == requested:
            return TaskChoice(choice.task, choice.layout, f"--task {requested.value} ({choice.evidence})", image)
    found = f"it reads as {choices[0].task.value} ({choices[0].evidence})"
    need = {
        Task.CLASSIFICATION: "one image input and one output of class scores",
        Task.DETECTION: "the 4 outputs of TFLite_Detection_PostProcess (boxes, classes, scores, count), or a "
        "MediaPipe SSD head (regressors [1,N,4+2K] and scores [1,N,1], N the anchors of one of its grids)",
        Task.SEGMENTATION: "an output of per-pixel scores [1,H,W,C] or a class map [1,H,W] at 1/4 of the input or more",
        Task.KEYPOINTS: "an output of points: [1,1,K,3] (y, x, score) or a flat [1,3N]/[1,2N] beside single scores, "
        "or MediaPipe's pose ([1,195] beside its flag) or iris ([1,213] and [1,15]) landmarks",
    }.get(requested, "")
    raise ModelError(f"--task {requested.value} does not fit this model: it needs {need}; {found}")


def _image_choices(
    image: TensorInfo,
    outputs: Sequence[TensorInfo],
    info: TfliteInfo | None,
    names: Sequence[str],
    index: int,
    labelled: bool = False,
) -> list[TaskChoice]:
    """Every task the model's structure supports, most specific evidence first."""
    found: list[TaskChoice] = []
    from_metadata = _detection_from_metadata(names)
    if from_metadata is not None:
        evidence = f"metadata: outputs named {', '.join(names)} (TFLite Support's object detector)"
        found.append(TaskChoice(Task.DETECTION, from_metadata, evidence, index))
    detection = _detection(info)
    if detection is not None:
        found.append(TaskChoice(Task.DETECTION, detection[0], detection[1], index))
    anchored = anchor_layout([(o.name, tuple(o.shape), o.dtype) for o in outputs], image.shape[2], image.shape[1])
    if anchored is not None:
        found.append(TaskChoice(Task.DETECTION, anchored[0], anchored[1], index))
    if _SEGMENTATION_METADATA_NAME in [n.strip().lower() for n in names] and len(outputs) == 1:
        layout = _segmentation(image, outputs, 0, info)
        if layout is not None:
            found.append(TaskChoice(Task.SEGMENTATION, layout, "metadata: output named segmentation_masks "
                                    "(TFLite Support's image segmenter)", index))  # fmt: skip
    classification = _classification(outputs, info)
    if classification is not None:
        features = _features(outputs[0], classification, names, labelled)
        if features is not None:  # raw first; --task classification still reads the vector, as values
            found.append(TaskChoice(Task.RAW, RawLayout(), features, index))
            classification = ClassificationLayout(classification.output, classification.classes,
                                                  classification.fed_by, features=True)  # fmt: skip
            what = f"{classification.classes} values of a feature vector, not probabilities"
        else:
            what = f"{classification.classes} class scores"
        found.append(TaskChoice(Task.CLASSIFICATION, classification, "structure: one image input and one output of "
                                f"{what}", index))  # fmt: skip
    if len(outputs) == 1:
        layout = _segmentation(image, outputs, 0, info)
        if layout is not None:
            what = "a class map" if layout.class_map else f"per-pixel scores of {layout.classes} classes"
            evidence = f"structure: output '{outputs[0].name}' is {list(outputs[0].shape)}, {what}"
            found.append(TaskChoice(Task.SEGMENTATION, layout, evidence, index))
    landmarks = landmark_model([(o.name, tuple(o.shape), o.dtype) for o in outputs])
    if landmarks is not None:
        model = landmarks[0]
        points = KeypointsLayout(model.parts[0][0], len(model.names), model.parts[0][2], "landmarks", model)
        found.append(TaskChoice(Task.KEYPOINTS, points, landmarks[1], index))
    keypoints = _keypoints(outputs)
    if keypoints is not None:
        found.append(TaskChoice(Task.KEYPOINTS, keypoints[0], keypoints[1], index))
    return found


def mediapipe_unit_input(layout: Layout) -> str | None:
    """The MediaPipe graph that feeds this model pixels in [0, 1] rather than the [-1, 1] a float input gets by
    default (its ImageToTensorCalculator's output_tensor_float_range; the iris and hair segmentation graphs'
    TfLiteConverterCalculator with zero_center false), or None. Its face and pose detectors take [-1, 1], the
    default."""
    if isinstance(layout, AnchorDetectionLayout) and layout.label == "palm":
        return "mediapipe/modules/palm_detection/palm_detection_cpu.pbtxt"
    if isinstance(layout, SegmentationLayout) and layout.previous_mask:  # its TfLiteConverterCalculator's zero_center
        return "mediapipe/graphs/hair_segmentation/hair_segmentation_desktop_live.pbtxt"
    if isinstance(layout, KeypointsLayout) and layout.model is not None:
        return {"pose": "mediapipe/modules/pose_landmark/pose_landmark_by_roi_cpu.pbtxt",
                "iris": "mediapipe/modules/iris_landmark/iris_landmark_cpu.pbtxt",
                "face mesh": _FACE_MESH_GRAPH}.get(layout.model.kind)  # fmt: skip
    if isinstance(layout, KeypointsLayout) and layout.style == "landmarks":
        # A lone regressor of MediaPipe's hand (21 points) or face mesh (468): its graph's ImageToTensorCalculator
        # takes [0, 1] (output_tensor_float_range).
        return {21: "mediapipe/modules/hand_landmark/hand_landmark_cpu.pbtxt",
                MESH_POINTS: _FACE_MESH_GRAPH}.get(layout.points)  # fmt: skip
    return None


_FACE_MESH_GRAPH = "mediapipe/modules/face_landmark/face_landmark_side_model_cpu.pbtxt"


def letterboxed(layout: Layout | None) -> bool:
    """Whether MediaPipe's graph feeds this model the frame scaled to fit, aspect kept (ModelSpec.letterboxes):
    its anchor-based detectors, and a lone regressor of 21 hand points."""
    if isinstance(layout, AnchorDetectionLayout):
        return True
    return isinstance(layout, KeypointsLayout) and layout.model is None and layout.style == "landmarks" and (
        layout.points == 21)  # fmt: skip


# How a 4-channel image input is fed (app/model/preprocess.py), said beside the task. MediaPipe's hair segmentation
# (mediapipe/graphs/hair_segmentation/hair_segmentation_desktop_live.pbtxt) sets its previous mask as the alpha
# (SetAlphaCalculator): empty on the first frame (PreviousLoopbackCalculator's empty packet, alpha 0), and
# TfLiteConverterCalculator (zero_center false, max_num_channels 4) scales all four channels alike to [0, 1].
# A segmenter of 4 input channels is taken for one such; any other model's 4th channel is an alpha.
_OPAQUE_ALPHA = (
    "; the input's 4th channel is fed an opaque alpha (255, normalised like the others): a previous frame's mask "
    "goes there for a segmenter only (MediaPipe's hair segmentation feeds its last mask there)"
)
_PREVIOUS_MASK = (
    "; its 4th channel is fed the previous frame's mask, as MediaPipe's hair segmentation graph feeds it (assumed "
    "from a segmenter's 4 input channels; --task raw feeds an opaque alpha instead): the last result's probability "
    "of not being class 0, resized to the input and scaled like the pixels (certain = 255); empty on the first "
    "frame, after a switch, and for each image predict reads"
)


def _fourth_channel(choice: TaskChoice) -> TaskChoice:
    """A choice for a model of a 4-channel image input: a segmenter takes its previous mask there, the rest an
    alpha; the evidence says which."""
    if isinstance(choice.layout, SegmentationLayout):
        layout = replace(choice.layout, previous_mask=True)
        return replace(choice, layout=layout, evidence=choice.evidence + _PREVIOUS_MASK)
    return replace(choice, evidence=choice.evidence + _OPAQUE_ALPHA)


def _raw_evidence(image: int | None, inputs: Sequence[TensorInfo]) -> str:
    if image is None:
        shapes = ", ".join(f"{t.name} {list(t.shape)} {t.dtype}" for t in inputs) or "none"
        return f"structure: no input is an image ({shapes}); inputs are generated or read from --inputs"
    return "structure: the outputs match no task read here; every output is summarised, nothing decoded"
