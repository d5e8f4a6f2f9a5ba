"""Layout and weights: the translator's programs vs the program coremltools' TensorFlow converter made.

models/efficientnet_lite0.mlpackage is coremltools' own conversion of the Keras EfficientNet-Lite0
(models/coreml_export.py: fp16, macOS 13); models/efficientnet_lite0.tflite is TensorFlow Lite's
conversion of the same Keras model. This converts the .tflite's delegated partitions the same way
(fp16) and compares the two programs op for op: the sequence of compute ops, and for every conv
and linear its weight, bias, strides, dilations, groups and effective padding after each side's
layout transforms. The MEAN the delegate leaves on the CPU is the one op only the export has.

`python -m app.coreml_mil.compare_export [MODEL.tflite PACKAGE.mlpackage]` prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.system.names import GpuPrecision

_SKIPPED = {"const", "cast", "transpose", "identity"}  # edges and storage, not the network's compute


@dataclass
class ExportMatch:
    translator_ops: list[str]
    export_ops: list[str]
    only_in_export: list[str]
    layers_compared: int
    attribute_mismatches: list[str] = field(default_factory=list)
    max_weight_diff: float = 0.0
    max_weight_ulps: float = 0.0  # in fp16 units in the last place of the larger value
    max_bias_diff: float = 0.0
    max_bias_ulps: float = 0.0


def _compute_ops(function: Any) -> list[Any]:
    return [op for op in function.operations if op.op_type not in _SKIPPED]


def _ulps(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float32), b.astype(np.float32)
    scale = np.maximum(np.abs(a), np.abs(b))
    ulp = np.where(scale < 2.0**-14, 2.0**-24, 2.0 ** (np.floor(np.log2(np.maximum(scale, 2.0**-14))) - 10))
    return float(np.max(np.abs(a - b) / ulp)) if a.size else 0.0


def _max_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a.astype(np.float32) - b.astype(np.float32)))) if a.size else 0.0


def _attrs(op: Any) -> dict[str, Any]:
    from app.coreml_mil.mil_numpy import _spatial_pads, _val

    if op.op_type != "conv":
        return {}
    kernel = tuple(int(k) for k in op.inputs["weight"].shape[2:])
    strides = [int(s) for s in _val(op, "strides", [1, 1])]
    dilations = [int(d) for d in _val(op, "dilations", [1, 1])]
    x = np.empty(tuple(int(d) for d in op.inputs["x"].shape), np.float16)
    return {
        "strides": strides,
        "dilations": dilations,
        "groups": int(_val(op, "groups", 1)),
        "pads": _spatial_pads(op, x, kernel, strides, dilations),
    }


def _const(op: Any, name: str) -> np.ndarray | None:
    var = op.inputs.get(name)
    return None if var is None or var.val is None else np.asarray(var.val)


def compare(model: Path, package: Path) -> ExportMatch:
    from app.coreml_mil.coremltools_import import import_coremltools
    from app.coreml_mil.programs import split_model
    from app.coreml_mil.translate import convert, translate
    from app.coreml_mil.verify import converted_function

    ct = import_coremltools()
    data = model.read_bytes()
    split = split_model(data)
    ours: list[Any] = []
    for piece in split.pieces:
        if piece.delegated:
            ours += _compute_ops(converted_function(convert(translate(data, split.graph, piece), GpuPrecision.FP16)))
    theirs_all = _compute_ops(converted_function(ct.models.MLModel(str(package), skip_model_load=True)))
    # The ops the delegate leaves on the CPU are in the export only: drop them in order.
    cpu_ops = [split.graph.nodes[i].op for p in split.pieces if not p.delegated for i in p.nodes]
    cpu_mil = {"MEAN": "reduce_mean"}
    dropped: list[str] = []
    theirs = []
    wanted = [cpu_mil.get(op, op) for op in cpu_ops]
    for op in theirs_all:
        if wanted and op.op_type == wanted[0]:
            dropped.append(op.op_type)
            wanted.pop(0)
            continue
        theirs.append(op)
    result = ExportMatch([o.op_type for o in ours], [o.op_type for o in theirs], dropped, 0)
    if result.translator_ops != result.export_ops:
        return result
    for a, b in zip(ours, theirs, strict=True):
        if a.op_type not in ("conv", "linear"):
            continue
        result.layers_compared += 1
        if _attrs(a) != _attrs(b):
            result.attribute_mismatches.append(f"{a.name} {_attrs(a)} vs {b.name} {_attrs(b)}")
        wa, wb = _const(a, "weight"), _const(b, "weight")
        if wa is None or wb is None or wa.shape != wb.shape:
            shapes = (getattr(wa, "shape", None), getattr(wb, "shape", None))
            result.attribute_mismatches.append(f"{a.name}: weight shapes {shapes[0]} vs {shapes[1]}")
            continue
        result.max_weight_diff = max(result.max_weight_diff, _max_diff(wa, wb))
        result.max_weight_ulps = max(result.max_weight_ulps, _ulps(wa, wb))
        ba, bb = _const(a, "bias"), _const(b, "bias")
        ba = np.zeros(wa.shape[0], np.float32) if ba is None else ba
        bb = np.zeros(wb.shape[0], np.float32) if bb is None else bb
        result.max_bias_diff = max(result.max_bias_diff, _max_diff(ba, bb))
        result.max_bias_ulps = max(result.max_bias_ulps, _ulps(ba, bb))
    return result


def main(argv: list[str] | None = None) -> int:
    from app.model.spec import bundled_models

    parser = argparse.ArgumentParser(
        prog="python -m app.coreml_mil.compare_export", description=__doc__.splitlines()[0]
    )
    default = bundled_models()["efficientnet_lite0"]
    parser.add_argument("model", type=Path, nargs="?", default=default)
    parser.add_argument("package", type=Path, nargs="?", default=default.with_suffix(".mlpackage"))
    args = parser.parse_args(argv)
    json.dump(asdict(compare(args.model, args.package)), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
