"""Coverage as a whole: TFLite's partitioning, the Core ML delegate's partition filter and log line,
fp16 weights, real models (MobileNet v1 built by TensorFlow, the bundled and third-party ones), and
the partitioner checked against the LiteRT runtime's own XNNPACK partitions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter

from app.coverage import read_coverage
from app.coverage.coreml_rules import CoreMLOptions, predict
from app.coverage.measured import from_ops_details
from app.coverage.partition import largest, partition
from app.model.spec import bundled_models
from app.tflite.graph import read_graph
from tests.builders.tflite_builder import GraphBuilder, options

X = (1, 8, 8, 4)


def chain(ops: list[str]) -> bytes:
    """x -> op0 -> op1 -> ... (unary ops; SOFTMAX with beta 1)."""
    g = GraphBuilder()
    t = g.input(X)
    for op in ops:
        out = g.tensor(X)
        g.op(op, [t], [out], options("SoftmaxOptions", beta=1.0) if op == "SOFTMAX" else None)
        t = out
    return g.build([t])


def branches() -> bytes:
    """Two branches of a supported and an unsupported node each, joined by ADD:
    0 RELU(x)  1 SIGN(0)  2 RELU(x)  3 SIGN(2)  4 ADD(1, 3).
    In execution order the supported nodes are three runs ([0], [2], [4]); TFLite's greedy
    partitioner puts 0 and 2 in one partition, as both are ready at once."""
    g = GraphBuilder()
    x = g.input(X)
    a, s, b, t, out = (g.tensor(X) for _ in range(5))
    g.op("RELU", [x], [a])
    g.op("SIGN", [a], [s])
    g.op("RELU", [x], [b])
    g.op("SIGN", [b], [t])
    g.op("ADD", [s, t], [out], options("AddOptions"))
    return g.build([out])


def test_partitions_are_formed_greedily_not_as_runs_in_execution_order():
    graph = read_graph(branches())
    supported = [n.op != "SIGN" for n in graph.nodes]
    assert partition(graph, supported) == [[0, 2], [4]]


def runtime_partitions(data: bytes) -> list[list[int]]:
    """The node sets of the runtime's own XNNPACK partitions."""
    interpreter = Interpreter(model_content=data, num_threads=1)
    interpreter.allocate_tensors()
    coverage = from_ops_details(interpreter._get_ops_details())
    parts: dict[int, list[int]] = {}
    for n in coverage.nodes:
        if n.delegated:
            parts.setdefault(n.partition, []).append(n.index)
    return sorted(parts.values())


def model_files(coral: Path) -> list[Path]:
    """The bundled models and the third-party ones (the `coral` fixture, tests/conftest.py)."""
    return sorted(bundled_models().values()) + sorted(coral.glob("*.tflite"))


@pytest.mark.parametrize("make", [branches, lambda: chain(["RELU", "SIGN", "RELU", "RELU"])], ids=["branches", "chain"])
def test_the_partitioner_reproduces_the_runtimes_xnnpack_partitions(make):
    """XNNPACK goes through the same TFLite partitioner; fed the nodes XNNPACK took, ours must give
    the runtime's partitions exactly (SIGN is one op XNNPACK leaves to the built-in kernels)."""
    data = make()
    expected = runtime_partitions(data)
    graph = read_graph(data)
    taken = {i for p in expected for i in p}
    assert sorted(partition(graph, [n.index in taken for n in graph.nodes])) == expected
    assert len(expected) == 2


def test_the_partitioner_reproduces_the_runtime_on_every_bundled_and_fixture_model(coral: Path):
    for path in model_files(coral):
        data = path.read_bytes()
        expected = runtime_partitions(data)
        graph = read_graph(data)
        taken = {i for p in expected for i in p}
        assert sorted(partition(graph, [n.index in taken for n in graph.nodes])) == expected, path.name


