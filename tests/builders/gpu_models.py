"""Classifier-shaped models that LiteRT's GPU accelerator takes only in part (built without TensorFlow).

Under SwiftShader's WebGPU the accelerator refuses LOG_SOFTMAX ("Operation is not supported.") and a
SOFTMAX whose beta is not 1 ("Softmax.beta != 1 is not supported.") while it takes a SOFTMAX with
beta 1: one op kind both taken and refused, which only a node-by-node answer can tell apart.
Used by tests/test_gpu_coverage.py and benchmarks/suite/gpu_coverage.py (to compare a real GPU).
"""

from __future__ import annotations

from pathlib import Path

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb

from tests.builders.tflite_builder import GraphBuilder, options

X = (1, 8, 8, 3)


def chain(ops: str) -> bytes:
    """x (1x8x8x3) -> one node per letter -> RESHAPE to 1x192 (a classifier's output).
    A: ADD a constant, M: MUL by a constant, S: SOFTMAX beta 1, s: SOFTMAX beta 2, L: LOG_SOFTMAX."""
    g = GraphBuilder()
    t = g.input(X)
    for letter in ops:
        out = g.tensor(X)
        if letter == "A":
            g.op("ADD", [t, g.const(np.ones((1, 1, 1, 3)))], [out], options("AddOptions"))
        elif letter == "M":
            g.op("MUL", [t, g.const(np.full((1, 1, 1, 3), 0.5))], [out], options("MulOptions"))
        elif letter in "Ss":
            g.op("SOFTMAX", [t], [out], options("SoftmaxOptions", beta=1.0 if letter == "S" else 2.0))
        elif letter == "L":
            g.op("LOG_SOFTMAX", [t], [out], options("LogSoftmaxOptions"))
        else:
            raise ValueError(letter)
        t = out
    flat = g.tensor((1, 192))
    g.op("RESHAPE", [t, g.const([1, 192], "int32")], [flat])
    return g.build([flat])


# 0 ADD, 1 SOFTMAX (beta 1), 2 MUL, 3 SOFTMAX (beta 2), 4 ADD, 5 LOG_SOFTMAX, 6 ADD, 7 RESHAPE.
# Supported partitions [0, 1, 2], [4], [6, 7]; the GPU keeps the largest: nodes 0-2.
MIXED = "ASMsALA"
MIXED_TAKEN = [0, 1, 2]
MIXED_REFUSED = {3: "Softmax.beta != 1 is not supported.", 5: "Operation is not supported."}
# 0 ADD, 1 ADD, 2 LOG_SOFTMAX, 3 ADD, 4 RESHAPE: two supported partitions of 2; the GPU takes one.
TIE = "AALA"


def with_softmax_beta(path: Path, beta: float) -> bytes:
    """A copy of a .tflite model whose SOFTMAX nodes have `beta` (the bundled models end with one)."""
    model = fb.ModelT.InitFromPackedBuf(path.read_bytes(), 0)
    for op in model.subgraphs[0].operators:
        if isinstance(op.builtinOptions, fb.SoftmaxOptionsT):
            op.builtinOptions.beta = beta
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def at_image_side(path: Path, side: int) -> bytes:
    """A copy of a .tflite model of one square image input whose activations are all scaled to an input of
    `side` (a fully convolutional stack before a global pool, as the bundled classifiers are): the same nodes,
    options and weights, each activation's height and width scaled alike. Each stride must divide evenly."""
    model = fb.ModelT.InitFromPackedBuf(path.read_bytes(), 0)
    graph = model.subgraphs[0]
    (image,) = graph.inputs
    full = int(graph.tensors[image].shape[1])
    for tensor in graph.tensors:
        if tensor.shape is None or len(tensor.shape) != 4 or model.buffers[tensor.buffer].data is not None:
            continue  # not an activation: a constant (the weights) or a tensor of another rank
        shape = [int(d) for d in tensor.shape]
        if shape[1] * side % full or shape[2] * side % full:
            raise ValueError(f"{tensor.name!r} of {shape} does not scale from {full} to {side}")
        shape[1], shape[2] = shape[1] * side // full, shape[2] * side // full
        tensor.shape = shape
        if tensor.shapeSignature is not None and len(tensor.shapeSignature):
            tensor.shapeSignature = shape
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
