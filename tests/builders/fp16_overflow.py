"""A float model built to break on fp16 at one known node: CONV_2D (ReLU) -> ADD 12 -> EXP -> CONV_2D -> MEAN,
the nodes TensorFlow's converter makes of that function (tests/builders/tflite_builder.py writes them).
EXP of 12 and more is over 162,000, past fp16's largest value (65,504): in fp32 every value is finite, in
fp16 the EXP node's output is inf, and every node after it carries that on. Nothing before EXP leaves
fp16's range (the ADD's values are about 12 to 16)."""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from tests.builders.tflite_builder import GraphBuilder, options

SIDE = 16


def fp16_overflow() -> bytes:
    rng = np.random.default_rng(0)
    # weights drawn as TensorFlow's HWIO kernels, written as TFLite's OHWI
    w1 = rng.normal(0, 0.2, (3, 3, 3, 8)).astype(np.float32).transpose(3, 0, 1, 2)
    b1 = rng.normal(0, 0.1, (8,)).astype(np.float32)
    w2 = rng.normal(0, 0.1, (3, 3, 8, 4)).astype(np.float32).transpose(3, 0, 1, 2)
    same = {"padding": fb.Padding.SAME, "strideW": 1, "strideH": 1}
    g = GraphBuilder()
    x = g.input((1, SIDE, SIDE, 3))
    conv, shifted, exp, conv2 = (g.tensor((1, SIDE, SIDE, c), name=name)
                                 for c, name in ((8, "Relu"), (8, "add"), (8, "Exp"), (4, "Conv2D_1")))  # fmt: skip
    g.op("CONV_2D", [x, g.const(w1), g.const(b1)], [conv],
         options("Conv2DOptions", fusedActivationFunction=fb.ActivationFunctionType.RELU, **same))  # fmt: skip
    g.op("ADD", [conv, g.const(12.0)], [shifted], options("AddOptions"))
    g.op("EXP", [shifted], [exp])
    g.op("CONV_2D", [exp, g.const(w2), g.const(np.zeros(4))], [conv2], options("Conv2DOptions", **same))
    mean = g.tensor((1, 4), name="Mean")
    g.op("MEAN", [conv2, g.const([1, 2], "int32")], [mean], options("ReducerOptions", keepDims=False))
    return g.build([mean])
