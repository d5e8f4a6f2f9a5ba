"""Core ML counterparts of the bundled TFLite models: export (build time) and a reader (no Core ML needed).

Core ML cannot load .tflite files, and the TFLite Core ML delegate exists only in the
iOS runtime, so the macOS Core ML backend runs a converted copy of the same network:

- `efficientnet_lite0.mlpackage`: ML program, fp16 weights and fp16 compute (what the
  Neural Engine runs), float32 input and output.
- `efficientnet_lite0_int8.mlpackage`: the same network with weights linearly quantized
  to int8 (per output channel, symmetric); activations stay fp16. The TFLite int8 model
  quantizes activations too; Core ML on macOS 13 has no int8 activations.

Input `input`: (1, 224, 224, 3) float32 NHWC RGB, already normalised as (x - 127) / 128
(the tensor the app feeds the float TFLite model). Output `probabilities`: (1, 1000) float32.

`export_coreml` needs coremltools and TensorFlow (the `convert` extra) and runs on Linux
too; `read_mlpackage` needs only coremltools and never compiles or runs the model.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

INPUT_NAME = "input"
OUTPUT_NAME = "probabilities"
IMAGE_SIZE = 224
NUM_CLASSES = 1000
AUTHOR = "Delegate Scope models/build_models.py (coremltools conversion of the Keras EfficientNet-Lite0)"
LICENSE = "Apache-2.0"
VERSION = "1"
# Conversion metadata coremltools writes; the date would make every rebuild differ.
_DROPPED_METADATA = ("com.github.apple.coremltools.conversion_date",)
_MANIFEST = "Manifest.json"
_ID_NAMESPACE = uuid.UUID("6f1e4a8e-5d2b-4c1a-9d3e-2b7c0f4a9e61")  # fixed: manifest ids from item paths


def _quantization_note(quantized: bool) -> str:
    if not quantized:
        return "fp16 weights, fp16 compute, float32 input/output"
    return (
        "int8 weights (linear, symmetric, per output channel), dequantized to fp16 at load; "
        "activations and compute stay fp16 (Core ML on macOS 13 has no int8 activations, "
        "unlike the full-int8 TFLite model); float32 input/output"
    )


def _description(quantized: bool) -> str:
    which = "int8-weight" if quantized else "fp16"
    return (
        f"EfficientNet-Lite0 ImageNet-1k classifier (1000 classes, no background class), {which} Core ML "
        f"version of efficientnet_lite0{'_int8' if quantized else ''}.tflite: {_quantization_note(quantized)}. "
        "Input: RGB, centre crop, 224x224, (x - 127) / 128. Output: softmax probabilities."
    )


def _convert(keras_model: Any) -> Any:
    """Keras model -> in-memory ML program with fp16 compute and float32 I/O (not compiled or loaded)."""
    import coremltools as ct
    from coremltools import _deps

    if not _deps._HAS_TF_2:
        # app.coreml_mil.coremltools_import imports coremltools with TensorFlow hidden; it decides once per process.
        raise RuntimeError(
            "coremltools was imported in this process without TensorFlow (the app's Core ML backend "
            "does that to stay light); export Core ML models in a fresh process with TensorFlow installed"
        )

    # coremltools takes the Keras 3 model directly (it traces a concrete function from it).
    # minimum_deployment_target macOS13: constexpr int8 weights and CPU_AND_NE both need it.
    # Without explicit float32 dtypes, an fp16 program targeting macOS 13 gets fp16 I/O.
    return ct.convert(
        keras_model,
        source="tensorflow",
        convert_to="mlprogram",
        inputs=[ct.TensorType(shape=(1, IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.float32)],
        outputs=[ct.TensorType(dtype=np.float32)],
        compute_precision=ct.precision.FLOAT16,
        minimum_deployment_target=ct.target.macOS13,
        skip_model_load=True,
    )


def _rename_io(mlmodel: Any) -> Any:
    import coremltools as ct

    spec = mlmodel.get_spec()
    (inp,), (out,) = spec.description.input, spec.description.output
    ct.utils.rename_feature(spec, inp.name, INPUT_NAME)
    ct.utils.rename_feature(spec, out.name, OUTPUT_NAME)
    return ct.models.MLModel(spec, weights_dir=mlmodel.weights_dir, skip_model_load=True)


def _quantize_int8(mlmodel: Any) -> Any:
    from coremltools.optimize.coreml import OpLinearQuantizerConfig, OptimizationConfig, linear_quantize_weights

    # weight_threshold=0: every conv and linear weight, like the TFLite int8 model (the default
    # 2048 would leave the stem and small depthwise kernels in fp16). coremltools never
    # quantizes rank-1 consts, so the biases stay fp16.
    config = OptimizationConfig(
        global_config=OpLinearQuantizerConfig(
            mode="linear_symmetric", dtype="int8", granularity="per_channel", weight_threshold=0
        )
    )
    return linear_quantize_weights(mlmodel, config)


def int8_tolerance(weight: np.ndarray) -> np.ndarray:
    """Largest error of symmetric per-output-channel int8 weights with an fp16 scale, per element.

    Rounding to the grid costs half a step (step = max|w| / 127 per output channel); the fp16
    weight it starts from and the fp16 scale add at most 127 * 2**-11 step each in the normal
    range, and 127 * 2**-25 absolute where the scale is subnormal or underflows to 0. One step
    plus that absolute term covers it all.
    """
    step = np.abs(weight).reshape(weight.shape[0], -1).max(axis=1) / 127.0
    return (step + 127.0 * 2.0**-25).reshape((-1,) + (1,) * (weight.ndim - 1))


def _check_quantized(before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> None:
    if before.keys() != after.keys():
        raise RuntimeError("int8 quantization changed the set of conv/linear layers")
    for name, weight in before.items():
        error = np.abs(after[name] - weight)
        if weight.shape != after[name].shape or not np.all(error <= int8_tolerance(weight)):
            raise RuntimeError(f"int8 weights of {name} are further from the fp16 weights than one step")


def _set_metadata(mlmodel: Any, quantized: bool) -> None:
    mlmodel.author = AUTHOR
    mlmodel.license = LICENSE
    mlmodel.version = VERSION
    mlmodel.short_description = _description(quantized)
    mlmodel.input_description[INPUT_NAME] = (
        "RGB image, 1x224x224x3 float32 NHWC, centre-cropped and normalised as (x - 127) / 128"
    )
    mlmodel.output_description[OUTPUT_NAME] = "softmax probabilities of the 1000 ImageNet-1k classes"
    meta = mlmodel.user_defined_metadata
    for key in _DROPPED_METADATA:
        if key in meta:
            del meta[key]
    meta["delegate_scope.quantization"] = _quantization_note(quantized)
    meta["delegate_scope.normalization"] = "(x - 127) / 128"


def _make_deterministic(package: Path) -> None:
    """Rewrite what differs between two exports of the same model, then check the package reads.

    - Manifest.json: coremltools names the items by random UUIDs; Core ML only needs them to be
      unique within the package, so they become UUIDs derived from the item paths.
    - model.mlmodel: protobuf maps (metadata, op attributes) are written in hash order, which
      changes with Python's string hash seed; it is re-serialized with sorted map keys.
    """
    import coremltools as ct
    from coremltools.libmodelpackage import ModelPackage

    manifest = package / _MANIFEST
    text = manifest.read_text(encoding="utf-8")
    for old, item in json.loads(text)["itemInfoEntries"].items():
        text = text.replace(old, str(uuid.uuid5(_ID_NAMESPACE, item["path"])).upper())
    manifest.write_text(text, encoding="utf-8")
    if not ModelPackage.isValid(str(package)):
        raise RuntimeError(f"{package}: the package is not valid after fixing its manifest ids")
    loaded = ModelPackage(str(package))
    if loaded.findItemByNameAuthor("weights", "com.apple.CoreML") is None:
        raise RuntimeError(f"{package}: weights not found after fixing its manifest ids")
    spec_path = Path(loaded.getRootModel().path())
    spec = ct.utils.load_spec(str(package))
    spec_path.write_bytes(spec.SerializeToString(deterministic=True))
    if ct.utils.load_spec(str(package)) != spec:
        raise RuntimeError(f"{package}: the model spec changed when re-serialized")


def export_coreml(keras_model: Any, out_dir: Path, name: str, quantize_weights_int8: bool) -> Path:
    """Write `out_dir/<name>.mlpackage` from the Keras EfficientNet-Lite0; return its path.

    The export is deterministic: no conversion date, manifest ids derived from item paths,
    sorted protobuf maps, files 0644. It replaces an existing package of the same name only once the new one is written.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    mlmodel = _rename_io(_convert(keras_model))
    if quantize_weights_int8:
        _, before = _layer_weights(_main_operations(mlmodel.get_spec(), mlmodel.weights_dir))
        # Some channels hold only weights below 127 * 2**-25 (~3.8e-6; ReLU6 channels whose
        # batch-norm scale is ~0): their fp16 scale underflows to 0 and numpy warns about the
        # division while those channels become exactly 0. The check below bounds every error.
        with np.errstate(divide="ignore", invalid="ignore"):
            mlmodel = _quantize_int8(mlmodel)
        _, after = _layer_weights(_main_operations(mlmodel.get_spec(), mlmodel.weights_dir))
        _check_quantized(before, after)
    _set_metadata(mlmodel, quantize_weights_int8)
    target = out_dir / f"{name}.mlpackage"
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=f".{name}.") as tmp:
        staged = Path(tmp) / target.name
        mlmodel.save(str(staged))
        _make_deterministic(staged)
        for root, _dirs, files in os.walk(staged):
            for file in files:
                os.chmod(Path(root) / file, 0o644)
        facts = read_mlpackage(staged)  # the file must read back as specified before it replaces anything
        expected = (
            (INPUT_NAME, [1, IMAGE_SIZE, IMAGE_SIZE, 3], "float32"),
            (OUTPUT_NAME, [1, NUM_CLASSES], "float32"),
        )
        got = tuple((t["name"], t["shape"], t["dtype"]) for t in (facts["input"], facts["output"]))
        if got != expected:
            raise RuntimeError(f"{target.name}: unexpected I/O {got}, expected {expected}")
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)
    return target


