"""The Core ML delegate's node selection (app/coverage/coreml_rules.py), one rule at a time.

Every rule has a pair of tiny graphs built with the TFLite schema's flatbuffer API that
differ only in what the rule looks at: one the delegate takes, one it refuses with the
rule's reason. Dropping or loosening a rule makes the refused one pass, so its test fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from app.coverage.coreml_rules import CoreMLOptions, node_refusal
from app.tflite.graph import read_graph
from tests.builders.tflite_builder import GraphBuilder, options

X = (1, 8, 8, 4)


def refusal(g: GraphBuilder, out: int, version: int = 3) -> str | None:
    """The refusal reason of the graph's last node."""
    graph = read_graph(g.build([out]))
    return node_refusal(graph, graph.nodes[-1], CoreMLOptions(coreml_version=version))


def single(op: str, inputs: list, shape=X, opts=None, version: int = 1, dtype: str = "float32") -> GraphBuilder:
    """A graph of one `op` node; `inputs` are tensor indices or callables building them."""
    g = GraphBuilder()
    ids = [i(g) if callable(i) else i for i in inputs]
    out = g.tensor(shape, dtype)
    g.op(op, ids, [out], opts, version)
    g.outputs = [out]
    return g


def fin(shape=X, dtype="float32"):
    return lambda g: g.input(shape, dtype, quant=(0.1, 0) if dtype in ("int8", "uint8") else None)


def const(values, dtype="float32"):
    return lambda g: g.const(values, dtype)


def weights(shape):
    return const(np.zeros(shape, np.float32))


def check(g: GraphBuilder, version: int = 3) -> str | None:
    return refusal(g, g.outputs[0], version)


# ---- coreml_delegate.mm: IsNodeSupportedByDelegate --------------------------------------------


def test_an_op_outside_the_delegates_list_is_refused_with_that_reason():
    assert check(single("RELU", [fin()])) is None
    assert check(single("SUB", [fin(), fin()], opts=options("SubOptions"))) == (
        "SUB is not among the ops the delegate takes"
    )


def test_most_ops_are_taken_only_at_version_1():
    assert check(single("RELU", [fin()], version=1)) is None
    assert "RELU version 2 is above the 1 the delegate takes" in check(single("RELU", [fin()], version=2))


def test_depthwise_conv_up_to_version_2_and_fully_connected_up_to_6():
    def dw(version):
        return single("DEPTHWISE_CONV_2D", [fin(), weights((1, 3, 3, 4)), const(np.zeros(4))],
                      opts=options("DepthwiseConv2DOptions", depthMultiplier=1), version=version)  # fmt: skip

    assert check(dw(2)) is None
    assert "version 3 is above the 2" in check(dw(3))

    def fc(version):
        return single("FULLY_CONNECTED", [fin((1, 16)), weights((10, 16)), const(np.zeros(10))], shape=(1, 10),
                      opts=options("FullyConnectedOptions"), version=version)  # fmt: skip

    assert check(fc(6)) is None
    assert "version 7 is above the 6" in check(fc(7))


def test_a_first_input_that_is_not_float32_is_refused_as_integer_quantized():
    assert check(single("RELU", [fin()])) is None
    reason = check(single("RELU", [fin(dtype="int8")], dtype="int8"))
    assert reason == "its input is int8, not float32; the delegate does not take integer-quantized models"


def test_transpose_conv_checks_the_type_of_its_third_input():
    # (output_shape int32, filters, input): checking input 0 would refuse every TransposeConv.
    g = single("TRANSPOSE_CONV", [const([1, 16, 16, 4], "int32"), weights((4, 3, 3, 4)), fin()], shape=(1, 16, 16, 4),
               opts=options("TransposeConvOptions", strideH=2, strideW=2))  # fmt: skip
    assert check(g) is None
    g = single("TRANSPOSE_CONV", [lambda g: g.input((4,), "int32"), weights((4, 3, 3, 4)), fin()],
               shape=(1, 16, 16, 4), opts=options("TransposeConvOptions", strideH=2, strideW=2))  # fmt: skip
    assert check(g) == "its output shape is not constant; the delegate needs it constant"


