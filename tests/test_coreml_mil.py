"""Core ML for any float model, checked without a Mac (app/coreml_mil/).

- Split execution: the pieces of a model cut at the Core ML delegate's partitions, run one after
  another in LiteRT, give the whole model's outputs (here, in this process: no coremltools).
- Translation and numerics: every delegated piece translates to a MIL program, converts to an ML
  program, and that program evaluated in numpy from the MIL op specifications matches LiteRT
  (in a child process: coremltools, even imported without TensorFlow, sets state for the whole process,
  TF_CPP_MIN_LOG_LEVEL in its environment among it, which the GPU tests' children would inherit).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from app.coreml_mil.execute import LiteRTPiece, run_pieces
from app.coreml_mil.split import piece_models, plan_pieces
from app.coreml_mil.verify import random_inputs, whole_model_outputs
from app.coverage.coreml_rules import _CHECKS, CoreMLOptions, predict
from app.model.spec import bundled_models
from app.tflite.graph import read_graph
from tests.builders.coreml_models import every_op_model, fp16_partial_model, fp16_weights_model, reshape_model
from tests.helpers.paths import ROOT, TEST_MODELS

# Its module-scoped fixtures are built once: the module's tests stay on one xdist worker, in order.
pytestmark = pytest.mark.xdist_group("coreml_mil")

HAS_COREMLTOOLS = importlib.util.find_spec("coremltools") is not None
HAS_TENSORFLOW = importlib.util.find_spec("tensorflow") is not None


@pytest.fixture(scope="module")
def model_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("coreml_models")
    files = {}
    models = {"every_op": every_op_model(), "reshape": reshape_model(), "fp16": fp16_weights_model(),
              "fp16_partial": fp16_partial_model()}  # fmt: skip
    for name, data in models.items():
        files[name] = folder / f"{name}.tflite"
        files[name].write_bytes(data)
    return files


# ---- split execution (no coremltools) ------------------------------------------------------------


def _split_and_run(data: bytes, options: CoreMLOptions | None = None) -> tuple[list, list[bytes], list, list]:
    graph = read_graph(data)
    pieces = plan_pieces(graph, predict(graph, options))
    models = piece_models(data, pieces)
    feeds = random_inputs(graph)
    whole = whole_model_outputs(data, feeds, graph)
    split, timings = run_pieces(pieces, [LiteRTPiece(m) for m in models], feeds, graph.outputs)
    assert [t.where for t in timings] == [p.where for p in pieces]
    return pieces, models, whole, split


def test_pieces_read_as_inspect_prints_them_or_say_why_there_are_none():
    """CoreMLPieces: the one description of the pieces (inspect and the window's panel)."""
    from app.coreml_mil.split import PieceSummary, coreml_pieces
    from tests.builders.tflite_builder import GraphBuilder, options

    graph = read_graph(bundled_models()["efficientnet_lite0"].read_bytes())
    plan = coreml_pieces(graph, predict(graph, CoreMLOptions()))
    assert plan.sentence() == (
        "Core ML on a Mac runs it in 3 pieces: Core ML nodes 0–57 → CPU node 58 (MEAN) → Core ML nodes 59–60"
    )
    assert plan.sentence("", limit=2).endswith("CPU node 58 (MEAN) → … (1 more)")
    assert plan.piece_time(0) == "not reported"
    wide = PieceSummary(1, "cpu", (3, 5), ("A", "B", "C", "D", "E"))
    assert wide.text() == "CPU 2 nodes from 3 to 5 (A, B, C, D, …)" and wide.text(max_ops=None).endswith("D, E)")
    # A model with side effects is not split: one line says why.
    b = GraphBuilder()
    x = b.input((1, 4))
    y = b.tensor((1, 4))
    b.op("ADD", [x, b.const(np.ones((1, 4)))], [y], options("AddOptions"))
    b.op("CALL_ONCE", [], [])
    b.outputs = [y]
    graph = read_graph(b.build())
    plan = coreml_pieces(graph, predict(graph, CoreMLOptions()))
    assert plan.pieces == () and plan.sentence() == (
        "Core ML on a Mac does not split it into pieces: the model has ops with side effects (variables, control flow)"
    )


def test_split_bundled_float_model_is_bit_exact():
    """EfficientNet-Lite0: Core ML piece (58 nodes), the MEAN without keep_dims on the CPU, Core ML (FC + softmax)."""
    data = bundled_models()["efficientnet_lite0"].read_bytes()
    pieces, models, whole, split = _split_and_run(data)
    assert [(p.where, len(p.nodes)) for p in pieces] == [("coreml", 58), ("cpu", 1), ("coreml", 2)]
    assert pieces[1].nodes == (58,)
    assert np.array_equal(whole[0], split[0]) and whole[0].shape == (1, 1000)
    # Each piece carries only its own weights: together about the whole file, not three copies of it.
    assert sum(len(m) for m in models) < 1.05 * len(data)


def test_split_with_a_middle_boundary_is_bit_exact():
    """ABS (refused by the delegate) between two delegated runs: Core ML, CPU, Core ML."""
    data = every_op_model()
    pieces, models, whole, split = _split_and_run(data)
    assert [(p.where, len(p.nodes)) for p in pieces] == [("coreml", 6), ("cpu", 1), ("coreml", 17)]
    graph = read_graph(data)
    assert graph.nodes[pieces[1].nodes[0]].op == "ABS"
    assert pieces[1].inputs == pieces[0].outputs and pieces[2].inputs == pieces[1].outputs
    assert np.array_equal(whole[0], split[0])
    # A piece is a stand-alone model: its own inputs and outputs, nothing else.
    piece_graph = read_graph(models[1])
    assert [n.op for n in piece_graph.nodes] == ["ABS"] and len(piece_graph.inputs) == len(piece_graph.outputs) == 1


def test_split_under_core_ml_2_keeps_reshape_delegated():
    data = reshape_model()
    pieces, _, whole, split = _split_and_run(data, CoreMLOptions(coreml_version=2))
    assert [(p.where, len(p.nodes)) for p in pieces] == [("coreml", 5)]
    assert np.array_equal(whole[0], split[0])
    # Under Core ML 3 both Reshapes are refused, leaving runs of one node: too small, all on the CPU.
    pieces3, _, whole3, split3 = _split_and_run(data, CoreMLOptions(coreml_version=3))
    assert [(p.where, len(p.nodes)) for p in pieces3] == [("cpu", 5)]
    assert np.array_equal(whole3[0], split3[0])


def test_split_the_repositorys_test_models_is_bit_exact():
    """tests/data/models: a detector-like graph (4 outputs; its Core ML piece is nodes 2, 4, 5, 6 and a CPU
    Reshape, node 3, runs after it), a text model (int32 input) and a dynamic-batch model the delegate
    takes nothing of."""
    expected = {
        "detector_like": [("cpu", (0, 1)), ("coreml", (2, 4, 5, 6)), ("cpu", (3,))],
        "text_input": [("cpu", (0, 1, 2, 3, 4)), ("coreml", (5, 6))],
        "dynamic_batch_logits": [("cpu", (0, 1, 2))],
    }
    for name, layout in expected.items():
        pieces, _, whole, split = _split_and_run((TEST_MODELS / f"{name}.tflite").read_bytes())
        assert [(p.where, p.nodes) for p in pieces] == layout, name
        assert len(whole) == len(split) and all(np.array_equal(a, b) for a, b in zip(whole, split, strict=True)), name


@pytest.mark.slow
def test_the_repositorys_test_models_translate_and_match_litert():
    paths = [TEST_MODELS / f"{name}.tflite" for name in ("detector_like", "text_input")]
    for path, result in zip(paths, _verify_each(*([path] for path in paths)), strict=True):
        _check_fp32(result, _delegated_ops(path.read_bytes()))


@pytest.mark.slow
def test_split_mobilenet_v1_is_bit_exact(mobilenet_v1: Path):
    pieces, _, whole, split = _split_and_run(mobilenet_v1.read_bytes())
    assert [(p.where, len(p.nodes)) for p in pieces] == [("coreml", 29), ("cpu", 2)]
    assert np.array_equal(whole[0], split[0])


def test_the_test_models_cover_every_op_the_delegate_takes():
    """A new op in coreml_rules without a translated and checked use here fails this test."""
    ops = {n.op for n in read_graph(every_op_model()).nodes} | {n.op for n in read_graph(reshape_model()).nodes}
    assert set(_CHECKS) <= ops


# ---- translation and numerics (in a child process: see the module's docstring) -----------------

# `python -m app.coreml_mil.verify ARGS` for each ARGS, in one child: a child's start and coremltools' import
# cost ~1 s of CPU each.
_VERIFY_EACH = """
import io, json, sys
from contextlib import redirect_stdout
from app.coreml_mil.verify import main
results = []
for argv in json.loads(sys.argv[1]):
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0, argv
    results.append(json.loads(out.getvalue()))
print(json.dumps(results))
"""


def _verify_each(*runs: Sequence[Path | str]) -> list[dict]:
    if not HAS_COREMLTOOLS:
        pytest.skip("translating needs coremltools (the convert extra)")
    proc = subprocess.run(
        [sys.executable, "-c", _VERIFY_EACH, json.dumps([[str(a) for a in run] for run in runs])],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results: list[dict] = json.loads(proc.stdout.strip().splitlines()[-1])
    return results


def _verify(path: Path, *args: str) -> dict:
    return _verify_each([path, *args])[0]


def _check_fp32(result: dict, coverage_ops: set[str]) -> None:
    assert result["split_bit_exact"]
    translated = set().union(*(p["ops"] for p in result["partitions"]))
    assert translated == coverage_ops
    for p in result["partitions"]:
        assert p["max_abs_diff"] <= 1e-4, p  # every fp32 program within 1e-4 of LiteRT (docs/coreml.md)
        assert p["node_max_rel_diff"] <= 1e-4, p  # node by node, relative to each node's scale


def _delegated_ops(data: bytes, options: CoreMLOptions | None = None) -> set[str]:
    return {n.op for n in predict(read_graph(data), options).nodes if n.delegated}


@pytest.mark.slow
def test_every_op_translates_and_matches_litert(model_files: dict[str, Path]):
    result, fp16 = _verify_each([model_files["every_op"]], [model_files["every_op"], "--precision", "fp16"])
    _check_fp32(result, _delegated_ops(every_op_model()))
    for p in result["partitions"]:
        assert p["max_abs_diff"] <= 1e-6 and p["node_max_abs_diff"] <= 1e-5, p
    assert all("cast" in p["mil_ops"] for p in fp16["partitions"])  # fp16 compute, fp32 at the edges
    assert all(p["max_abs_diff"] <= 5e-3 for p in fp16["partitions"]), fp16["partitions"]


def test_reshape_translates_under_core_ml_2(model_files: dict[str, Path]):
    result = _verify(model_files["reshape"], "--coreml-version", "2")
    _check_fp32(result, _delegated_ops(reshape_model(), CoreMLOptions(coreml_version=2)))
    assert result["partitions"][0]["ops"]["RESHAPE"] == 2


def test_fp16_weights_are_delegated_whole_and_translate(model_files: dict[str, Path]):
    """Full delegation takes the fp16 DEQUANTIZE too (FP16GraphPartitionHelper); its constant feeds the conv."""
    pieces, _, whole, split = _split_and_run(fp16_weights_model())
    assert [(p.where, len(p.nodes)) for p in pieces] == [("coreml", 3)] and np.array_equal(whole[0], split[0])
    result = _verify(model_files["fp16"])
    _check_fp32(result, {"DEQUANTIZE", "CONV_2D", "RELU"})
    assert result["partitions"][0]["mil_ops"]["conv"] == 1


def test_fp16_weights_in_a_partly_delegated_model(model_files: dict[str, Path]):
    """The delegate leaves fp16 DEQUANTIZEs on the CPU when it takes part of a model, but reads their fp16
    constants in its partitions: each Core ML piece carries the DEQUANTIZE it reads; no CPU piece of
    DEQUANTIZEs alone is left."""
    data = fp16_partial_model()
    graph = read_graph(data)
    coverage = predict(graph)
    assert [n.delegated for n in coverage.nodes] == [False, False, True, True, False, True, True]
    pieces, _, whole, split = _split_and_run(data)
    assert [(p.where, p.nodes) for p in pieces] == [("coreml", (0, 2, 3)), ("cpu", (4,)), ("coreml", (1, 5, 6))]
    assert np.array_equal(whole[0], split[0])
    result = _verify(model_files["fp16_partial"])
    _check_fp32(result, {"DEQUANTIZE", "CONV_2D", "RELU"})


@pytest.mark.slow
def test_bundled_float_model_translates_and_matches_litert():
    path = bundled_models()["efficientnet_lite0"]
    result = _verify(path)
    _check_fp32(result, _delegated_ops(path.read_bytes()))
    assert [p["piece"] for p in result["partitions"]] == [0, 2]
    big = result["partitions"][0]
    # one conv per CONV_2D / DEPTHWISE_CONV_2D; NHWC<->NCHW once each way at the boundary
    assert big["mil_ops"]["conv"] == 49 and big["mil_ops"]["transpose"] == 2


@pytest.mark.slow
def test_mobilenet_v1_translates_and_matches_litert(mobilenet_v1: Path):
    result = _verify(mobilenet_v1)
    _check_fp32(result, _delegated_ops(mobilenet_v1.read_bytes()))
    assert result["partitions"][0]["max_abs_reference"] > 0.1  # activations that can show an error


# ---- layout and weights vs coremltools' own TensorFlow converter --------------------------------


@pytest.mark.slow
def test_bundled_float_model_matches_coremltools_tf_export_op_for_op_weight_for_weight():
    """models/efficientnet_lite0.mlpackage (coremltools' TF converter, fp16) vs the translator's fp16
    programs of models/efficientnet_lite0.tflite: same compute ops in order but the MEAN the delegate
    leaves on the CPU, same conv/linear attributes (effective padding included) and fp16 weights."""
    if not HAS_COREMLTOOLS:
        pytest.skip("translating needs coremltools (the convert extra)")
    proc = subprocess.run(
        [sys.executable, "-m", "app.coreml_mil.compare_export"], capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["translator_ops"] == result["export_ops"] and len(result["export_ops"]) == 93
    assert result["only_in_export"] == ["reduce_mean"]
    assert result["layers_compared"] == 50 and result["attribute_mismatches"] == []
    assert result["max_weight_ulps"] <= 1 and result["max_bias_ulps"] <= 1, result  # measured: 0 (identical)


# ---- end to end: the split model with its Core ML pieces evaluated in numpy ---------------------

_END_TO_END = """
import json, sys
from pathlib import Path
import numpy as np
from app.coreml_mil.verify import end_to_end
from app.model.image_files import read_image
from app.model.spec import load_model_spec
from app.model.postprocess import Postprocessor
from app.model.preprocess import Preprocessor
spec = load_model_spec("efficientnet_lite0")
pre, post = Preprocessor(spec), Postprocessor(spec)
photos = sorted(Path("tests/data/photos").glob("*.jpg"))
inputs = [pre(read_image(p)).copy() for p in photos]  # the preprocessor reuses its buffer
result = {}
for precision in ("fp32", "fp16"):
    whole, split = end_to_end(spec.content, inputs, precision)
    pairs = [(post.scores(a).copy(), post.scores(b).copy()) for a, b in zip(whole, split)]
    result[precision] = [[int(np.argmax(a)), int(np.argmax(b)), float(np.max(np.abs(a - b)))] for a, b in pairs]
print(json.dumps(result))
"""


@pytest.mark.slow
def test_bundled_float_model_classifies_the_photos_through_its_programs():
    """The photos through the app's preprocessing, the split model with both Core ML pieces as their
    converted programs evaluated in numpy and the MEAN in LiteRT: LiteRT's top-1 on every photo."""
    if not HAS_COREMLTOOLS:
        pytest.skip("translating needs coremltools (the convert extra)")
    proc = subprocess.run([sys.executable, "-c", _END_TO_END], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    for precision, bound in (("fp32", 1e-5), ("fp16", 1e-2)):
        assert len(result[precision]) == 5
        for whole_top1, split_top1, diff in result[precision]:
            assert whole_top1 == split_top1 and diff < bound, (precision, result[precision])
