"""Small models of the task kinds the app reads that the fixtures do not hold, built with the schema's object API
(tests/builders/tflite_builder.py): each is the structure a task is inferred from, with weights set so that
its answer is known whatever the picture (a landmark regressor whose points are its bias, a class map that
is one class), so predict's reading can be checked exactly."""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from tests.builders.tflite_builder import GraphBuilder, options

SIZE = 16  # input height and width


def _flat(g: GraphBuilder, image: int, channels: int) -> int:
    flat = g.tensor((1, SIZE * SIZE * channels))
    g.op("RESHAPE", [image, g.const([1, SIZE * SIZE * channels], "int32")], [flat])
    return flat


def _dense(g: GraphBuilder, x: int, width: int, units: int, bias: np.ndarray, scale: float = 0.0) -> int:
    """FULLY_CONNECTED of `units` outputs: weights `scale` everywhere (0: the output is the bias)."""
    out = g.tensor((1, units))
    weights = g.const(np.full((units, width), scale, np.float32))
    g.op("FULLY_CONNECTED", [x, weights, g.const(bias.astype(np.float32))], [out], options("FullyConnectedOptions"))
    return out


def class_map(dtype: str, classes: int = 3, winner: int = 2) -> bytes:
    """A segmenter ending in its own argmax: [1,16,16,3] float -> scores [1,16,16,C] -> ARG_MAX ->
    [1,16,16] of `dtype` (int64 as DeepLab's coral export, or int32). Every pixel is `winner`."""
    g = GraphBuilder()
    image = g.input((1, SIZE, SIZE, 3))
    scores = g.tensor((1, SIZE, SIZE, classes))
    filters = g.const(np.zeros((classes, 1, 1, 3), np.float32))
    bias = np.zeros(classes, np.float32)
    bias[winner] = 1.0
    g.op("CONV_2D", [image, filters, g.const(bias)], [scores],
         options("Conv2DOptions", padding=fb.Padding.SAME, strideW=1, strideH=1))  # fmt: skip
    out = g.tensor((1, SIZE, SIZE), dtype)
    kind = fb.TensorType.INT64 if dtype == "int64" else fb.TensorType.INT32
    g.op("ARG_MAX", [scores, g.const([3], "int32")], [out], options("ArgMaxOptions", outputType=kind))
    return g.build([out])


def landmarks(points: np.ndarray) -> bytes:
    """A landmark regressor as MediaPipe's: [1,16,16,3] -> [1,2N] (x, y in input pixels) beside a [1,1]
    presence score. The points are the bias (weights 0): `points` (N, 2) whatever the picture."""
    g = GraphBuilder()
    image = g.input((1, SIZE, SIZE, 3))
    flat = _flat(g, image, 3)
    coords = _dense(g, flat, SIZE * SIZE * 3, points.size, points.reshape(-1))
    presence = _dense(g, flat, SIZE * SIZE * 3, 1, np.array([0.9]))
    return g.build([coords, presence])


def two_inputs(classes: int = 4) -> bytes:
    """An image classifier with a second, non-image input added to its scores: [1,16,16,3] and [1,C] ->
    [1,C] = the second input (image weights 0), so the top class is whatever the second input says."""
    g = GraphBuilder()
    image = g.input((1, SIZE, SIZE, 3))
    extra = g.input((1, classes))
    flat = _flat(g, image, 3)
    dense = _dense(g, flat, SIZE * SIZE * 3, classes, np.zeros(classes))
    out = g.tensor((1, classes))
    g.op("ADD", [dense, extra], [out], options("AddOptions"))
    return g.build([out])


def channels(count: int, classes: int = 3) -> bytes:
    """A classifier of a [1,16,16,count] image (1: grey, 4: RGBA): scores 1, 2, 3 plus a thousandth of the
    mean pixel, so any picture gives class 2 on top."""
    g = GraphBuilder()
    image = g.input((1, SIZE, SIZE, count))
    flat = _flat(g, image, count)
    width = SIZE * SIZE * count
    out = g.tensor((1, classes))
    weights = np.full((classes, width), 1e-3 / width, np.float32)
    bias = np.arange(1, classes + 1, dtype=np.float32)
    g.op("FULLY_CONNECTED", [flat, g.const(weights), g.const(bias)], [out],
         options("FullyConnectedOptions"))  # fmt: skip
    return g.build([out])


def mean_classifier(side: int, softmax: bool = False) -> bytes:
    """A classifier taking side x side x 3 float32: the mean of each channel through a dense layer (and a
    softmax): microseconds an inference at a small side, a large input's preprocessing at a large one."""
    g = GraphBuilder()
    x = g.input((1, side, side, 3))
    mean = g.tensor((1, 3))
    g.op("MEAN", [x, g.const([1, 2], "int32")], [mean], options("ReducerOptions", keepDims=False))
    weights = g.const(np.random.default_rng(0).normal(size=(10, 3)).astype("float32"))
    logits = g.tensor((1, 10))
    g.op("FULLY_CONNECTED", [mean, weights, g.const(np.zeros(10, "float32"))], [logits],
         options("FullyConnectedOptions"))  # fmt: skip
    if not softmax:
        return g.build([logits])
    out = g.tensor((1, 10))
    g.op("SOFTMAX", [logits], [out], options("SoftmaxOptions", beta=1.0))
    return g.build([out])


def rgba_segmenter(side: int = SIZE, out_side: int | None = None, classes: int = 2, softmax: bool = False,
                   toggle: bool = False) -> bytes:  # fmt: skip
    """A segmenter of a [1,side,side,4] image (MediaPipe's hair segmentation's input, the 4th channel its
    previous mask), scores [1,out_side,out_side,classes] (an average pool to out_side first when it is
    smaller): class 1's logit 20 (R + M - 0.5) of the pooled first and 4th channels, the others' 0 (then a
    softmax), so a mask fed back shows in the answer. `toggle`: class 1's logit is 20 (0.5 - M) instead,
    the picture ignored, so a model fed its own last mask flips its whole map from one inference to the next."""
    g = GraphBuilder()
    x = g.input((1, side, side, 4))
    out_side = out_side or side
    if out_side != side:
        stride = side // out_side
        pooled = g.tensor((1, out_side, out_side, 4))
        pool = options("Pool2DOptions", padding=fb.Padding.VALID, strideW=stride, strideH=stride,
                       filterWidth=stride, filterHeight=stride)  # fmt: skip
        g.op("AVERAGE_POOL_2D", [x], [pooled], pool)
        x = pooled
    weights = np.zeros((classes, 1, 1, 4), np.float32)
    bias = np.zeros(classes, np.float32)
    if toggle:
        weights[1, 0, 0, 3], bias[1] = -20.0, 10.0
    else:
        weights[1, 0, 0, 0] = weights[1, 0, 0, 3] = 20.0
        bias[1] = -10.0
    logits = g.tensor((1, out_side, out_side, classes))
    g.op("CONV_2D", [x, g.const(weights), g.const(bias)], [logits],
         options("Conv2DOptions", padding=fb.Padding.VALID, strideW=1, strideH=1))  # fmt: skip
    if not softmax:
        return g.build([logits])
    out = g.tensor((1, out_side, out_side, classes))
    g.op("SOFTMAX", [logits], [out], options("SoftmaxOptions", beta=1.0))
    return g.build([out])
