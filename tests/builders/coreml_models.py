"""Small float .tflite graphs for the Core ML translator, built with tests/builders/tflite_builder.py (no TensorFlow).

`every_op_model`: every op the Core ML delegate takes (app/coverage/coreml_rules.py) at least once,
with an ABS (which the delegate refuses) in the middle, so the model splits into a delegated piece,
a CPU piece and another delegated piece. `reshape_model`: Reshape, which the delegate takes only
under Core ML 2. Weights are seeded random values.
"""

from __future__ import annotations

import numpy as np

from tests.builders.tflite_builder import GraphBuilder, options

SAME, VALID = 0, 1
RELU, RELU_N1_TO_1, RELU6, TANH = 1, 2, 3, 4


def _w(rng: np.random.Generator, *shape: int, scale: float = 0.5) -> np.ndarray:
    return rng.uniform(-scale, scale, shape).astype(np.float32)


def every_op_model(seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input((1, 16, 16, 3))

    def op(name, inputs, shape, opts=None, version=1):
        out = g.tensor(shape)
        g.op(name, inputs, [out], opts, version)
        return out

    conv = op("CONV_2D", [x, g.const(_w(rng, 8, 3, 3, 3)), g.const(_w(rng, 8))], (1, 16, 16, 8),
              options("Conv2DOptions", padding=SAME, strideW=1, strideH=1, fusedActivationFunction=RELU6,
                      dilationWFactor=1, dilationHFactor=1))  # fmt: skip
    dw = op("DEPTHWISE_CONV_2D", [conv, g.const(_w(rng, 1, 3, 3, 8)), g.const(_w(rng, 8))], (1, 8, 8, 8),
            options("DepthwiseConv2DOptions", padding=SAME, strideW=2, strideH=2, depthMultiplier=1,
                    fusedActivationFunction=RELU, dilationWFactor=1, dilationHFactor=1))  # fmt: skip
    added = op("ADD", [dw, g.const(_w(rng, 8))], (1, 8, 8, 8), options("AddOptions"))  # channel broadcast
    relu = op("RELU6", [added], (1, 8, 8, 8))
    mul = op("MUL", [relu, g.const(_w(rng, 1, 1, 1, 8, scale=2.0))], (1, 8, 8, 8),
             options("MulOptions", fusedActivationFunction=RELU_N1_TO_1))  # fmt: skip
    hs = op("HARD_SWISH", [mul], (1, 8, 8, 8))
    ab = op("ABS", [hs], (1, 8, 8, 8))  # refused by the delegate: the middle boundary
    padded = op("PAD", [ab, g.const([[0, 0], [1, 1], [2, 0], [0, 0]], "int32")], (1, 10, 10, 8))
    mp = op("MAX_POOL_2D", [padded], (1, 5, 5, 8),
            options("Pool2DOptions", padding=VALID, strideW=2, strideH=2, filterWidth=2, filterHeight=2))  # fmt: skip
    mirrored = op("MIRROR_PAD", [mp, g.const([[0, 0], [1, 1], [1, 1], [0, 0]], "int32")], (1, 7, 7, 8),
                  options("MirrorPadOptions", mode=0))  # fmt: skip
    ap = op("AVERAGE_POOL_2D", [mirrored], (1, 4, 4, 8),
            options("Pool2DOptions", padding=SAME, strideW=2, strideH=2, filterWidth=3, filterHeight=3))  # fmt: skip
    resized = op("RESIZE_BILINEAR", [ap, g.const([8, 8], "int32")], (1, 8, 8, 8),
                 options("ResizeBilinearOptions", halfPixelCenters=True))  # fmt: skip
    resized2 = op("RESIZE_BILINEAR", [resized, g.const([15, 15], "int32")], (1, 15, 15, 8),
                  options("ResizeBilinearOptions", alignCorners=True))  # fmt: skip
    resized3 = op("RESIZE_BILINEAR", [resized2, g.const([8, 8], "int32")], (1, 8, 8, 8),
                  options("ResizeBilinearOptions"))  # fmt: skip
    tconv = op("TRANSPOSE_CONV", [g.const([1, 16, 16, 4], "int32"), g.const(_w(rng, 4, 3, 3, 8)), resized3],
               (1, 16, 16, 4), options("TransposeConvOptions", padding=SAME, strideW=2, strideH=2))  # fmt: skip
    sig = op("LOGISTIC", [tconv], (1, 16, 16, 4))
    tanh = op("TANH", [tconv], (1, 16, 16, 4))
    cat = op("CONCATENATION", [sig, tanh], (1, 16, 16, 8), options("ConcatenationOptions", axis=3))
    padv2 = op("PADV2", [cat, g.const([[0, 0], [0, 1], [0, 1], [0, 0]], "int32"), g.const([0.5])], (1, 17, 17, 8))
    relu_n1 = op("RELU_N1_TO_1", [padv2], (1, 17, 17, 8))
    plain_relu = op("RELU", [relu_n1], (1, 17, 17, 8))
    mean = op("MEAN", [plain_relu, g.const([1, 2], "int32")], (1, 1, 1, 8), options("ReducerOptions", keepDims=True))
    fc = op("FULLY_CONNECTED", [mean, g.const(_w(rng, 10, 8, scale=4.0)), g.const(_w(rng, 10))], (1, 10),
            options("FullyConnectedOptions", fusedActivationFunction=RELU))  # fmt: skip
    out = op("SOFTMAX", [fc], (1, 10), options("SoftmaxOptions", beta=1.0))
    return g.build([out])


def reshape_model(seed: int = 0) -> bytes:
    """CONV_2D -> RESHAPE (4-D to 4-D, another element order in NCHW) -> ADD -> RESHAPE (to 3-D) -> SOFTMAX."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input((1, 4, 4, 2))
    conv = g.tensor((1, 4, 4, 6))
    conv_options = options("Conv2DOptions", padding=SAME, strideW=1, strideH=1, dilationWFactor=1, dilationHFactor=1)
    g.op("CONV_2D", [x, g.const(_w(rng, 6, 1, 1, 2)), g.const(_w(rng, 6))], [conv], conv_options)
    r1 = g.tensor((1, 8, 2, 6))
    g.op("RESHAPE", [conv, g.const([1, 8, 2, 6], "int32")], [r1], options("ReshapeOptions", newShape=[1, 8, 2, 6]))
    added = g.tensor((1, 8, 2, 6))
    g.op("ADD", [r1, g.const(_w(rng, 6))], [added], options("AddOptions"))
    r2 = g.tensor((1, 16, 6))
    g.op("RESHAPE", [added, g.const([1, 16, 6], "int32")], [r2], options("ReshapeOptions", newShape=[1, 16, 6]))
    out = g.tensor((1, 16, 6))
    g.op("SOFTMAX", [r2], [out], options("SoftmaxOptions", beta=1.0))
    return g.build([out])


def fp16_weights_model(seed: int = 0) -> bytes:
    """Conv weights stored as float16 behind a DEQUANTIZE (TFLite's fp16 post-training quantization):
    every node is taken, so the delegate takes the DEQUANTIZE too (full delegation)."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input((1, 8, 8, 3))
    w16 = g.const(_w(rng, 4, 3, 3, 3).astype(np.float16), "float16")
    w = g.tensor((4, 3, 3, 3))
    g.op("DEQUANTIZE", [w16], [w], version=3)
    conv = g.tensor((1, 4, 4, 4))
    conv_options = options("Conv2DOptions", padding=SAME, strideW=2, strideH=2, dilationWFactor=1, dilationHFactor=1)
    g.op("CONV_2D", [x, w, g.const(_w(rng, 4))], [conv], conv_options)
    out = g.tensor((1, 4, 4, 4))
    g.op("RELU", [conv], [out])
    return g.build([out])


def untranslatable_model() -> bytes:
    """A TRANSPOSE_CONV the delegate takes (constant output shape) whose VALID output size (9) is not
    what its input, kernel and stride give (7): the translator refuses it. A classifier's shape:
    RGB in, (1, 162) out through a Reshape (left on the CPU)."""
    g = GraphBuilder()
    x = g.input((1, 3, 3, 3))
    y = g.tensor((1, 9, 9, 2))
    g.op("TRANSPOSE_CONV", [g.const([1, 9, 9, 2], "int32"), g.const(np.ones((2, 3, 3, 3), np.float32)), x], [y],
         options("TransposeConvOptions", padding=VALID, strideW=2, strideH=2))  # fmt: skip
    relu = g.tensor((1, 9, 9, 2))
    g.op("RELU", [y], [relu])
    out = g.tensor((1, 162))
    g.op("RESHAPE", [relu, g.const([1, 162], "int32")], [out], options("ReshapeOptions", newShape=[1, 162]))
    return g.build([out])


def fp16_partial_model(seed: int = 0) -> bytes:
    """fp16 weights in a partly delegated model (an ABS in the middle): the DEQUANTIZEs stay on the CPU in
    the delegate's selection, while each delegated partition reads their fp16 constants itself."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x = g.input((1, 8, 8, 3))
    weights = []
    for shape in ((4, 3, 3, 3), (5, 3, 3, 4)):
        w16 = g.const(_w(rng, *shape).astype(np.float16), "float16")
        w = g.tensor(shape)
        g.op("DEQUANTIZE", [w16], [w], version=3)
        weights.append(w)
    conv_options = options("Conv2DOptions", padding=SAME, strideW=1, strideH=1, dilationWFactor=1, dilationHFactor=1)
    t = x
    for k, w in enumerate(weights):
        conv = g.tensor((1, 8, 8, 4 + k))
        g.op("CONV_2D", [t, w, g.const(_w(rng, 4 + k))], [conv], conv_options)
        relu = g.tensor((1, 8, 8, 4 + k))
        g.op("RELU", [conv], [relu])
        t = relu
        if k == 0:
            t = g.tensor((1, 8, 8, 4))
            g.op("ABS", [relu], [t])
    return g.build([t])
