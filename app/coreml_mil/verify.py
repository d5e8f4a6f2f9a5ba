"""Check a model's Core ML translation without a Mac: split execution and the programs' numerics.

1. Split execution: the pieces run one after another in LiteRT give the whole model's outputs.
2. Numerics: every delegated piece is translated, converted to an ML program (coremltools; runs on
   Linux), read back from the converted model, and evaluated op by op in numpy (mil_numpy); its
   outputs are compared with LiteRT's outputs of the same piece on the same inputs.

`python -m app.coreml_mil.verify MODEL.tflite [--precision fp32|fp16] [--coreml-version 2|3]` prints
the figures as JSON (it imports coremltools, hence TensorFlow on Linux: run it in its own process).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from ai_edge_litert.interpreter import Interpreter

from app.coreml_mil.execute import LiteRTPiece, PieceRunner, run_pieces
from app.coreml_mil.split import Piece, piece_models, plan_pieces
from app.coverage.coreml_rules import CoreMLOptions, predict
from app.system.names import GpuPrecision
from app.tflite.graph import Graph, read_graph

if TYPE_CHECKING:  # translate.py needs coremltools' MIL builder: imported where it is used
    from app.coreml_mil.translate import Translation


@dataclass
class PieceCheck:
    piece: int
    nodes: int
    ops: dict[str, int]
    mil_ops: dict[str, int]
    translate_s: float
    convert_s: float
    max_abs_diff: float  # the converted program's outputs vs LiteRT's (XNNPACK) outputs of the piece
    max_abs_reference: float  # the largest output value, for scale
    node_max_abs_diff: float  # every node's result in the translated program vs LiteRT's reference kernels
    node_worst: str  # the node where that maximum is
    node_max_rel_diff: float  # the same, each node's difference divided by its largest value (at least 1)


@dataclass
class ModelCheck:
    model: str
    log: str
    pieces: list[dict]  # index, where, nodes
    split_bit_exact: bool
    split_max_abs_diff: float
    precision: str
    partitions: list[PieceCheck]


def random_inputs(graph: Graph, seed: int = 0) -> Mapping[int, np.ndarray]:
    """Float inputs uniform in [-1, 1]; integer ones (token ids, say) in [0, 10)."""
    rng = np.random.default_rng(seed)
    feeds: dict[int, np.ndarray] = {}
    for t in graph.inputs:
        tensor = graph.tensors[t]
        if tensor.dtype.startswith("float"):
            feeds[t] = rng.uniform(-1, 1, tensor.shape).astype(tensor.dtype)
        else:
            feeds[t] = rng.integers(0, 10, tensor.shape).astype(tensor.dtype)
    return feeds


def whole_model_outputs(data: bytes, feeds: Mapping[int, np.ndarray], graph: Graph) -> list[np.ndarray]:
    interpreter = Interpreter(model_content=data, num_threads=1)
    interpreter.allocate_tensors()
    for detail, t in zip(interpreter.get_input_details(), graph.inputs, strict=True):
        interpreter.set_tensor(detail["index"], feeds[t])
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


def piece_values(pieces: list[Piece], models: list[bytes], feeds: Mapping[int, np.ndarray]) -> Mapping[int, np.ndarray]:
    """Every tensor that crosses a piece boundary, from running the pieces in LiteRT."""
    values = dict(feeds)
    for piece, content in zip(pieces, models, strict=True):
        produced = LiteRTPiece(content).run([values[t] for t in piece.inputs])
        values.update(zip(piece.outputs, produced, strict=True))
    return values


def all_tensors(data: bytes, feeds: Mapping[int, np.ndarray], graph: Graph) -> Mapping[int, np.ndarray]:
    """Every tensor of the whole model, from LiteRT's built-in (reference) kernels: XNNPACK would keep
    the intermediate tensors of its partitions to itself."""
    from ai_edge_litert.interpreter import OpResolverType

    interpreter = Interpreter(
        model_content=data,
        num_threads=1,
        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        experimental_preserve_all_tensors=True,
    )
    interpreter.allocate_tensors()
    for detail, t in zip(interpreter.get_input_details(), graph.inputs, strict=True):
        interpreter.set_tensor(detail["index"], feeds[t])
    interpreter.invoke()
    produced = {t for node in graph.nodes for t in node.outputs}
    return {t: interpreter.get_tensor(t).copy() for t in produced if t >= 0}


def node_diffs(
    translation: Translation, graph: Graph, piece: Piece, tensors: Mapping[int, np.ndarray]
) -> tuple[float, str, float]:
    """The largest difference between a node's result in the translated program and LiteRT's, node by node."""
    from app.coreml_mil import mil_numpy

    function = translation.program.functions["main"]
    feeds = {io.name: tensors.get(io.tensor) for io in translation.inputs}
    values = mil_numpy.evaluate(function, feeds, every_value=True)
    worst, where, relative = 0.0, "", 0.0
    for i in piece.nodes:
        node = graph.nodes[i]
        value = values.get(f"n{i}_{node.op.lower()}")
        if value is None:
            raise ValueError(f"node {i} ({node.op}) has no result named after it in the program")
        if value.ndim == 4:
            value = value.transpose(0, 2, 3, 1)
        reference = tensors[node.outputs[0]]
        diff = float(np.max(np.abs(value.astype(np.float32) - reference)))
        relative = max(relative, diff / max(1.0, float(np.max(np.abs(reference)))))
        if diff >= worst:
            worst, where = diff, f"{i} {node.op}"
    return worst, where, relative


def converted_function(mlmodel: Any) -> Any:  # coremltools' MLModel and pymil Function: untyped
    """The converted model's main function, read back from its spec and weight file (no Core ML runtime)."""
    from coremltools.converters.mil.frontend.milproto.load import load as load_mil

    spec = mlmodel.get_spec()
    program = load_mil(spec, spec.specificationVersion, mlmodel.weights_dir or "")
    return program.functions["main"]