# ---------------------------------------------------------------- reading (no Core ML runtime)


def _feature(feature: Any) -> dict:
    from coremltools.proto.FeatureTypes_pb2 import ArrayFeatureType

    array = feature.type.multiArrayType
    dtype = ArrayFeatureType.ArrayDataType.Name(array.dataType).lower()  # FLOAT32 -> float32
    return {
        "name": feature.name,
        "shape": [int(d) for d in array.shape],
        "dtype": "float64" if dtype == "double" else dtype,
        "description": feature.shortDescription,
    }


def _weight_value(var: Any) -> tuple[np.ndarray, str]:
    """(float32 value, storage) of a weight input: a const, or int8 data dequantized by a constexpr op."""
    producer = var.op
    if producer.op_type == "const":
        return np.asarray(producer.val.val, dtype=np.float32), str(np.asarray(producer.val.val).dtype)
    if producer.op_type == "constexpr_affine_dequantize":
        data = np.asarray(producer.quantized_data.val)
        scale = np.asarray(producer.scale.val, dtype=np.float32)
        zero_point = np.asarray(producer.zero_point.val, dtype=np.float32)
        axis = int(producer.axis.val)
        shape = [1] * data.ndim
        shape[axis] = -1
        if scale.ndim:
            scale = scale.reshape(shape)
        if zero_point.ndim:
            zero_point = zero_point.reshape(shape)
        return (data.astype(np.float32) - zero_point) * scale, f"{data.dtype} (per-axis {axis} scale)"
    raise ValueError(f"weight {var.name} comes from an unsupported op {producer.op_type}")


