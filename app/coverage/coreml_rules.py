"""The TFLite Core ML delegate's node selection, rule by rule, in pure Python (runs on every OS).

Sources, all under tensorflow/lite/ in tensorflow/tensorflow:
- delegates/coreml/coreml_delegate.mm: IsNodeSupportedByDelegate (op list, versions, float input),
  the options' defaults (CoreMlDelegate's constructor) and DelegatePrepare (partitioning, log line);
- delegates/coreml/builders/*.cc: the per-op Is...Supported checks (named at each rule below);
- delegates/utils.cc: GraphPartitionHelper and FP16GraphPartitionHelper (largest partitions, full
  delegation, fp16 DEQUANTIZE handling), as in current TensorFlow and LiteRT (a 2020 version folded
  fp16 DEQUANTIZEs into the first partition instead); graph_info.cc: the partitioning itself
  (app/coverage/partition.py).

Each refusal is a sentence a user can act on. Where the delegate's own check would read a tensor
that is not there (its behaviour is undefined), the node is counted as not delegated and the
reason says so rather than pretend to know.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from app.coverage import Coverage, NodeCoverage
from app.coverage.partition import has_side_effects, largest, partition
from app.tflite.graph import OPTIONAL_TENSOR, Graph, GraphNode, GraphTensor

DEFAULT_COREML_VERSION = 3  # coreml_version 0 (the default) becomes 3 on iOS 13+ / macOS 10.15+
MIN_NODES_PER_PARTITION = 2  # kMinNodesPerCoreMlDelegate
_SIGN_BIT = 5  # ActivationFunctionType.SIGN_BIT (kTfLiteActSignBit)
_NONE = 0  # ActivationFunctionType.NONE
_MAX_KERNEL_SIZE = 16384  # convolution_op_builder.cc: max_kernel_size
_REFLECT = 0  # MirrorPadMode.REFLECT
_ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


@dataclass(frozen=True)
class CoreMLOptions:
    """TfLiteCoreMlDelegateOptions, after the delegate's constructor has replaced the zero defaults."""

    coreml_version: int = DEFAULT_COREML_VERSION
    max_delegated_partitions: int = 0  # 0: no limit (the constructor sets INT_MAX)
    min_nodes_per_partition: int = MIN_NODES_PER_PARTITION

    def __post_init__(self) -> None:
        if self.coreml_version not in (2, 3):
            raise ValueError("coreml_version must be 2 or 3")


@dataclass
class _Fp16State:
    """FP16GraphPartitionHelper's bookkeeping (delegates/utils.cc), filled in execution order."""

    dequant_source: dict[int, int] = field(default_factory=dict)  # DEQUANTIZE output -> its fp16 constant input
    dequant_node: dict[int, int] = field(default_factory=dict)  # DEQUANTIZE output -> that node


_FP16_DEQUANTIZE = (
    "an fp16-weights DEQUANTIZE: never taken on its own; delegated only when the whole model is, and kept on "
    "the CPU when the model is partly delegated"
)


class _View:
    """A node's inputs as the delegate's checks see them: fp16 DEQUANTIZE outputs replaced by their
    fp16 constants (FP16GraphPartitionHelper::RemapFp16InputTensors)."""

    def __init__(self, graph: Graph, node: GraphNode, remap: dict[int, int]) -> None:
        self.graph, self.node = graph, node
        self.inputs = tuple(remap.get(t, t) for t in node.inputs)

    def input(self, i: int) -> GraphTensor | None:
        if i >= len(self.inputs) or self.inputs[i] == OPTIONAL_TENSOR:
            return None
        return self.graph.tensors[self.inputs[i]]


def _rank(t: GraphTensor) -> int:
    return len(t.shape)


def _elements(t: GraphTensor) -> int:
    return int(np.prod(t.shape)) if t.shape else 1


def _activation(options: object) -> int:
    return int(getattr(options, "fusedActivationFunction", _NONE) or _NONE)