def test_softmax_only_with_beta_1():
    assert check(single("SOFTMAX", [fin()], opts=options("SoftmaxOptions", beta=1.0))) is None
    assert check(single("SOFTMAX", [fin()], opts=options("SoftmaxOptions", beta=2.0))) == (
        "its beta is 2; the delegate takes Softmax with beta 1 only"
    )


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
def test_pools_only_without_a_fused_activation(op):
    def pool(act):
        return single(op, [fin()], shape=(1, 4, 4, 4), opts=options("Pool2DOptions", strideW=2, strideH=2,
                      filterWidth=2, filterHeight=2, fusedActivationFunction=act))  # fmt: skip

    assert check(pool(0)) is None
    assert check(pool(1)) == "it has a fused RELU activation; pools must have none"


@pytest.mark.parametrize("op", ["HARD_SWISH", "LOGISTIC", "RELU", "RELU_N1_TO_1", "RELU6", "TANH"])
def test_activations_are_taken_as_they_are(op):
    assert check(single(op, [fin()])) is None


# ---- builders/util.cc: IsBinaryOpSupported (ADD, MUL) -------------------------------------------


@pytest.mark.parametrize("op,kind", [("ADD", "AddOptions"), ("MUL", "MulOptions")])
@pytest.mark.parametrize(
    "a,b,fragment",
    [
        (X, X, None),
        (X, (1, 1, 1, 4), None),  # per-channel: (H, W) of one side is 1x1
        (X, (4,), None),  # a vector broadcasts over channels
        (X, (1, 8, 8, 1), None),  # one channel broadcasts
        (X, (1, 4, 4, 4), "height and width differ (8x8 vs 4x4) and neither is 1x1"),
        (X, (1, 8, 8, 2), "channels differ (4 vs 2) and neither is 1"),
        ((2, 8, 8, 4), X, "batch sizes differ (2 vs 1)"),
        ((1, 1, 8, 8, 4), (1, 1, 8, 8, 4), "more than 4 dimensions"),
    ],
)
def test_binary_ops_broadcast_only_the_way_the_delegate_does(op, kind, a, b, fragment):
    shape = tuple(max(x, y) for x, y in zip((1,) * (len(a) - len(b)) + b, a, strict=True)) if len(a) >= len(b) else b
    g = single(op, [fin(a), fin(b)], shape=shape, opts=options(kind))
    reason = check(g)
    assert reason is None if fragment is None else fragment in reason


def test_binary_ops_take_a_one_element_constant_of_another_batch():
    g = single("MUL", [fin((2, 8, 8, 4)), const(np.ones((1, 1, 1, 1)))], shape=(2, 8, 8, 4), opts=options("MulOptions"))
    assert check(g) is None


def test_binary_ops_take_float16_only_as_a_constant():
    g = single("ADD", [fin(), const(np.ones(4), "float16")], opts=options("AddOptions"))
    assert check(g) is None
    g = single("ADD", [fin(), fin((4,), "float16")], opts=options("AddOptions"))
    assert "is float16; the delegate takes float32 inputs, or float16 constants" in check(g)


# ---- builders/concatenation_op_builder.cc ------------------------------------------------------


@pytest.mark.parametrize(
    "shape,axis,act,fragment",
    [
        (X, 3, 0, None),
        (X, -1, 0, None),
        ((1, 8, 4), 2, 0, None),
        (X, 1, 0, "concatenates along channels only"),
        ((1, 8, 4), 1, 0, "concatenates along channels only"),
        ((8, 4), 1, 0, "concatenates along channels only"),
        (X, 3, 1, "fused activation"),
    ],
)
def test_concatenation_only_along_channels(shape, axis, act, fragment):
    out = list(shape)
    out[axis] *= 2
    g = single("CONCATENATION", [fin(shape), fin(shape)], shape=tuple(out),
               opts=options("ConcatenationOptions", axis=axis, fusedActivationFunction=act))  # fmt: skip
    reason = check(g)
    assert reason is None if fragment is None else fragment in reason


# ---- builders/convolution_op_builder.cc --------------------------------------------------------


def conv(w=None, bias=None, act=0, n_inputs=3):
    inputs = [fin(), w or weights((8, 3, 3, 4)), bias or const(np.zeros(8))][:n_inputs]
    return single("CONV_2D", inputs, shape=(1, 8, 8, 8), opts=options("Conv2DOptions", strideW=1, strideH=1,
                  fusedActivationFunction=act))  # fmt: skip


