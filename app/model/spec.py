"""ModelSpec: everything the app needs to know to feed and read any TFLite image classifier.

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
from typing import TypeGuard

import numpy as np

from app.errors import ModelError
from app.model.labels import LabelSet, align_labels, numbered_labels, parse_labels, read_labels_file
from app.system.paths import models_dir
from app.tflite.file import TensorInfo, TfliteInfo, read_tflite
from app.tflite.metadata import METADATA_NAME, ClassifierMetadata, parse_metadata, read_associated_file

DEFAULT_MODEL = "efficientnet_lite0"
SIDECAR_FORMAT = 1
MAX_MODEL_BYTES = 2 * 1024**3  # flatbuffers cannot address more; larger files are not TFLite models
_INPUT_DTYPES = ("float32", "uint8", "int8")
_OUTPUT_DTYPES = ("float32", "float16", "uint8", "int8")


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
class ModelSpec:
    name: str
    display_name: str
    path: Path
    sha256: str
    size_bytes: int
    input: TensorInfo
    output: TensorInfo
    classes: int
    labels: LabelSet
    normalization: Normalization
    output_kind: str  # "probabilities", "logits" or "unknown" (decided per result, see postprocess)
    op_types: list[str]
    op_versions: list[int]
    bundled: bool = False
    info: dict = field(default_factory=dict)  # licence, source, description: shown, never interpreted
    warnings: list[str] = field(default_factory=list)
    content: bytes = field(default=b"", repr=False, compare=False)

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
            "classes": self.classes,
        }


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
    classes: int
    labels: str  # where the labels came from
    label_warnings: tuple[str, ...]  # whether they fit: the window shows both, never silently

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
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "id": self.id,
            "sha256": self.sha256,
            "path": self.path,
            "input": {"shape": list(self.input_shape), "dtype": self.input_dtype},
            "classes": self.classes,
            "labels": self.labels,
            "label_warnings": list(self.label_warnings),
        }


def bundled_models() -> Mapping[str, Path]:
    """Bundled model name -> .tflite path, from the sidecars in the models folder."""
    found: dict[str, Path] = {}
    folder = models_dir()
    for sidecar in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        meta, _ = read_sidecar(sidecar)
        if meta and "file" in meta:
            path = folder / meta["file"]
            if path.is_file():
                found[str(meta.get("name", path.stem))] = path
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


def read_sidecar(path: Path) -> tuple[dict | None, list[str]]:
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
    clean: dict = {"format": SIDECAR_FORMAT}
    problems = []
    for key in _SIDECAR_TEXT_FIELDS:
        if key in meta:
            if isinstance(meta[key], str) and len(meta[key]) <= 4096:
                clean[key] = meta[key]
            else:
                problems.append(f"ignoring sidecar {name} field '{key}': not a short text")
    norm = meta.get("normalization")
    if norm is not None:
        std = norm.get("std") if isinstance(norm, dict) else None
        if isinstance(norm, dict) and _numbers(norm.get("mean")) and _numbers(std) and 0 not in std:
            clean["normalization"] = {"mean": norm["mean"], "std": norm["std"]}
        else:
            problems.append(
                f"ignoring sidecar {name} field 'normalization': mean and std must be one or three finite numbers "
                "(std not 0)"
            )
    return clean, problems


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


def _check_classifier(info: TfliteInfo) -> tuple[TensorInfo, TensorInfo, int]:
    """Refuse what is not a single-image classifier, saying what was found instead."""
    if len(info.inputs) != 1:
        names = ", ".join(f"{t.name} {list(t.shape)}" for t in info.inputs) or "none"
        raise ModelError(f"not a single-image classifier: the model has {len(info.inputs)} inputs ({names})")
    if len(info.outputs) != 1:
        names = ", ".join(f"{t.name} {list(t.shape)}" for t in info.outputs) or "none"
        hint = " (looks like a detector)" if len(info.outputs) >= 3 else ""
        raise ModelError(f"not a single-image classifier: the model has {len(info.outputs)} outputs{hint}: {names}")
    inp, out = info.inputs[0], info.outputs[0]
    if len(inp.shape) != 4 or inp.shape[3] != 3:
        raise ModelError(
            f"not an RGB image classifier: input '{inp.name}' has shape {list(inp.shape)} ({inp.dtype}); "
            "expected [1, height, width, 3]"
        )
    sig = inp.shape_signature if len(inp.shape_signature) == 4 else inp.shape
    if sig[1] <= 0 or sig[2] <= 0 or inp.shape[1] <= 0 or inp.shape[2] <= 0:
        raise ModelError(
            f"input '{inp.name}' has a dynamic image size (shape signature {list(sig)}); "
            "a fixed height and width are needed"
        )
    if inp.shape[0] not in (1, -1) or sig[0] not in (1, -1):
        raise ModelError(f"input '{inp.name}' has batch size {inp.shape[0]}; a single-image classifier has batch 1")
    if inp.dtype not in _INPUT_DTYPES:
        raise ModelError(f"input '{inp.name}' is {inp.dtype}; an image input is float32, uint8 or int8")
    if inp.dtype != "float32" and (inp.scale is None or not math.isfinite(inp.scale) or inp.scale <= 0):
        raise ModelError(f"quantized input '{inp.name}' has no usable quantization scale")
    if out.dtype not in _OUTPUT_DTYPES:
        raise ModelError(f"output '{out.name}' is {out.dtype}; class scores are float or quantized integers")
    dims = [d for d in out.shape if d != 1]
    if len(dims) != 1 or dims[0] < 2:
        raise ModelError(
            f"not a classifier output: '{out.name}' has shape {list(out.shape)}; expected one axis of class scores"
        )
    return inp, out, dims[0]


def _normalization(
    spec_input: TensorInfo,
    mean: tuple[float, ...] | None,
    std: tuple[float, ...] | None,
    sidecar: dict | None,
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
    elif sidecar and isinstance(sidecar.get("normalization"), dict):
        norm = sidecar["normalization"]
        m, s = three(norm.get("mean", ()), "sidecar mean"), three(norm.get("std", ()), "sidecar std")
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
    sidecar: dict | None,
    metadata: ClassifierMetadata | None,
) -> LabelSet:
    if labels_file is not None:
        return align_labels(read_labels_file(labels_file), classes, f"--labels {labels_file}")
    if sidecar and isinstance(sidecar.get("labels"), str):
        candidate = path.parent / Path(sidecar["labels"]).name  # a name beside the model, never a path elsewhere
        if candidate.is_file():
            return align_labels(read_labels_file(candidate), classes, f"sidecar labels {candidate.name}")
    for candidate in (path.with_suffix(".txt"), path.parent / "labels.txt"):
        if candidate.is_file():
            return align_labels(
                read_labels_file(candidate), classes, f"labels file beside the model ({candidate.name})"
            )
    missing = []
    for name in metadata.label_files if metadata else []:
        data = read_associated_file(content, name)
        if data is not None:
            return align_labels(parse_labels(data), classes, f"labels embedded in the model ({name})")
        missing.append(name)
    fallback = numbered_labels(classes)
    if missing:
        fallback.warnings.append(
            f"the model's metadata names {', '.join(missing)} but the file is not inside the model "
            "(truncated or damaged?); outputs are shown as 'class N'"
        )
    return fallback


def load_model_spec(
    ref: str | Path | None = None,
    labels_file: Path | None = None,
    mean: tuple[float, ...] | None = None,
    std: tuple[float, ...] | None = None,
) -> ModelSpec:
    """Read and check a model file; raise ModelError with one clear line when it cannot be used."""
    path = resolve_model_path(ref)
    content = _read_model_bytes(path)
    try:
        info = read_tflite(content)
        inp, out, classes = _check_classifier(info)
    except ModelError as exc:  # the file's name goes first: the user may have opened several
        raise ModelError(f"{path.name}: {exc}") from None
    warnings: list[str] = []

    sha = hashlib.sha256(content).hexdigest()
    sidecar, sidecar_problems = read_sidecar(path.with_suffix(".json"))
    warnings.extend(sidecar_problems)
    if sidecar is not None and sidecar.get("sha256") not in (None, sha):
        warnings.append(f"ignoring sidecar {path.with_suffix('.json').name}: its sha256 does not match the model")
        sidecar = None

    metadata = None
    if METADATA_NAME in info.metadata:
        try:
            metadata = parse_metadata(info.metadata[METADATA_NAME])
        except ModelError as exc:
            warnings.append(f"ignoring the model's TFLite metadata: {exc}")

    labels = _labels(path, content, classes, labels_file, sidecar, metadata)
    warnings.extend(labels.warnings)
    normalization = _normalization(inp, mean, std, sidecar, metadata)
    bundled = sidecar is not None and path.resolve().parent == models_dir().resolve()
    name = str(sidecar.get("name", path.stem)) if sidecar else path.stem
    info_fields = {k: sidecar[k] for k in ("source", "licence", "quantization") if sidecar and k in sidecar}
    if metadata:
        info_fields.update({k: v for k, v in (("description", metadata.description), ("author", metadata.author)) if v})
    output_kind = sidecar.get("output", "unknown") if sidecar else "unknown"

    return ModelSpec(
        name=name,
        display_name=str(sidecar.get("display_name", name)) if sidecar else name,
        path=path,
        sha256=sha,
        size_bytes=len(content),
        input=inp,
        output=out,
        classes=classes,
        labels=labels,
        normalization=normalization,
        output_kind=output_kind if output_kind in ("probabilities", "logits") else "unknown",
        op_types=info.op_types,
        op_versions=info.op_versions,
        bundled=bundled,
        info=info_fields,
        warnings=warnings,
        content=content,
    )