def _four_d(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    padded = (1,) * (4 - len(shape)) + tuple(shape)
    return padded[0], padded[1], padded[2], padded[3]


# ---- per-op checks: each returns None when the node is taken, else the reason ---------------------


def _binary(v: _View) -> str | None:
    # builders/util.cc: IsBinaryOpSupported -> IsBinaryOpSupportedType, IsBroadcastable
    a, b = v.input(0), v.input(1)
    if a is None or b is None:
        return "an input is missing and the delegate reads it anyway (undefined behaviour); counted as not delegated"
    for t in (a, b):
        if not (t.dtype == "float32" or (t.dtype == "float16" and t.constant)):
            return f"input '{t.name}' is {t.dtype}; the delegate takes float32 inputs, or float16 constants"
    if _rank(a) > 4 or _rank(b) > 4:
        return "an input has more than 4 dimensions; the delegate broadcasts 4-D tensors only"
    (b0, h0, w0, c0), (b1, h1, w1, c1) = _four_d(a.shape), _four_d(b.shape)
    if b0 != b1 and not ((a.constant and _elements(a) == 1) or (b.constant and _elements(b) == 1)):
        return f"batch sizes differ ({b0} vs {b1}) and neither input is a one-element constant"
    if (h0, w0) != (h1, w1) and not ((h0 == 1 and w0 == 1) or (h1 == 1 and w1 == 1)):
        return f"height and width differ ({h0}x{w0} vs {h1}x{w1}) and neither is 1x1; the delegate cannot broadcast it"
    if c0 != c1 and c0 != 1 and c1 != 1:
        return f"channels differ ({c0} vs {c1}) and neither is 1; the delegate cannot broadcast that"
    return None


def _pool(v: _View) -> str | None:
    # coreml_delegate.mm: AVERAGE_POOL_2D / MAX_POOL_2D need params->activation == kTfLiteActNone
    act = _activation(v.node.options)
    return None if act == _NONE else f"it has a fused {_ACTIVATIONS.get(act, act)} activation; pools must have none"


def _concatenation(v: _View) -> str | None:
    # builders/concatenation_op_builder.cc: IsConcatenationOpSupported
    first = v.input(0)
    axis = int(getattr(v.node.options, "axis", 0))
    if _activation(v.node.options) != _NONE:
        return "it has a fused activation; concatenation must have none"
    if len(v.inputs) < 2:
        return "it has fewer than 2 inputs"
    rank = _rank(first) if first is not None else 0
    if rank == 3 and axis in (2, -1):
        return None
    if rank == 4 and axis in (3, -1):
        return None
    return (
        f"it joins {rank}-D tensors along axis {axis}; the delegate concatenates along channels only "
        "(the last axis of a 3-D or 4-D tensor)"
    )


def _convolution(v: _View) -> str | None:
    # builders/convolution_op_builder.cc: IsConvolutionOpSupported (also depthwise and transpose conv)
    transpose = v.node.op == "TRANSPOSE_CONV"
    if not transpose and _activation(v.node.options) == _SIGN_BIT:
        return "its fused activation is SIGN_BIT, which the delegate does not take"
    weights = v.input(1)
    if weights is None:
        # GetInputSafe fails and TF_LITE_ENSURE_OK returns its status from a bool function: `true`.
        return None
    if not weights.constant:
        return "its weights are not constant (computed at run time); the delegate needs constant weights"
    if _rank(weights) != 4:
        return f"its weights have rank {_rank(weights)}; the delegate needs rank 4"
    if weights.shape[1] > _MAX_KERNEL_SIZE or weights.shape[2] > _MAX_KERNEL_SIZE:
        return f"its kernel is larger than {_MAX_KERNEL_SIZE} in height or width"
    if transpose:
        shape = v.input(0)
        if shape is None or not shape.constant:
            return "its output shape is not constant; the delegate needs it constant"
        return None
    bias = v.input(2)
    if bias is None:
        # `node->inputs->size >= kBiasTensor` holds for 2 inputs too; IsConstantTensor then reads a null tensor.
        return (
            "it has no bias input, and the delegate's check reads the bias anyway (undefined behaviour); "
            "counted as not delegated"
        )
    if not bias.constant:
        return "its bias is not constant; the delegate needs a constant bias"
    return None


def _fully_connected(v: _View) -> str | None:
    # builders/fully_connected_op_builder.cc: IsFullyConnectedOpSupported
    options = v.node.options
    if int(getattr(options, "weightsFormat", 0) or 0) != 0:
        return "its weights use the shuffled int8 format; the delegate takes the default format only"
    x, weights = v.input(0), v.input(1)
    if x is None or weights is None:
        return None  # GetInputSafe fails; TF_LITE_ENSURE_OK's status converts to `true`
    if x.dtype not in ("float32", "float16"):
        return f"its input is {x.dtype}; the delegate needs float"
    if weights.dtype not in ("float32", "float16") or not weights.constant:
        return "its weights are not constant float; the delegate needs constant float weights"
    if (x.shape[-1] if x.shape else 1) != _elements(x):
        return f"its input {list(x.shape)} is not a single vector; Core ML 2's fully connected layer takes one row"
    if len(v.inputs) > 2:
        bias = v.input(2)
        if bias is None:
            # GetInputSafe fails on the omitted bias and TF_LITE_ENSURE_OK returns that status, which
            # converts to `true`: the node is taken, without the activation check below.
            return None
        if bias.dtype not in ("float32", "float16") or not bias.constant:
            return "its bias is not constant float; the delegate needs a constant float bias"
    if _activation(options) == _SIGN_BIT:
        return "its fused activation is SIGN_BIT, which the delegate does not take"
    return None


def _mean(v: _View) -> str | None:
    # builders/pooling_layer_builder.cc: IsMeanOpSupported (Core ML runs it as global average pooling)
    x, axis = v.input(0), v.input(1)
    if not getattr(v.node.options, "keepDims", False):
        return "keep_dims is false; the delegate takes Mean only with keep_dims (as global average pooling)"
    if x is None or _rank(x) != 4:
        return f"its input is {_rank(x) if x else 0}-D; the delegate takes Mean of 4-D tensors only"
    if axis is None or axis.data is None:
        return (
            "its axes are not constant; the delegate's check reads their values at load time (undefined); "
            "counted as not delegated"
        )
    bad = [int(a) for a in axis.data.reshape(-1) if (int(a) + 4) % 4 not in (1, 2)]
    if bad:
        return f"it averages over axis {bad[0]}; the delegate takes Mean over height and width only"
    return None


def _pad(v: _View) -> str | None:
    # builders/pad_op_builder.cc: IsPadOpSupported (PAD and PADV2; MIRROR_PAD after its mode check)
    padding = v.input(1)
    if padding is None:
        return None  # GetInputSafe fails; TF_LITE_ENSURE_OK's status converts to `true`
    if not padding.constant:
        return "its paddings are not constant; the delegate needs constant paddings"
    if _rank(padding) != 2:
        return "its paddings tensor is not 2-D"
    if padding.shape != (4, 2):
        return "its input is not 4-D; the delegate pads 4-D tensors only"
    if padding.data is None:
        return "its paddings could not be read"
    # GetTensorData<int32_t> whatever the type: int64 paddings are read as pairs of int32 words.
    values = np.frombuffer(padding.data.tobytes(), dtype="<i4")
    if values.size < 8:
        return "its paddings could not be read"
    if values[0] != 0 or values[1] != 0:
        return "it pads the batch dimension, which the delegate does not take"
    if values[6] != 0 or values[7] != 0:
        return "it pads the channel dimension, which the delegate does not take"
    return None


def _mirror_pad(v: _View) -> str | None:
    # builders/pad_op_builder.cc: IsMirrorPadOpSupported
    if v.node.options is None:  # no MirrorPadOptions: kTfLiteMirrorPaddingUnknown
        return "it has no mirror-padding mode; the delegate takes REFLECT mirror padding only"
    if int(v.node.options.mode) != _REFLECT:
        return "its mode is SYMMETRIC; the delegate takes REFLECT mirror padding only"
    return _pad(v)


def _reshape(v: _View, coreml_version: int) -> str | None:
    # builders/reshape_op_builder.cc: IsReshapeOpSupported
    if coreml_version >= 3:
        # The same function's Core ML 2 checks say whether coreml_version 2 would take it instead.
        core_ml_2 = _reshape(v, 2)
        default = "the delegate takes no Reshape when it builds Core ML 3 models (its default)"
        return (
            f"{default}; coreml_version 2 would"
            if core_ml_2 is None
            else f"{default}; coreml_version 2 would not either: {core_ml_2}"
        )
    if len(v.inputs) == 1:
        new_shape = getattr(v.node.options, "newShape", None)
        dims = 0 if new_shape is None else len(new_shape)
        return None if dims in (3, 4) else f"its target shape has {dims} dimensions; Core ML 2 reshape takes 3 or 4"
    shape = v.input(1)
    if shape is None:
        return None  # GetInputSafe fails; TF_LITE_ENSURE_OK's status converts to `true`
    if not shape.constant:
        return "its target shape is computed at run time; the delegate needs a constant shape"
    if _rank(shape) != 1 or shape.dtype != "int32":
        return "its shape tensor is not a 1-D int32 tensor"
    if shape.shape[0] not in (3, 4):
        return f"its target shape has {shape.shape[0]} dimensions; Core ML 2 reshape takes 3 or 4"
    return None


def _resize_bilinear(v: _View) -> str | None:
    # builders/resize_bilinear_op_builder.cc: IsResizeBilinearOpSupported
    size = v.input(1)
    if size is None:
        return "it has no size input, and the delegate reads it anyway (undefined behaviour); counted as not delegated"
    if size.constant:
        return None
    return "its output size is not constant; the delegate needs it constant"


def _softmax(v: _View) -> str | None:
    # coreml_delegate.mm: "Only supports when beta is 1.0 for now."
    beta = float(getattr(v.node.options, "beta", 0.0) or 0.0)
    return None if beta == 1.0 else f"its beta is {beta:g}; the delegate takes Softmax with beta 1 only"


def _always(v: _View) -> str | None:
    return None


# coreml_delegate.mm, the switch in IsNodeSupportedByDelegate: every op the delegate takes.
_CHECKS: dict[str, Callable[[_View], str | None]] = {
    "ADD": _binary,
    "AVERAGE_POOL_2D": _pool,
    "CONCATENATION": _concatenation,
    "CONV_2D": _convolution,
    "DEPTHWISE_CONV_2D": _convolution,
    "FULLY_CONNECTED": _fully_connected,
    "HARD_SWISH": _always,
    "LOGISTIC": _always,
    "MAX_POOL_2D": _pool,
    "MIRROR_PAD": _mirror_pad,
    "MEAN": _mean,
    "MUL": _binary,
    "PAD": _pad,
    "PADV2": _pad,
    "RELU": _always,
    "RELU_N1_TO_1": _always,
    "RELU6": _always,
    "RESHAPE": _always,  # replaced per coreml_version in node_refusal
    "RESIZE_BILINEAR": _resize_bilinear,
    "SOFTMAX": _softmax,
    "TANH": _always,
    "TRANSPOSE_CONV": _convolution,
}
# "For most ops, only version 1 is supported."
_MAX_VERSION = {"DEPTHWISE_CONV_2D": 2, "FULLY_CONNECTED": 6}


def node_refusal(
    graph: Graph, node: GraphNode, options: CoreMLOptions, remap: dict[int, int] | None = None
) -> str | None:
    """None when IsNodeSupportedByDelegate takes the node, else why not, in the delegate's order of checks.

    The version and float-input checks run before the per-op checks; when either fails, the
    delegate never reaches the per-op check, so the reason names those (both when both fail)."""
    view = _View(graph, node, remap or {})
    listed = node.op in _CHECKS
    reasons = []
    limit = _MAX_VERSION.get(node.op, 1)
    if node.version > limit:
        reasons.append(f"{node.op} version {node.version} is above the {limit} the delegate takes")
    first = view.input(2 if node.op == "TRANSPOSE_CONV" else 0)  # TransposeConv: (output_shape, filters, input)
    if first is not None and first.dtype != "float32":
        quantized = first.dtype in ("int8", "uint8", "int16")
        reasons.append(
            f"its input is {first.dtype}, not float32"
            + ("; the delegate does not take integer-quantized models" if quantized else "")
        )
    if reasons:
        if not listed:
            reasons.append(f"{node.op} is not among the ops the delegate takes either")
        return "; ".join(reasons)
    if not listed:
        return f"{node.op} is not among the ops the delegate takes"
    if node.op == "RESHAPE":
        return _reshape(view, options.coreml_version)
    return _CHECKS[node.op](view)


def _fp16_dequantize(graph: Graph, node: GraphNode) -> bool:
    """A DEQUANTIZE of a constant fp16 tensor: fp16 weights, which FP16GraphPartitionHelper folds away."""
    if node.op != "DEQUANTIZE" or not node.inputs or node.inputs[0] == OPTIONAL_TENSOR:
        return False
    source = graph.tensors[node.inputs[0]]
    return source.dtype == "float16" and source.constant


def predict(graph: Graph, options: CoreMLOptions | None = None) -> Coverage:
    """What the TFLite Core ML delegate would delegate, as DelegatePrepare in coreml_delegate.mm does it."""
    options = options or CoreMLOptions()
    refusals, state = _refusals(graph, options)
    supported = [r is None for r in refusals]
    found = partition(graph, supported)
    kept = _kept_partitions(graph, found, supported, state, options)
    # Number the delegated partitions in execution order (by first node), as a reader scans the graph.
    order = sorted(range(len(kept)), key=lambda k: min(kept[k]))
    number = {k: n for n, k in enumerate(order)}
    partition_of = {i: number[k] for k, nodes in enumerate(kept) for i in nodes}
    too_small = {i for nodes in found for i in nodes if i not in partition_of}
    nodes = []
    for node, refusal in zip(graph.nodes, refusals, strict=True):
        delegated = node.index in partition_of
        reason = None
        if not delegated:
            reason = _left_out(node.index, found, options) if node.index in too_small else refusal
        nodes.append(NodeCoverage(node.index, node.op, node.version, delegated, partition_of.get(node.index), reason))
    delegated_count = len(partition_of)
    log = (
        f"CoreML delegate: {delegated_count} nodes delegated out of {len(graph.nodes)} nodes, "
        f"with {len(found)} partitions."
    )
    return Coverage(
        delegate="coreml",
        source="predicted",
        reason=_basis(graph, options),
        nodes_total=len(graph.nodes),
        nodes_delegated=delegated_count,
        partitions=len(found),
        delegated_partitions=len(kept),
        log=log,
        nodes=tuple(nodes),
    )


def _refusals(graph: Graph, options: CoreMLOptions) -> tuple[list[str | None], _Fp16State]:
    """Each node's refusal (None: supported), and the fp16 DEQUANTIZEs met on the way."""
    state = _Fp16State()
    refusals: list[str | None] = []
    # FP16GraphPartitionHelper::IsNodeSupported, node by node in execution order.
    for node in graph.nodes:
        if _fp16_dequantize(graph, node) and node.outputs:
            state.dequant_source[node.outputs[0]] = node.inputs[0]
            state.dequant_node[node.outputs[0]] = node.index
            refusals.append(_FP16_DEQUANTIZE)
            continue
        remapped = any(t in state.dequant_source for t in node.inputs)
        refusals.append(node_refusal(graph, node, options, state.dequant_source if remapped else None))
    return refusals, state


def _kept_partitions(
    graph: Graph, found: list[list[int]], supported: list[bool], state: _Fp16State, options: CoreMLOptions
) -> list[list[int]]:
    """The partitions the delegate takes, of those `found` among the supported nodes."""
    # FP16GraphPartitionHelper::GetNodesOfFirstNLargestPartitionsImpl (delegates/utils.cc):
    if sum(supported) + len(state.dequant_node) == len(graph.nodes):
        # "Scenario 1: Full Delegation": every node, fp16 DEQUANTIZEs included, whatever the size limits;
        # the runtime then replaces them all with one delegate node.
        return [[n.index for n in graph.nodes]] if graph.nodes else []
    # "Scenario 2: Partial Delegation": the largest partitions; fp16 DEQUANTIZEs stay on the CPU.
    return largest(found, options.max_delegated_partitions, options.min_nodes_per_partition)


def _left_out(index: int, found: list[list[int]], options: CoreMLOptions) -> str:
    """Why a supported node's partition was not kept: too small, or beyond the partition limit."""
    size = next(len(p) for p in found if index in p)
    return (
        f"supported, but its partition has {size} node{'s' if size != 1 else ''}; the delegate keeps "
        f"partitions of at least {options.min_nodes_per_partition}"
        if size < options.min_nodes_per_partition
        else f"supported, but only the {options.max_delegated_partitions} largest partitions are delegated"
    )


def _basis(graph: Graph, options: CoreMLOptions) -> str:
    """What the prediction rests on: the options it assumed and where the delegate is created at all."""
    return (
        f"predicted from the TFLite Core ML delegate's rules (coreml_version {options.coreml_version}, "
        f"min_nodes_per_partition {options.min_nodes_per_partition}, max_delegated_partitions "
        f"{options.max_delegated_partitions or 'unlimited'}); with the default enabled_devices the delegate is "
        "created only on devices with a Neural Engine (A12 or later iPhone/iPad)"
        + (
            "; this graph has ops with side effects, whose ordering constraints are modelled approximately"
            if has_side_effects(graph)
            else ""
        )
    )