def _main_operations(spec: Any, weights_dir: str | None) -> list:
    """The ops of the program's main function, consts loaded from the weight file (no Core ML runtime)."""
    from coremltools.converters.mil.frontend.milproto.load import load as load_mil

    program = load_mil(spec, spec.specificationVersion, weights_dir or "")
    return list(program.functions["main"].operations)


def _layer_weights(operations: list) -> tuple[list[dict], dict[str, np.ndarray]]:
    layers: list[dict] = []
    weights: dict[str, np.ndarray] = {}
    for op in operations:
        if op.op_type not in ("conv", "linear"):
            continue
        value, storage = _weight_value(op.inputs["weight"])
        layers.append({"name": op.name, "op": op.op_type, "weight_shape": list(value.shape), "storage": storage})
        weights[op.name] = value
    return layers, weights


def read_mlpackage(path: Path | str) -> dict:
    """Facts about an .mlpackage read from its files: I/O, metadata, op counts, weights as float32.

    `layers` lists the conv and linear ops of the main function in program order (op name,
    type, weight shape, storage dtype); `weights` maps those op names to their weight as
    float32 (int8 weights dequantized, fp16 widened). Core ML layouts: conv (out, in/groups,
    kh, kw), linear (out, in).
    """
    from app.coreml_mil.coremltools_import import import_coremltools

    ct = import_coremltools()  # reading needs no TensorFlow; keep it out of the caller's process

    path = Path(path)
    if not (path / _MANIFEST).is_file():
        raise FileNotFoundError(f"not an .mlpackage (no {_MANIFEST}): {path}")
    mlmodel = ct.models.MLModel(str(path), skip_model_load=True)
    spec = mlmodel.get_spec()
    if spec.WhichOneof("Type") != "mlProgram":
        raise ValueError(f"{path.name} is a {spec.WhichOneof('Type')} model, not an ML program")
    if len(spec.description.input) != 1 or len(spec.description.output) != 1:
        raise ValueError(f"{path.name}: expected one input and one output")
    operations = _main_operations(spec, mlmodel.weights_dir)
    layers, weights = _layer_weights(operations)
    meta = spec.description.metadata
    return {
        "path": str(path),
        "specification_version": int(spec.specificationVersion),
        "input": _feature(spec.description.input[0]),
        "output": _feature(spec.description.output[0]),
        "author": meta.author,
        "license": meta.license,
        "version": meta.versionString,
        "short_description": meta.shortDescription,
        "user_defined": dict(sorted(meta.userDefined.items())),
        "op_counts": dict(sorted(Counter(op.op_type for op in operations).items())),
        "layers": layers,
        "weights": weights,
    }