def test_convolution_needs_constant_weights_and_bias():
    assert check(conv()) is None
    assert check(conv(act=3)) is None  # RELU6 fused: taken
    assert "weights are not constant" in check(conv(w=fin((8, 3, 3, 4))))
    assert "bias is not constant" in check(conv(bias=fin((8,))))
    assert "weights have rank 2" in check(conv(w=weights((8, 36))))
    assert "SIGN_BIT" in check(conv(act=5))


def test_convolution_without_a_bias_input_is_counted_as_not_delegated_and_says_why():
    assert "reads the bias anyway (undefined behaviour)" in check(conv(n_inputs=2))


# ---- builders/fully_connected_op_builder.cc ------------------------------------------------------


def fc(x=(1, 16), w=None, bias=None, fmt=0, act=0, n_inputs=3):
    inputs = [fin(x), w or weights((10, 16)), bias or const(np.zeros(10))][:n_inputs]
    return single("FULLY_CONNECTED", inputs, shape=(x[0], 10), opts=options("FullyConnectedOptions",
                  weightsFormat=fmt, fusedActivationFunction=act))  # fmt: skip


def test_fully_connected_rules():
    assert check(fc()) is None
    assert check(fc(n_inputs=2)) is None
    assert "not a single vector" in check(fc(x=(2, 16)))
    assert "weights are not constant float" in check(fc(w=fin((10, 16))))
    assert "bias is not constant float" in check(fc(bias=fin((10,))))
    assert "shuffled int8 format" in check(fc(fmt=1))
    assert "SIGN_BIT" in check(fc(act=5))


def test_fully_connected_with_an_omitted_bias_is_taken_without_its_activation_check():
    # GetInputSafe fails on the omitted bias; the status it returns converts to `true`.
    g = GraphBuilder()
    x, w = g.input((1, 16)), g.const(np.zeros((10, 16), np.float32))
    out = g.tensor((1, 10))
    g.op("FULLY_CONNECTED", [x, w, -1], [out], options("FullyConnectedOptions", fusedActivationFunction=5))
    assert refusal(g, out) is None


# ---- builders/pooling_layer_builder.cc: Mean -----------------------------------------------------


@pytest.mark.parametrize(
    "shape,axes,keep,fragment",
    [
        (X, [1, 2], True, None),
        (X, [-3, -2], True, None),
        (X, [1, 2], False, "keep_dims is false"),
        (X, [3], True, "averages over axis 3"),
        ((1, 8, 4), [1], True, "Mean of 4-D tensors only"),
    ],
)
def test_mean_only_over_height_and_width_with_keep_dims(shape, axes, keep, fragment):
    g = single("MEAN", [fin(shape), const(axes, "int32")], shape=(1, 1, 1, 4), opts=options("ReducerOptions",
               keepDims=keep))  # fmt: skip
    reason = check(g)
    assert reason is None if fragment is None else fragment in reason


def test_mean_with_axes_computed_at_run_time_is_counted_as_not_delegated():
    g = single("MEAN", [fin(), fin((2,), "int32")], shape=(1, 1, 1, 4), opts=options("ReducerOptions", keepDims=True))
    assert "axes are not constant" in check(g)


# ---- builders/pad_op_builder.cc ------------------------------------------------------------------


@pytest.mark.parametrize("op", ["PAD", "PADV2"])
@pytest.mark.parametrize(
    "paddings,fragment",
    [
        ([[0, 0], [1, 1], [1, 1], [0, 0]], None),
        ([[1, 0], [1, 1], [1, 1], [0, 0]], "pads the batch dimension"),
        ([[0, 0], [1, 1], [1, 1], [0, 1]], "pads the channel dimension"),
        ([[1, 1], [1, 1], [0, 0]], "its input is not 4-D"),
    ],
)
def test_pad_only_spatially_with_constant_paddings(op, paddings, fragment):
    shape = X if len(paddings) == 4 else (8, 8, 4)
    inputs = [fin(shape), const(paddings, "int32")] + ([const([0.0])] if op == "PADV2" else [])
    reason = check(single(op, inputs, shape=shape))
    assert reason is None if fragment is None else fragment in reason


def test_pad_needs_constant_paddings():
    assert "paddings are not constant" in check(single("PAD", [fin(), fin((4, 2), "int32")]))


