"""ModelSpec: everything the app needs to know to feed and read a TFLite model of any task.

A spec is built once per model file from (in order of trust) the user's explicit
options, the project's JSON sidecar, files beside the model, the model's own
TFLite metadata, and finally conventions. Each decision records where it came
from, so the UI can show it and a wrong guess can be traced.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TypeGuard

import numpy as np

from app.errors import ModelError
from app.model.labels import (
    LabelSet,
    align_labels,
    chosen_labels_source,
    numbered_labels,
    parse_labels,
    read_labels_file,
)
from app.model.task import (
    IMAGE_DTYPES,
    ClassificationLayout,
    KeypointsLayout,
    SegmentationLayout,
    Task,
    TaskChoice,
    infer_task,
    labels_beside,
    letterboxed,
    mediapipe_unit_input,
)
from app.system.paths import models_dir
from app.tflite.file import TensorInfo, TfliteInfo, read_tflite
from app.tflite.metadata import METADATA_NAME, ClassifierMetadata, parse_metadata, read_associated_file

DEFAULT_MODEL = "efficientnet_lite0"
SIDECAR_FORMAT = 1
MAX_MODEL_BYTES = 2 * 1024**3  # flatbuffers cannot address more; larger files are not TFLite models
_MAX_INPUT_ELEMENTS = 1 << 26  # 256 MiB of float32: beyond any input fed here (a video clip of 16 224² frames: 2.4 M)


@dataclass(frozen=True)
class Normalization:
    """`(pixel - mean) / std` per RGB channel; `raw` = feed pixels unchanged (uint8) or shifted (int8)."""

    mean: tuple[float, float, float] = (127.5, 127.5, 127.5)
    std: tuple[float, float, float] = (127.5, 127.5, 127.5)
    raw: bool = False
    source: str = "convention"

    def describe(self) -> str:
        if self.raw:
            return f"raw pixels ({self.source})"
        return f"(x - {_fmt(self.mean)}) / {_fmt(self.std)} ({self.source})"


def _fmt(values: tuple[float, ...]) -> str:
    return f"{values[0]:g}" if len(set(values)) == 1 else "[" + ", ".join(f"{v:g}" for v in values) + "]"


@dataclass(frozen=True)
class ModelOptions:
    """How to read a model beyond its file: the task (`--task`), shapes for its dynamic inputs
    (`--input-shape NAME=1x224x224x3`) and an .npz of inputs for those that take no image (`--inputs`)."""

    task: Task | None = None
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    inputs_file: Path | None = None

    def shape_for(self, name: str, index: int) -> tuple[int, ...] | None:
        for key, shape in self.input_shapes:
            if key in (name, str(index)):
                return shape
        return None

    def is_default(self) -> bool:
        return self == ModelOptions()

    def to_dict(self) -> dict[str, object]:
        return {
            "task": self.task.value if self.task else None,
            "input_shapes": {k: list(v) for k, v in self.input_shapes},
            "inputs_file": str(self.inputs_file) if self.inputs_file else None,
        }


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """`NAME=1x224x224x3` (NAME may be the input's index) -> (NAME, (1, 224, 224, 3)); ValueError says why."""
    name, sep, dims = text.rpartition("=")
    if not sep or not name:
        raise ValueError(f"expected NAME=1x224x224x3, got '{text}'")
    try:
        shape = tuple(int(d) for d in dims.lower().split("x"))
    except ValueError:
        raise ValueError(f"expected dimensions as whole numbers separated by x, got '{dims}'") from None
    if not shape or any(d < 1 for d in shape) or math.prod(shape) > _MAX_INPUT_ELEMENTS:
        raise ValueError(f"dimensions must be at least 1 and hold at most {_MAX_INPUT_ELEMENTS} values, got '{dims}'")
    return name, shape


@dataclass(frozen=True)
class ModelSpec:
    """A model as the app reads it. Its inputs and outputs are the truth; the image input and the
    classifier's output are read from them through the task's layout, never stored beside them."""

    name: str
    display_name: str
    path: Path
    sha256: str
    size_bytes: int
    inputs: tuple[TensorInfo, ...]  # every input, dynamic dimensions fixed
    outputs: tuple[TensorInfo, ...]  # every output, as the file declares them
    task: TaskChoice  # the task, which input takes the image, which outputs say what
    classes: int  # classes the model scores: a classifier's, per-pixel (segmentation), a detector's labels; else 0
    labels: LabelSet
    normalization: Normalization
    output_kind: str  # "probabilities", "logits" or "unknown" (decided per result, see postprocess)
    op_types: list[str]
    op_versions: list[int]
    bundled: bool = False
    info: Mapping[str, str] = field(default_factory=dict)  # licence, source, description: shown, never interpreted
    warnings: tuple[str, ...] = ()
    content: bytes = field(default=b"", repr=False, compare=False)
    options: ModelOptions = field(default_factory=ModelOptions)

    def __post_init__(self) -> None:
        # Read-only however built: a spec is shared by threads and sessions, never amended in place.
        object.__setattr__(self, "info", MappingProxyType(dict(self.info)))
        object.__setattr__(self, "warnings", tuple(self.warnings))

    @property
    def kind(self) -> Task:
        return self.task.task

    @property
    def image_input(self) -> int | None:
        return self.task.image_input

    @property
    def input(self) -> TensorInfo:
        """The image input; the first input when none is an image."""
        image = self.task.image_input
        return self.inputs[image if image is not None else 0]

    @property
    def output(self) -> TensorInfo:
        """The classifier's output; the first output for other tasks (the input of a model that
        declares none, so its dtype and shape stay readable)."""
        layout = self.task.layout
        if isinstance(layout, ClassificationLayout):
            return self.outputs[layout.output]
        return self.outputs[0] if self.outputs else self.input

    @property
    def is_image_classifier(self) -> bool:
        """One image input and one output of class scores: read by `run` and its top-k, as the app
        read every model before tasks (and as its JSON still reads). Any other model is fed every input
        by `run_all` and read by its task."""
        one_each = len(self.inputs) == 1 and len(self.outputs) == 1
        return self.kind == Task.CLASSIFICATION and self.image_input is not None and one_each

    @property
    def points(self) -> int:
        """A keypoints model's points (0 for the other tasks)."""
        layout = self.task.layout
        return layout.points if isinstance(layout, KeypointsLayout) else 0

    @property
    def label_count(self) -> int:
        """What the labels are lined up with: the classes, or a keypoints model's points. The JSON's
        `classes` says this (it held a keypoints model's points before they had a name of their own)."""
        return self.points or self.classes

    @property
    def crops(self) -> bool:
        """Classification sees a centre crop; the other image tasks the whole frame resized, as LiteRT's
        Task Library feeds detectors, segmenters and pose models."""
        return self.kind == Task.CLASSIFICATION

    @property
    def letterboxes(self) -> bool:
        """MediaPipe's detectors and hand landmarks see the whole frame scaled to fit, its aspect kept and the
        rest black, as their graphs' ImageToTensorCalculator does (keep_aspect_ratio, BORDER_ZERO:
        mediapipe/modules/face_detection/face_detection.pbtxt, palm_detection/palm_detection_cpu.pbtxt,
        hand_landmark/hand_landmark_cpu.pbtxt); a stretched face is not the face the model learnt."""
        return letterboxed(self.task.layout if self.task is not None else None)

    @property
    def channels(self) -> int:
        return self.input.shape[3] if len(self.input.shape) == 4 else 3

    @property
    def previous_mask(self) -> bool:
        """The image input's 4th channel takes the previous result's mask, not an alpha (a segmenter of 4
        channels, as MediaPipe's hair segmentation: app/model/task.py, app/model/preprocess.py PreviousMask)."""
        layout = self.task.layout if self.task is not None else None
        return isinstance(layout, SegmentationLayout) and layout.previous_mask

    @property
    def input_height(self) -> int:
        return self.input.shape[1]

    @property
    def input_width(self) -> int:
        return self.input.shape[2]

    @property
    def input_dtype(self) -> np.dtype:
        return np.dtype(self.input.dtype)

    def label(self, index: int) -> str:
        return self.labels.name(index)

    def as_json(self) -> dict[str, object]:
        """The `model` object of the CLI's JSON output."""
        return {
            "name": self.name,
            "path": str(self.path),
            "sha256": self.sha256,
            "input": {"shape": list(self.input.shape), "dtype": self.input.dtype},
            "classes": self.label_count,
            **self.task_json(),
        }

    def task_json(self) -> dict[str, object]:
        """The task and every input and output, for models that are not image classifiers (an image
        classifier's JSON stays as it was before tasks)."""
        if self.is_image_classifier:
            return {}
        return {
            "task": self.task.to_dict(),
            "inputs": [_tensor_json(t) for t in self.inputs],
            "outputs": [_tensor_json(t) for t in self.outputs],
        }


def _tensor_json(t: TensorInfo) -> dict[str, object]:
    quantization = {"scale": t.scale, "zero_point": t.zero_point} if t.scale is not None else None
    return {"name": t.name, "shape": list(t.shape), "dtype": t.dtype, "quantization": quantization}


@dataclass(frozen=True)
class ModelFacts:
    """What an open or switch event says of the model it opened (the recording's sidecar `models`,
    bench's `events`, the window's labels line); `to_dict()` is that JSON."""

    name: str
    id: str  # the first 12 hex digits of sha256: a recording's model_id column
    sha256: str
    path: str
    input_shape: tuple[int, ...]
    input_dtype: str
    classes: int  # as ModelSpec.classes
    labels: str  # where the labels came from
    label_warnings: tuple[str, ...]  # whether they fit: the window shows both, never silently
    task: Task | None = None  # None for an image classifier (ModelSpec.is_image_classifier)
    points: int = 0  # a keypoints model's points

    @classmethod
    def of(cls, spec: ModelSpec) -> ModelFacts:
        return cls(
            name=spec.name,
            id=spec.sha256[:12],
            sha256=spec.sha256,
            path=str(spec.path),
            input_shape=tuple(spec.input.shape),
            input_dtype=spec.input.dtype,
            classes=spec.classes,
            labels=spec.labels.source,
            label_warnings=tuple(spec.labels.warnings),
            task=None if spec.is_image_classifier else spec.kind,
            points=spec.points,
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "id": self.id,
            "sha256": self.sha256,
            "path": self.path,
            "input": {"shape": list(self.input_shape), "dtype": self.input_dtype},
            "classes": self.points or self.classes,  # as ModelSpec.as_json (ModelSpec.label_count)
            "labels": self.labels,
            "label_warnings": list(self.label_warnings),
            # Said for the other models only: an image classifier's events stay as they were written before tasks.
            **({"task": self.task.value} if self.task is not None else {}),
        }


def bundled_models() -> Mapping[str, Path]:
    """Bundled model name -> .tflite path, from the sidecars in the models folder."""
    found: dict[str, Path] = {}
    folder = models_dir()
    for sidecar in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        meta, _ = read_sidecar(sidecar)
        if meta is not None and meta.file is not None:
            path = folder / meta.file
            if path.is_file():
                found[meta.name or path.stem] = path
    return found


def resolve_model_path(ref: str | Path | None) -> Path:
    """A bundled model name or a path to a .tflite file -> the file's path."""
    ref = DEFAULT_MODEL if ref is None else ref
    bundled = bundled_models()
    if isinstance(ref, str) and ref in bundled:
        return bundled[ref]
    path = Path(ref)
    if path.exists() or path.suffix or "/" in str(ref) or "\\" in str(ref):
        return path
    names = ", ".join(sorted(bundled)) or "none found in " + str(models_dir())
    raise ModelError(f"unknown model '{ref}': not a file, and not a bundled model ({names})")


_SIDECAR_TEXT_FIELDS = ("name", "display_name", "file", "sha256", "labels", "output", "coreml", "source", "licence",
                        "quantization")  # fmt: skip
_MAX_SIDECAR_BYTES = 1024 * 1024


def _finite(v: object) -> bool:
    if not isinstance(v, int | float) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:  # a JSON integer beyond any float (10**400)
        return False


def _numbers(value: object) -> TypeGuard[list[float]]:
    return isinstance(value, list) and len(value) in (1, 3) and all(_finite(v) for v in value)


@dataclass(frozen=True)
class Sidecar:
    """The project's JSON sidecar beside a model (format 1), its fields checked: each a short text, or None
    where absent or dropped with a warning; the normalisation one or three finite means and stds (std not 0)."""

    name: str | None = None
    display_name: str | None = None
    file: str | None = None  # the .tflite beside it (bundled models)
    sha256: str | None = None  # of the model it describes: a sidecar of another file is ignored
    labels: str | None = None  # a labels file's name beside the model
    output: str | None = None  # "probabilities" or "logits"
    coreml: str | None = None  # the .mlpackage's name beside the model
    source: str | None = None
    licence: str | None = None
    quantization: str | None = None
    normalization: tuple[tuple[float, ...], tuple[float, ...]] | None = None  # (mean, std)

    def info(self) -> dict[str, str]:
        """Licence, source, quantization: shown, never interpreted."""
        return {k: v for k in ("source", "licence", "quantization") if (v := getattr(self, k)) is not None}


def read_sidecar(path: Path) -> tuple[Sidecar | None, list[str]]:
    """The project's JSON sidecar beside a model: (its fields that hold what they should, problems).

    The sidecar is optional: a damaged one is ignored with a warning (never exit 1 or 3), and a
    field of the wrong type is dropped with a warning, so the model runs on what it says itself.
    A JSON file of another format beside the model is not ours and is left alone silently."""
    name = path.name
    try:
        if not path.is_file():
            return None, []
        if path.stat().st_size > _MAX_SIDECAR_BYTES:
            return None, [f"ignoring sidecar {name}: larger than {_MAX_SIDECAR_BYTES // 1024} KiB"]
        meta = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return None, [f"ignoring sidecar {name}: cannot read it ({exc.strerror or exc})"]
    except (ValueError, UnicodeError, RecursionError) as exc:  # RecursionError: nesting deeper than Python's stack
        return None, [f"ignoring sidecar {name}: not valid JSON ({type(exc).__name__})"]
    if not isinstance(meta, dict) or meta.get("format") != SIDECAR_FORMAT:
        return None, []
    texts: dict[str, str] = {}
    problems = []
    for key in _SIDECAR_TEXT_FIELDS:
        if key in meta:
            if isinstance(meta[key], str) and len(meta[key]) <= 4096:
                texts[key] = meta[key]
            else:
                problems.append(f"ignoring sidecar {name} field '{key}': not a short text")
    norm = meta.get("normalization")
    normalization = None
    if norm is not None:
        std = norm.get("std") if isinstance(norm, dict) else None
        if isinstance(norm, dict) and _numbers(norm.get("mean")) and _numbers(std) and 0 not in std:
            normalization = (tuple(float(v) for v in norm["mean"]), tuple(float(v) for v in std))
        else:
            problems.append(
                f"ignoring sidecar {name} field 'normalization': mean and std must be one or three finite numbers "
                "(std not 0)"
            )
    return Sidecar(**texts, normalization=normalization), problems


def _read_model_bytes(path: Path) -> bytes:
    try:
        if path.is_dir():
            raise ModelError(f"model path is a folder, not a .tflite file: {path}")
        size = path.stat().st_size
        if size > MAX_MODEL_BYTES:
            raise ModelError(f"model file {path} is {size} bytes, larger than any TFLite flatbuffer can be")
        return path.read_bytes()
    except FileNotFoundError:
        raise ModelError(f"model file not found: {path}") from None
    except PermissionError:
        raise ModelError(f"no permission to read model file: {path}") from None
    except OSError as exc:
        raise ModelError(f"cannot read model file {path}: {exc.strerror or exc}") from None


# Input types this tool can make values of (numpy's names); strings, resources and 4-bit types it cannot.
_FEEDABLE = ("float32", "float16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
             "uint64", "bool")  # fmt: skip


def _fixed_inputs(info: TfliteInfo, options: ModelOptions) -> tuple[TensorInfo, ...]:
    """Every input with its dynamic dimensions fixed: by --input-shape, or a dynamic batch set to one;
    any other dynamic dimension is refused, saying which option fixes it."""
    if not info.inputs:
        raise ModelError("the model has no input")
    for t in info.inputs:
        if t.dtype not in _FEEDABLE:
            raise ModelError(f"input '{t.name}' is {t.dtype}: this tool feeds numeric and bool inputs only")
    known = {t.name for t in info.inputs} | {str(i) for i in range(len(info.inputs))}
    for name, _ in options.input_shapes:
        if name not in known:
            names = ", ".join(t.name for t in info.inputs)
            raise ModelError(f"--input-shape names '{name}', which is not an input of the model (inputs: {names})")
    fixed = []
    for i, t in enumerate(info.inputs):
        sig = t.shape_signature if len(t.shape_signature) == len(t.shape) else t.shape
        wanted = options.shape_for(t.name, i)
        if wanted is not None:
            if len(wanted) != len(sig) or any(s not in (-1, w) for s, w in zip(sig, wanted, strict=True)):
                raise ModelError(
                    f"--input-shape {t.name}={'x'.join(map(str, wanted))} does not fit input '{t.name}' "
                    f"(shape signature {list(sig)}: only its dynamic (-1) dimensions can be set)"
                )
            shape = wanted
        else:
            dynamic = [k for k, d in enumerate(sig) if d < 0 or (k > 0 and t.shape[k] < 1)]
            if any(k != 0 for k in dynamic):
                example = "x".join(str(d if d > 0 else 224) for d in sig)
                raise ModelError(
                    f"input '{t.name}' has dynamic dimensions (shape signature {list(sig)}); "
                    f"fix them with --input-shape {t.name}={example}"
                )
            shape = tuple(1 if k == 0 and (d < 1) else d for k, d in enumerate(t.shape))
            if shape and sig and sig[0] == -1:
                shape = (1, *shape[1:])
        if math.prod(shape) > _MAX_INPUT_ELEMENTS:
            raise ModelError(f"input '{t.name}' of shape {list(shape)} is larger than any input this tool feeds")
        fixed.append(TensorInfo(t.name, tuple(int(d) for d in shape), t.shape_signature, t.dtype, t.scale,
                                t.zero_point))  # fmt: skip
    return tuple(fixed)


def _check_image_input(inp: TensorInfo) -> None:
    if inp.shape[0] != 1:
        raise ModelError(f"input '{inp.name}' has batch size {inp.shape[0]}; frames are fed one at a time (batch 1)")
    if inp.dtype not in IMAGE_DTYPES:
        raise ModelError(f"input '{inp.name}' is {inp.dtype}; an image input is float32, uint8 or int8")


def _normalization(
    spec_input: TensorInfo,
    mean: tuple[float, ...] | None,
    std: tuple[float, ...] | None,
    sidecar: Sidecar | None,
    metadata: ClassifierMetadata | None,
) -> Normalization:
    def three(values: tuple[float, ...] | list[float], what: str) -> tuple[float, float, float]:
        vals = tuple(float(v) for v in values)
        if len(vals) == 1:
            vals = vals * 3
        if len(vals) != 3 or not all(math.isfinite(v) for v in vals):
            raise ModelError(f"{what} must be one or three finite numbers, got {list(values)}")
        return vals

    if mean is not None or std is not None:
        m = three(mean if mean is not None else (127.5,), "--mean")
        s = three(std if std is not None else (127.5,), "--std")
        source = "--mean/--std"
    elif sidecar is not None and sidecar.normalization is not None:
        m, s = three(sidecar.normalization[0], "sidecar mean"), three(sidecar.normalization[1], "sidecar std")
        source = "sidecar"
    elif metadata and metadata.mean and metadata.std:
        m, s = three(metadata.mean, "metadata mean"), three(metadata.std, "metadata std")
        source = "TFLite metadata"
    elif spec_input.dtype == "float32":
        return Normalization(source="default for float input")
    else:
        return Normalization(raw=True, source=f"default for {spec_input.dtype} input")
    if any(v == 0 for v in s):
        raise ModelError(f"normalisation std from {source} contains 0")
    return Normalization(mean=m, std=s, source=source)


def _labels(
    path: Path,
    content: bytes,
    classes: int,
    labels_file: Path | None,
    sidecar: Sidecar | None,
    metadata: ClassifierMetadata | None,
    aligned: bool = True,
) -> LabelSet:
    """The labels and where they came from. `aligned=False` (a detector, a class map): the outputs do
    not say how many classes there are, so index k is line k of whatever file is found."""
    align = align_labels if aligned else _as_listed
    if labels_file is not None:
        return align(read_labels_file(labels_file), classes, chosen_labels_source(labels_file))
    if sidecar is not None and sidecar.labels is not None:
        candidate = path.parent / Path(sidecar.labels).name  # a name beside the model, never a path elsewhere
        if candidate.is_file():
            return align(read_labels_file(candidate), classes, f"sidecar labels {candidate.name}")
    for candidate in (path.with_suffix(".txt"), path.parent / "labels.txt"):
        if candidate.is_file():
            return align(read_labels_file(candidate), classes, f"labels file beside the model ({candidate.name})")
    missing = []
    for name in metadata.label_files if metadata else []:
        data = read_associated_file(content, name)
        if data is not None:
            return align(parse_labels(data), classes, f"labels embedded in the model ({name})")
        missing.append(name)
    fallback = numbered_labels(classes)
    if missing:
        fallback.warnings.append(
            f"the model's metadata names {', '.join(missing)} but the file is not inside the model "
            "(truncated or damaged?); outputs are shown as 'class N'"
        )
    return fallback


def _as_listed(labels: list[str], classes: int, source: str) -> LabelSet:
    return LabelSet(labels, source, background_class=bool(labels) and labels[0].lower() in ("background", "???"))


@dataclass(frozen=True)
class _Structure:
    """What the file itself says: its graph, inputs fixed, metadata (None: absent or ignored) and task."""

    info: TfliteInfo
    inputs: tuple[TensorInfo, ...]
    metadata: ClassifierMetadata | None
    task: TaskChoice
    warnings: tuple[str, ...]


def _read_structure(path: Path, content: bytes, labels_file: Path | None, options: ModelOptions) -> _Structure:
    """The file's graph, inputs, metadata and task; ModelError named after the file when it cannot be used."""
    warnings: list[str] = []
    metadata = None
    try:
        info = read_tflite(content)
        inputs = _fixed_inputs(info, options)
        if METADATA_NAME in info.metadata:
            try:
                metadata = parse_metadata(info.metadata[METADATA_NAME])
            except ModelError as exc:
                warnings.append(f"ignoring the model's TFLite metadata: {exc}")
        names = metadata.output_names if metadata else ()
        labelled = labels_beside(path, labels_file, metadata.label_files if metadata else ())
        task = infer_task(inputs, info.outputs, info, names, options.task, labelled)
        if task.image_input is not None:
            _check_image_input(inputs[task.image_input])
    except ModelError as exc:  # the file's name goes first: the user may have opened several
        raise ModelError(f"{path.name}: {exc}") from None
    return _Structure(info, inputs, metadata, task, tuple(warnings))


def _trusted_sidecar(path: Path, sha: str, warnings: list[str]) -> Sidecar | None:
    """The project's sidecar beside the model, when it is of this very file (its sha256); problems as warnings."""
    sidecar, problems = read_sidecar(path.with_suffix(".json"))
    warnings.extend(problems)
    if sidecar is not None and sidecar.sha256 not in (None, sha):
        warnings.append(f"ignoring sidecar {path.with_suffix('.json').name}: its sha256 does not match the model")
        return None
    return sidecar


def _info_fields(sidecar: Sidecar | None, metadata: ClassifierMetadata | None) -> dict[str, str]:
    """Licence, source, description: shown, never interpreted."""
    fields_ = sidecar.info() if sidecar is not None else {}
    if metadata:
        fields_.update({k: v for k, v in (("description", metadata.description), ("author", metadata.author)) if v})
    return fields_


def load_model_spec(
    ref: str | Path | None = None,
    labels_file: Path | None = None,
    mean: tuple[float, ...] | None = None,
    std: tuple[float, ...] | None = None,
    options: ModelOptions | None = None,
) -> ModelSpec:
    """Read and check a model file; raise ModelError with one clear line when it cannot be used."""
    options = options or ModelOptions()
    path = resolve_model_path(ref)
    content = _read_model_bytes(path)
    structure = _read_structure(path, content, labels_file, options)
    task, metadata, image = structure.task, structure.metadata, structure.task.image_input
    inp = structure.inputs[image] if image is not None else structure.inputs[0]  # ModelSpec.input, checked below
    warnings = list(structure.warnings)
    sha = hashlib.sha256(content).hexdigest()
    sidecar = _trusted_sidecar(path, sha, warnings)

    classes = _class_count(task)
    points = task.layout.points if isinstance(task.layout, KeypointsLayout) else 0
    lined_up = points or classes  # a keypoints model's labels, if any, name its points (ModelSpec.label_count)
    labels = _labels(path, content, lined_up, labels_file, sidecar, metadata, aligned=lined_up > 0)
    if task.task in (Task.DETECTION, Task.SEGMENTATION) and classes == 0:
        classes = len(labels.labels)
    warnings.extend(labels.warnings)
    normalization = _normalization(inp, mean, std, sidecar, metadata)
    if normalization.source == "default for float input" and (graph := mediapipe_unit_input(task.layout)):
        normalization = Normalization(mean=(0.0,) * 3, std=(255.0,) * 3, source=f"[0, 1] as {graph} feeds it")
    if image is not None and not normalization.raw and inp.dtype != "float32" and not _usable_scale(inp):
        raise ModelError(
            f"{path.name}: input '{inp.name}' is {inp.dtype} without a usable quantization scale, so it takes "
            f"pixels as they are: normalisation ({normalization.source}) cannot apply"
        )
    name = (sidecar.name if sidecar else None) or path.stem
    output_kind = (sidecar.output if sidecar else None) or "unknown"
    return ModelSpec(
        name=name,
        display_name=(sidecar.display_name if sidecar else None) or name,
        path=path,
        sha256=sha,
        size_bytes=len(content),
        inputs=structure.inputs,
        outputs=tuple(structure.info.outputs),
        task=task,
        classes=classes,
        labels=labels,
        normalization=normalization,
        output_kind=output_kind if output_kind in ("probabilities", "logits") else "unknown",
        op_types=structure.info.op_types,
        op_versions=structure.info.op_versions,
        bundled=sidecar is not None and path.resolve().parent == models_dir().resolve(),
        info=_info_fields(sidecar, metadata),
        warnings=tuple(warnings),
        content=content,
        options=options,
    )


def _usable_scale(t: TensorInfo) -> bool:
    return t.scale is not None and math.isfinite(t.scale) and t.scale > 0


def _class_count(task: TaskChoice) -> int:
    """Classes where the outputs say how many (0: a detector's or a class map's labels will; none for
    keypoints and raw outputs)."""
    layout = task.layout
    if isinstance(layout, ClassificationLayout):
        return layout.classes
    if isinstance(layout, SegmentationLayout):
        return layout.classes if layout.classes > 1 else 0
    return 0
