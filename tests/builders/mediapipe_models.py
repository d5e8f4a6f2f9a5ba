"""Small MediaPipe-style SSD heads (no post-processing op) whose outputs are known whatever the picture:
[1,S,S,3] -> MEAN -> FULLY_CONNECTED of weights 0 -> RESHAPE, so the regressors [1,N,C] and the score
logits [1,N,1] are the dense layers' biases. Named as MediaPipe's face and palm detectors name them."""

from __future__ import annotations

import numpy as np

from tests.builders.tflite_builder import GraphBuilder, options


def _constant(g: GraphBuilder, mean: int, values: np.ndarray, name: str) -> int:
    flat = g.tensor((1, values.size))
    weights = g.const(np.zeros((values.size, 3), np.float32))
    g.op("FULLY_CONNECTED", [mean, weights, g.const(values.reshape(-1).astype(np.float32))], [flat],
         options("FullyConnectedOptions"))  # fmt: skip
    out = g.tensor((1, *values.shape), name=name)
    g.op("RESHAPE", [flat, g.const([1, *values.shape], "int32")], [out])
    return out


def ssd_head(side: int, regressors: np.ndarray, logits: np.ndarray) -> bytes:
    """Input [1,side,side,3] float32; outputs 'regressors' [1,N,C] = `regressors` (N, C) and
    'classificators' [1,N,1] = `logits` (N,)."""
    g = GraphBuilder()
    image = g.input((1, side, side, 3))
    mean = g.tensor((1, 3))
    g.op("MEAN", [image, g.const([1, 2], "int32")], [mean], options("ReducerOptions", keepDims=False))
    boxes = _constant(g, mean, regressors, "regressors")
    scores = _constant(g, mean, logits.reshape(-1, 1), "classificators")
    return g.build([boxes, scores])


def constant_outputs(side: int, outputs: list[tuple[str, np.ndarray]]) -> bytes:
    """Input [1,side,side,3] float32; one output per (name, values), shaped [1, *values.shape], that is
    `values` whatever the picture: MediaPipe's landmark models' outputs, named and shaped as theirs."""
    g = GraphBuilder()
    image = g.input((1, side, side, 3))
    mean = g.tensor((1, 3))
    g.op("MEAN", [image, g.const([1, 2], "int32")], [mean], options("ReducerOptions", keepDims=False))
    return g.build([_constant(g, mean, values, name) for name, values in outputs])