def check_model(path: Path, precision: GpuPrecision | str = GpuPrecision.FP32, coreml_version: int = 3) -> ModelCheck:
    from app.coreml_mil import mil_numpy
    from app.coreml_mil.coremltools_import import import_coremltools
    from app.coreml_mil.translate import convert, translate

    import_coremltools()
    data = path.read_bytes()
    graph = read_graph(data)
    coverage = predict(graph, CoreMLOptions(coreml_version=coreml_version))
    pieces = plan_pieces(graph, coverage)
    models = piece_models(data, pieces)
    feeds = random_inputs(graph)
    whole = whole_model_outputs(data, feeds, graph)
    split, _ = run_pieces(pieces, [LiteRTPiece(m) for m in models], feeds, graph.outputs)
    exact = all(np.array_equal(a, b) for a, b in zip(whole, split, strict=True))
    split_diff = max(float(np.max(np.abs(a - b))) for a, b in zip(whole, split, strict=True))
    values = piece_values(pieces, models, feeds)
    reference = {**feeds, **all_tensors(data, feeds, graph)}
    checks = []
    for piece in pieces:
        if not piece.delegated:
            continue
        started = time.perf_counter()
        translation = translate(data, graph, piece)
        translated = time.perf_counter()
        # Before conversion: ct.convert runs its passes on the program in place.
        node_diff, node_worst, node_rel = node_diffs(translation, graph, piece, reference)
        translated_checked = time.perf_counter()
        mlmodel = convert(translation, precision)
        converted = time.perf_counter()
        function = converted_function(mlmodel)
        mil_ops: dict[str, int] = {}
        for op in function.operations:
            mil_ops[op.op_type] = mil_ops.get(op.op_type, 0) + 1
        got = mil_numpy.evaluate(function, {io.name: values[io.tensor] for io in translation.inputs})
        outs = translation.outputs
        diff = max(float(np.max(np.abs(got[io.name].astype(np.float32) - values[io.tensor]))) for io in outs)
        scale = max(float(np.max(np.abs(values[io.tensor]))) for io in translation.outputs)
        checks.append(
            PieceCheck(
                piece=piece.index,
                nodes=len(piece.nodes),
                ops=translation.ops,
                mil_ops=dict(sorted(mil_ops.items())),
                translate_s=round(translated - started, 4),
                convert_s=round(converted - translated_checked, 4),
                max_abs_diff=diff,
                max_abs_reference=scale,
                node_max_abs_diff=node_diff,
                node_worst=node_worst,
                node_max_rel_diff=node_rel,
            )
        )
    return ModelCheck(
        path.name, coverage.log or "", [{"index": p.index, "where": p.where, "nodes": len(p.nodes)} for p in pieces],
        exact, split_diff, precision, checks,
    )  # fmt: skip


class NumpyProgramPiece:
    """A delegated piece run as its converted ML program, evaluated in numpy (mil_numpy): a stand-in for
    Core ML's prediction where there is no Core ML."""

    def __init__(self, function: Any, translation: Translation) -> None:  # function: a pymil Function
        self.function, self.translation = function, translation

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        from app.coreml_mil import mil_numpy

        names = [io.name for io in self.translation.inputs]
        out = mil_numpy.evaluate(self.function, dict(zip(names, inputs, strict=True)))
        return [out[io.name].astype(np.float32) for io in self.translation.outputs]


def end_to_end(data: bytes, inputs: list[np.ndarray], precision: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(whole model in LiteRT, pieces with the delegated ones as numpy-evaluated converted programs) outputs
    for each input: what a Mac running the split model would compute, short of Core ML's own kernels."""
    from app.coreml_mil.coremltools_import import import_coremltools
    from app.coreml_mil.translate import convert, translate

    import_coremltools()
    graph = read_graph(data)
    pieces = plan_pieces(graph, predict(graph))
    models = piece_models(data, pieces)
    runners: list[PieceRunner] = []
    for piece, content in zip(pieces, models, strict=True):
        if piece.delegated:
            translation = translate(data, graph, piece)
            runners.append(NumpyProgramPiece(converted_function(convert(translation, precision)), translation))
        else:
            runners.append(LiteRTPiece(content))
    whole, split = [], []
    for x in inputs:
        feeds = {graph.inputs[0]: x}
        whole.append(whole_model_outputs(data, feeds, graph)[0])
        split.append(run_pieces(pieces, runners, feeds, graph.outputs[:1])[0][0])
    return whole, split


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.coreml_mil.verify", description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--precision", choices=(GpuPrecision.FP32, GpuPrecision.FP16), default=GpuPrecision.FP32)
    parser.add_argument("--coreml-version", type=int, choices=(2, 3), default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory():
        result = check_model(args.model, args.precision, args.coreml_version)
    json.dump(asdict(result), sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