def test_the_delegate_keeps_the_largest_partitions_of_at_least_min_nodes():
    parts = [[0], [2, 3, 4], [6, 7]]
    assert largest(parts, 0, 2) == [[2, 3, 4], [6, 7]]
    assert largest(parts, 1, 2) == [[2, 3, 4]]
    assert largest(parts, 0, 1) == [[2, 3, 4], [6, 7], [0]]
    assert largest(parts, 0, 4) == []


def test_the_log_line_counts_partitions_before_the_size_filter():
    # RELU, SUB (refused), RELU, RELU, SUB, SOFTMAX: partitions [0], [2, 3], [5]; only [2, 3] is kept.
    coverage = predict(read_graph(chain(["RELU", "SQUARE", "RELU", "RELU", "SQUARE", "SOFTMAX"])))
    assert coverage.log == "CoreML delegate: 2 nodes delegated out of 6 nodes, with 3 partitions."
    assert (coverage.partitions, coverage.delegated_partitions, coverage.nodes_delegated) == (3, 1, 2)
    by_index = {n.index: n for n in coverage.nodes}
    assert by_index[0].reason.startswith("supported, but its partition has 1 node")
    assert by_index[1].reason == "SQUARE is not among the ops the delegate takes"
    assert by_index[2].partition == 0 and by_index[3].partition == 0


def test_options_change_the_filter_as_the_delegate_does():
    graph = read_graph(chain(["RELU", "SQUARE", "RELU", "RELU", "SQUARE", "RELU", "RELU", "RELU"]))
    assert predict(graph).nodes_delegated == 5  # [2, 3] and [5, 6, 7]; the lone [0] is dropped
    limited = predict(graph, CoreMLOptions(max_delegated_partitions=1))
    assert limited.nodes_delegated == 3 and limited.delegated_partitions == 1
    assert "only the 1 largest partitions are delegated" in limited.nodes[2].reason
    assert predict(graph, CoreMLOptions(min_nodes_per_partition=1)).nodes_delegated == 6


def fp16_conv(tail: str | None) -> bytes:
    """CONV_2D whose weights are fp16 constants behind a DEQUANTIZE (the converter's fp16 models),
    then RELU, then optionally a `tail` op on the result."""
    g = GraphBuilder()
    x = g.input(X)
    w16 = g.const(np.zeros((4, 1, 1, 4)), "float16")
    w = g.tensor((4, 1, 1, 4))
    g.op("DEQUANTIZE", [w16], [w])
    y = g.tensor(X)
    g.op("CONV_2D", [x, w, g.const(np.zeros(4))], [y], options("Conv2DOptions", strideW=1, strideH=1))
    z = g.tensor(X)
    g.op("RELU", [y], [z])
    if tail:
        out = g.tensor(X)
        g.op(tail, [z], [out])
        z = out
    return g.build([z])


def test_a_fully_supported_fp16_model_is_delegated_whole_dequantize_included():
    """FP16GraphPartitionHelper's "full delegation": every node, the fp16 DEQUANTIZE too."""
    coverage = predict(read_graph(fp16_conv(tail=None)))
    assert coverage.log == "CoreML delegate: 3 nodes delegated out of 3 nodes, with 1 partitions."
    assert all(n.delegated and n.partition == 0 for n in coverage.nodes)


def test_in_a_partly_delegated_fp16_model_the_dequantize_stays_on_the_cpu():
    """Partial delegation: the chosen partitions only. (TensorFlow's 2020 helper moved the DEQUANTIZE into
    the first partition when all its readers were there, as here; the current one keeps it on the CPU.)"""
    coverage = predict(read_graph(fp16_conv(tail="SQUARE")))
    assert coverage.log == "CoreML delegate: 2 nodes delegated out of 4 nodes, with 1 partitions."
    dequantize = coverage.nodes[0]
    assert dequantize.delegated is False and "fp16-weights DEQUANTIZE" in dequantize.reason
    assert [n.delegated for n in coverage.nodes[1:]] == [True, True, False]