def test_mirror_pad_only_in_reflect_mode():
    def mirror(mode):
        return single("MIRROR_PAD", [fin(), const([[0, 0], [1, 1], [1, 1], [0, 0]], "int32")],
                      opts=options("MirrorPadOptions", mode=mode))  # fmt: skip

    assert check(mirror(0)) is None
    assert "REFLECT mirror padding only" in check(mirror(1))
    # Without MirrorPadOptions the runtime's mode is "unknown", not REFLECT (flatbuffer_conversions.cc).
    bare = single("MIRROR_PAD", [fin(), const([[0, 0], [1, 1], [1, 1], [0, 0]], "int32")])
    assert "no mirror-padding mode" in check(bare)


def test_pad_reads_int64_paddings_as_int32_words_as_the_delegate_does():
    # [[0,0],[1,1],[1,1],[0,0]] as int64 is, in int32 words, 0,0, 0,0, 1,0, 1,0, ...: the delegate's
    # GetTensorData<int32_t> finds words 6 and 7 (which it takes for the channel padding) = 1, 0.
    g = single("PAD", [fin(), const([[0, 0], [1, 1], [1, 1], [0, 0]], "int64")])
    assert "pads the channel dimension" in check(g)
    g = single("PAD", [fin(), const([[0, 0], [1, 1], [1, 1], [0, 0]], "int32")])
    assert check(g) is None


# ---- builders/reshape_op_builder.cc --------------------------------------------------------------


def reshape(target, shape_tensor=True, constant=True):
    if not shape_tensor:
        return single("RESHAPE", [fin()], shape=tuple(target), opts=options("ReshapeOptions", newShape=list(target)))
    shape = const(target, "int32") if constant else fin((len(target),), "int32")
    return single("RESHAPE", [fin(), shape], shape=tuple(target))


def test_reshape_is_refused_under_core_ml_3_the_default():
    assert "takes no Reshape when it builds Core ML 3 models" in check(reshape([1, 16, 16, 1]))


def test_reshape_refused_under_core_ml_3_points_to_version_2_only_where_its_rule_takes_it():
    """The reason for a refused RESHAPE points to coreml_version 2 only where version 2's own checks
    (the same IsReshapeOpSupported) take the node: a 2-D target shape is refused there too."""
    would = "the delegate takes no Reshape when it builds Core ML 3 models (its default); coreml_version 2 would"
    assert check(reshape([1, 16, 16, 1])) == would
    assert check(reshape([1, 16, 16], shape_tensor=False)) == would
    for flat in (reshape([1, 256]), reshape([1, 256], shape_tensor=False)):
        assert check(flat) == (
            "the delegate takes no Reshape when it builds Core ML 3 models (its default); coreml_version 2 would "
            "not either: its target shape has 2 dimensions; Core ML 2 reshape takes 3 or 4"
        )
        assert check(flat, version=2) is not None  # the rule the reason names: version 2 refuses it too
    computed = check(reshape([1, 16, 16, 1], constant=False))
    assert computed.endswith("would not either: its target shape is computed at run time; the delegate needs a "
                             "constant shape")  # fmt: skip


def test_reshape_under_core_ml_2_needs_a_constant_3_or_4_element_shape():
    assert check(reshape([1, 16, 16, 1]), version=2) is None
    assert check(reshape([1, 16, 16]), version=2) is None
    assert check(reshape([1, 256], shape_tensor=False), version=2) == (
        "its target shape has 2 dimensions; Core ML 2 reshape takes 3 or 4"
    )
    assert check(reshape([1, 16, 16, 1], shape_tensor=False), version=2) is None
    assert "2 dimensions" in check(reshape([1, 256]), version=2)
    assert "computed at run time" in check(reshape([1, 16, 16, 1], constant=False), version=2)


# ---- builders/resize_bilinear_op_builder.cc ------------------------------------------------------


def test_resize_bilinear_needs_a_constant_size():
    g = single("RESIZE_BILINEAR", [fin(), const([16, 16], "int32")], shape=(1, 16, 16, 4),
               opts=options("ResizeBilinearOptions"))  # fmt: skip
    assert check(g) is None
    g = single("RESIZE_BILINEAR", [fin(), fin((2,), "int32")], shape=(1, 16, 16, 4),
               opts=options("ResizeBilinearOptions"))  # fmt: skip
    assert check(g) == "its output size is not constant; the delegate needs it constant"