def test_a_fully_supported_model_is_delegated_whatever_the_partition_size_limits():
    coverage = predict(read_graph(chain(["RELU"])))  # one node, under min_nodes_per_partition 2
    assert coverage.log == "CoreML delegate: 1 nodes delegated out of 1 nodes, with 1 partitions."
    assert predict(read_graph(chain(["RELU", "SQUARE"]))).nodes_delegated == 0  # partial: the limit applies


def test_a_first_input_read_from_fp16_weights_is_refused():
    """Readers of an fp16 DEQUANTIZE are checked as if they read the float16 constant itself, so one
    whose first input is that constant fails the float32-input check."""
    g = GraphBuilder()
    x = g.input((4,))
    w16 = g.const(np.ones(4), "float16")
    w = g.tensor((4,))
    g.op("DEQUANTIZE", [w16], [w])
    out = g.tensor((4,))
    g.op("ADD", [w, x], [out], options("AddOptions"))
    coverage = predict(read_graph(g.build([out])))
    assert "its input is float16, not float32" in coverage.nodes[1].reason


# ---- real models -------------------------------------------------------------------------------

@pytest.mark.slow
def test_mobilenet_v1_gives_the_seeds_log_line(mobilenet_v1: Path):
    graph = read_graph(mobilenet_v1.read_bytes())
    assert len(graph.nodes) == 31 and [n.op for n in graph.nodes[-3:]] == ["CONV_2D", "RESHAPE", "SOFTMAX"]
    coverage = predict(graph)
    assert coverage.log == "CoreML delegate: 29 nodes delegated out of 31 nodes, with 2 partitions."
    left = {n.op: n.reason for n in coverage.left_on_cpu}
    assert set(left) == {"RESHAPE", "SOFTMAX"}
    assert "Core ML 3" in left["RESHAPE"]
    assert left["SOFTMAX"].startswith("supported, but its partition has 1 node")
    # Under Core ML 2 the Reshape is refused for its target rank (2), with the same outcome.
    v2 = predict(graph, CoreMLOptions(coreml_version=2))
    assert v2.log == coverage.log
    assert "2 dimensions" in {n.op: n.reason for n in v2.left_on_cpu}["RESHAPE"]


def test_integer_quantized_models_get_nothing_delegated_with_the_reason(coral: Path):
    paths = [bundled_models()["efficientnet_lite0_int8"], *sorted(coral.glob("*.tflite"))]
    for path in paths:
        coverage = predict(read_graph(path.read_bytes()))
        assert coverage.nodes_delegated == 0 and coverage.partitions == 0, path.name
        assert coverage.log.startswith("CoreML delegate: 0 nodes delegated out of"), path.name
        assert all("integer-quantized" in n.reason for n in coverage.nodes), path.name


def test_bundled_float_model_node_by_node():
    """EfficientNet-Lite0 as converted here: its Mean drops keep_dims, which the delegate refuses,
    leaving FULLY_CONNECTED + SOFTMAX as a second partition."""
    coverage = predict(read_graph(bundled_models()["efficientnet_lite0"].read_bytes()))
    assert coverage.log == "CoreML delegate: 60 nodes delegated out of 61 nodes, with 2 partitions."
    (left,) = coverage.left_on_cpu
    assert (left.index, left.op) == (58, "MEAN") and left.reason.startswith("keep_dims is false")
    assert [n.partition for n in coverage.nodes[57:]] == [0, None, 1, 1]


def test_coverage_read_back_from_a_sidecar_refuses_malformed_data():
    coverage = predict(read_graph(chain(["RELU", "RELU"])))
    assert read_coverage(coverage.to_dict()) == coverage
    for bad in (None, [], {"delegate": "coreml"}, {**coverage.to_dict(), "nodes_total": "31"},
                {**coverage.to_dict(), "nodes": [{"index": "0"}]}, {**coverage.to_dict(), "nodes": "xx"}):  # fmt: skip
        assert read_coverage(bad) is None
