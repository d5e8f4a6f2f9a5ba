"""One Core ML ML program (MIL) per delegated partition of a TFLite graph, with coremltools' MIL builder.

The TFLite Core ML delegate builds a neural-network model per partition, one Core ML layer per
TFLite op (tensorflow/lite/delegates/coreml/builders/*.cc); this builds the ML-program equivalent,
one MIL op (or a short fixed sequence) per TFLite op, for every op coreml_rules.py says the delegate
takes. Layout: TFLite is NHWC, MIL's conv/pool/resize are NCHW, so every 4-D tensor is transposed
once where it enters the partition and once where it leaves; inside, every 4-D value is NCHW.

coremltools is imported only when a program is built (it imports TensorFlow on Linux).
Op specifications followed: coremltools.converters.mil.mil.ops.defs.iOS15 / iOS16
(https://apple.github.io/coremltools/source/coremltools.converters.mil.mil.ops.defs.html).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from app.coreml_mil.split import Piece
from app.errors import ModelError
from app.system.names import GpuPrecision
from app.tflite.file import buffer_view
from app.tflite.graph import OPTIONAL_TENSOR, Graph, GraphNode, GraphTensor

TRANSLATOR_VERSION = 1  # part of the program cache's key: bump when the programs this writes change
# ActivationFunctionType -> how it is applied (SIGN_BIT is refused by the delegate's rules)
_ACT_NONE, _ACT_RELU, _ACT_RELU_N1_TO_1, _ACT_RELU6, _ACT_TANH = 0, 1, 2, 3, 4
_SAME, _VALID = 0, 1  # Padding
_NCHW = (0, 3, 1, 2)  # NHWC -> NCHW
_NHWC = (0, 2, 3, 1)  # NCHW -> NHWC
_NUMPY = {"float32": "<f4", "float16": "<f2", "int32": "<i4", "int64": "<i8"}


class Untranslatable(ModelError):
    """A delegated node this translator cannot express in MIL (said with the node and why)."""


@dataclass(frozen=True)
class ProgramIO:
    """A program's input or output and the whole-graph tensor it carries (NHWC, as in the .tflite)."""

    name: str
    tensor: int
    shape: tuple[int, ...]


@dataclass
class Translation:
    program: Any  # coremltools.converters.mil.Program
    inputs: tuple[ProgramIO, ...]
    outputs: tuple[ProgramIO, ...]
    ops: dict[str, int] = field(default_factory=dict)  # TFLite op -> nodes translated


def io_name(kind: str, tensor: int) -> str:
    return f"{kind}_{tensor}"


def _pre(name: str, activation: int) -> str:
    """The name of an op's result before its fused activation (the activation's op takes the node's name)."""
    return name if activation == _ACT_NONE else name + "_pre"


class _Weights:
    """Constant tensors' full values, read from the flatbuffer (tflite_graph decodes only small ones)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._model = fb.Model.GetRootAs(data, 0)
        self._sg = self._model.Subgraphs(0)

    def value(self, t: GraphTensor) -> np.ndarray:
        numpy_type = _NUMPY.get(t.dtype)
        if numpy_type is None:
            raise Untranslatable(f"constant '{t.name}' is {t.dtype}; only float and int32/int64 constants translate")
        try:
            raw = buffer_view(self._model, self._data, self._sg.Tensors(t.index).Buffer(), f"tensor '{t.name}'")
        except struct.error:
            raise ModelError(f"model file is corrupt: tensor '{t.name}'") from None
        if raw is None:
            raise Untranslatable(f"constant '{t.name}' has no data")
        values = np.frombuffer(raw, dtype=numpy_type)
        if values.size != int(np.prod(t.shape)):
            raise ModelError(f"model file is corrupt: tensor '{t.name}' holds {values.size} values for {t.shape}")
        return values.reshape(t.shape).astype(values.dtype.newbyteorder("="))


class _Builder:
    """Translates one piece's nodes; `vals` maps whole-graph tensor indices to MIL vars (4-D ones NCHW)."""

    def __init__(self, mb: Any, graph: Graph, weights: _Weights) -> None:
        self.mb, self.graph, self.weights = mb, graph, weights
        self.vals: dict[int, Any] = {}
        self.dequantized: dict[int, int] = {}  # DEQUANTIZE output -> its fp16 constant input

    # ---- values

    def tensor(self, i: int) -> GraphTensor:
        return self.graph.tensors[i]

    def const(self, i: int) -> np.ndarray:
        i = self.dequantized.get(i, i)  # fp16 weights behind a DEQUANTIZE: the constant itself
        t = self.tensor(i)
        if not t.constant:
            raise Untranslatable(f"tensor '{t.name}' is not constant")
        value = self.weights.value(t)
        return value.astype(np.float32) if value.dtype == np.float16 else value

    def var(self, i: int) -> Any:
        """The value of tensor i: a MIL var, or a const (4-D constants transposed to NCHW)."""
        if i in self.vals:
            return self.vals[i]
        t = self.tensor(i)
        if t.constant:
            value = self.const(i)
            return value.transpose(_NCHW) if value.ndim == 4 else value
        raise Untranslatable(f"tensor '{t.name}' is read before anything in the partition produced it")

    def rank(self, i: int) -> int:
        return len(self.tensor(i).shape)

    def activation(self, x: Any, code: int, name: str) -> Any:
        mb = self.mb
        if code == _ACT_NONE:
            return x
        if code == _ACT_RELU:
            return mb.relu(x=x, name=name)
        if code == _ACT_RELU6:
            return mb.relu6(x=x, name=name)
        if code == _ACT_RELU_N1_TO_1:
            return mb.clip(x=x, alpha=np.float32(-1.0), beta=np.float32(1.0), name=name)
        if code == _ACT_TANH:
            return mb.tanh(x=x, name=name)
        raise Untranslatable(f"fused activation {code} does not translate")

    def broadcast_operand(self, i: int, other_rank: int) -> Any:
        """An ADD/MUL operand of rank < 4 next to a 4-D one: padded to 4-D NHWC with leading 1s
        (the delegate's IsBroadcastable view, builders/util.cc), then to NCHW."""
        value = self.var(i)
        rank = self.rank(i)
        if rank == 4 or other_rank < 4:
            return value
        shape = (1,) * (4 - rank) + tuple(self.tensor(i).shape)
        if isinstance(value, np.ndarray):
            return value.reshape(shape).transpose(_NCHW)
        return self.mb.transpose(x=self.mb.reshape(x=value, shape=shape), perm=_NCHW)

    # ---- ops

    def node(self, node: GraphNode) -> None:
        handler = getattr(self, f"op_{node.op.lower()}", None)
        if handler is None:
            raise Untranslatable(f"node {node.index} ({node.op}) has no translation")
        out = handler(node, f"n{node.index}_{node.op.lower()}")
        self.vals[node.outputs[0]] = out

    def _input(self, node: GraphNode, k: int) -> int:
        if k >= len(node.inputs) or node.inputs[k] == OPTIONAL_TENSOR:
            raise Untranslatable(f"node {node.index} ({node.op}) lacks input {k}")
        return node.inputs[k]

    def _bias(self, node: GraphNode, k: int, channels: int) -> np.ndarray:
        if k < len(node.inputs) and node.inputs[k] != OPTIONAL_TENSOR:
            return self.const(node.inputs[k]).astype(np.float32).reshape(-1)
        return np.zeros(channels, np.float32)

    def _pads(
        self, x: int, kernel: tuple[int, int], strides: list[int], dilations: list[int], padding: int
    ) -> dict[str, Any]:
        """TFLite's padding as MIL custom pads (tensorflow/lite/kernels/padding.h, ComputePaddingWithOffset:
        SAME puts the odd row or column after), so the program says exactly what TFLite does."""
        if padding == _VALID:
            return {"pad_type": "valid"}
        pads = []
        for size, k, s, d in zip(self.tensor(x).shape[1:3], kernel, strides, dilations, strict=True):
            effective = (k - 1) * d + 1
            out = (size + s - 1) // s
            total = max((out - 1) * s + effective - size, 0)
            pads += [total // 2, total - total // 2]
        return {"pad_type": "custom", "pad": pads}

    def op_conv_2d(self, node: GraphNode, name: str) -> Any:
        o = node.options
        w = self.const(self._input(node, 1)).transpose(0, 3, 1, 2)  # OHWI -> OIHW
        strides, dilations = [o.strideH, o.strideW], [o.dilationHFactor or 1, o.dilationWFactor or 1]
        x = self.mb.conv(
            x=self.var(node.inputs[0]), weight=w, bias=self._bias(node, 2, w.shape[0]), strides=strides,
            dilations=dilations, groups=1, **self._pads(node.inputs[0], w.shape[2:], strides, dilations, o.padding),
            name=_pre(name, o.fusedActivationFunction),
        )  # fmt: skip
        return self.activation(x, o.fusedActivationFunction, name)

    def op_depthwise_conv_2d(self, node: GraphNode, name: str) -> Any:
        o = node.options
        channels_in = self.tensor(node.inputs[0]).shape[3]
        w = self.const(self._input(node, 1)).transpose(3, 0, 1, 2)  # 1HW(C*M) -> (C*M)1HW
        strides, dilations = [o.strideH, o.strideW], [o.dilationHFactor or 1, o.dilationWFactor or 1]
        x = self.mb.conv(
            x=self.var(node.inputs[0]), weight=w, bias=self._bias(node, 2, w.shape[0]), strides=strides,
            dilations=dilations, groups=channels_in,
            **self._pads(node.inputs[0], w.shape[2:], strides, dilations, o.padding),
            name=_pre(name, o.fusedActivationFunction),
        )  # fmt: skip
        return self.activation(x, o.fusedActivationFunction, name)

    def op_transpose_conv(self, node: GraphNode, name: str) -> Any:
        o = node.options
        activation = int(getattr(o, "fusedActivationFunction", 0) or 0)
        out_shape = [int(v) for v in self.const(self._input(node, 0)).reshape(-1)]  # NHWC
        w = self.const(self._input(node, 1))  # (C_out, KH, KW, C_in)
        x_t = self._input(node, 2)
        in_h, in_w = self.tensor(x_t).shape[1:3]
        pads = []
        axes = ((in_h, out_shape[1], w.shape[1], o.strideH), (in_w, out_shape[2], w.shape[2], o.strideW))
        for size_in, size_out, k, s in axes:
            total = (size_in - 1) * s + k - size_out
            if o.padding == _VALID:
                total = 0
            if total < 0 or (o.padding == _VALID and (size_in - 1) * s + k != size_out):
                raise Untranslatable(
                    f"node {node.index} (TRANSPOSE_CONV): output size {size_out} is not what its padding gives"
                )
            pads += [total // 2, total - total // 2]  # TFLite's ComputePadding: the odd one after
        y = self.mb.conv_transpose(
            x=self.var(x_t), weight=w.transpose(3, 0, 1, 2), bias=self._bias(node, 3, w.shape[0]),
            pad_type="custom", pad=pads, output_shape=[out_shape[0], out_shape[3], out_shape[1], out_shape[2]],
            strides=[o.strideH, o.strideW], name=_pre(name, activation),
        )  # fmt: skip
        return self.activation(y, activation, name)

    def op_fully_connected(self, node: GraphNode, name: str) -> Any:
        o = node.options
        w = self.const(self._input(node, 1)).astype(np.float32)  # (O, I)
        x = self.var(node.inputs[0])
        if self.rank(node.inputs[0]) != 2 or self.tensor(node.inputs[0]).shape[0] != 1:
            x = self.mb.reshape(x=x, shape=[1, w.shape[1]])  # a single vector (the delegate's check)
        activation = int(o.fusedActivationFunction or 0) if o is not None else 0
        y = self.mb.linear(x=x, weight=w, bias=self._bias(node, 2, w.shape[0]), name=_pre(name, activation))
        y = self.activation(y, activation, name)
        out_shape = tuple(self.tensor(node.outputs[0]).shape)
        if out_shape != (1, w.shape[0]):
            y = self.mb.reshape(x=y, shape=list(out_shape), name=name + "_shape")
            if len(out_shape) == 4:
                y = self.mb.transpose(x=y, perm=_NCHW, name=name + "_nchw")
        return y

    def _binary(self, node: GraphNode, name: str, op: Any) -> Any:
        a, b = self._input(node, 0), self._input(node, 1)
        top = max(self.rank(a), self.rank(b))
        activation = int(getattr(node.options, "fusedActivationFunction", 0) or 0)
        y = op(x=self.broadcast_operand(a, top), y=self.broadcast_operand(b, top), name=_pre(name, activation))
        return self.activation(y, activation, name)

    def op_add(self, node: GraphNode, name: str) -> Any:
        return self._binary(node, name, self.mb.add)

    def op_mul(self, node: GraphNode, name: str) -> Any:
        return self._binary(node, name, self.mb.mul)

    def _pool(self, node: GraphNode, name: str, op: Any, **extra: Any) -> Any:
        o = node.options
        kernel, strides = (o.filterHeight, o.filterWidth), [o.strideH, o.strideW]
        pads = self._pads(node.inputs[0], kernel, strides, [1, 1], o.padding)
        return op(x=self.var(node.inputs[0]), kernel_sizes=list(kernel), strides=strides, name=name, **pads, **extra)

    def op_average_pool_2d(self, node: GraphNode, name: str) -> Any:
        # TFLite averages over the window's in-image pixels only.
        return self._pool(node, name, self.mb.avg_pool, exclude_padding_from_average=True)

    def op_max_pool_2d(self, node: GraphNode, name: str) -> Any:
        return self._pool(node, name, self.mb.max_pool)

    def op_mean(self, node: GraphNode, name: str) -> Any:
        axes = sorted({(int(a) + 4) % 4 for a in self.const(self._input(node, 1)).reshape(-1)})
        nchw_axes = [{1: 2, 2: 3}[a] for a in axes]  # coreml_rules takes H and W only
        return self.mb.reduce_mean(x=self.var(node.inputs[0]), axes=nchw_axes, keep_dims=True, name=name)

    def _pad(self, node: GraphNode, name: str, mode: str) -> Any:
        paddings = self.const(self._input(node, 1)).astype(np.int64).reshape(4, 2)[list(_NCHW)]
        value = 0.0
        if node.op == "PADV2" and len(node.inputs) > 2 and node.inputs[2] != OPTIONAL_TENSOR:
            value = float(self.const(node.inputs[2]).reshape(-1)[0])
        extra = {"constant_val": np.float32(value)} if mode == "constant" else {}
        pad = paddings.reshape(-1).astype(np.int32)
        return self.mb.pad(x=self.var(node.inputs[0]), pad=pad, mode=mode, name=name, **extra)

    def op_pad(self, node: GraphNode, name: str) -> Any:
        return self._pad(node, name, "constant")

    def op_padv2(self, node: GraphNode, name: str) -> Any:
        return self._pad(node, name, "constant")

    def op_mirror_pad(self, node: GraphNode, name: str) -> Any:
        return self._pad(node, name, "reflect")  # coreml_rules takes REFLECT only

    def op_concatenation(self, node: GraphNode, name: str) -> Any:
        rank = self.rank(node.inputs[0])
        axis = 1 if rank == 4 else rank - 1  # channels (coreml_rules takes the last axis only)
        return self.mb.concat(values=[self.var(i) for i in node.inputs], axis=axis, name=name)

    def op_reshape(self, node: GraphNode, name: str) -> Any:
        # Reshape follows NHWC element order: back to NHWC, reshape, then NCHW again when 4-D.
        x = self.var(node.inputs[0])
        if self.rank(node.inputs[0]) == 4:
            x = self.mb.transpose(x=x, perm=_NHWC, name=name + "_nhwc")
        out_shape = list(self.tensor(node.outputs[0]).shape)
        if len(out_shape) != 4:
            return self.mb.reshape(x=x, shape=out_shape, name=name)
        y = self.mb.reshape(x=x, shape=out_shape, name=name + "_r")
        return self.mb.transpose(x=y, perm=_NCHW, name=name)

    def op_resize_bilinear(self, node: GraphNode, name: str) -> Any:
        o = node.options
        height, width = (int(v) for v in self.const(self._input(node, 1)).reshape(-1)[:2])
        if o is not None and o.alignCorners:
            mode = "STRICT_ALIGN_CORNERS"  # tf ResizeBilinear(align_corners=True)
        elif o is not None and o.halfPixelCenters:
            mode = "UNALIGN_CORNERS"  # (i + 0.5) * scale - 0.5, clamped
        else:
            mode = "DEFAULT"  # tf ResizeBilinear's default
        x = self.var(node.inputs[0])
        return self.mb.resize_bilinear(
            x=x, target_size_height=height, target_size_width=width, sampling_mode=mode, name=name
        )

    def op_relu(self, node: GraphNode, name: str) -> Any:
        return self.mb.relu(x=self.var(node.inputs[0]), name=name)

    def op_relu6(self, node: GraphNode, name: str) -> Any:
        return self.mb.relu6(x=self.var(node.inputs[0]), name=name)

    def op_relu_n1_to_1(self, node: GraphNode, name: str) -> Any:
        return self.mb.clip(x=self.var(node.inputs[0]), alpha=np.float32(-1.0), beta=np.float32(1.0), name=name)

    def op_tanh(self, node: GraphNode, name: str) -> Any:
        return self.mb.tanh(x=self.var(node.inputs[0]), name=name)

    def op_logistic(self, node: GraphNode, name: str) -> Any:
        return self.mb.sigmoid(x=self.var(node.inputs[0]), name=name)

    def op_hard_swish(self, node: GraphNode, name: str) -> Any:
        # x * relu6(x + 3) / 6 == x * sigmoid_hard(x, alpha=1/6, beta=1/2)
        x = self.var(node.inputs[0])
        gate = self.mb.sigmoid_hard(x=x, alpha=np.float32(1.0 / 6.0), beta=np.float32(0.5), name=name + "_gate")
        return self.mb.mul(x=x, y=gate, name=name)

    def op_softmax(self, node: GraphNode, name: str) -> Any:
        axis = 1 if self.rank(node.inputs[0]) == 4 else -1  # TFLite: the last axis (channels)
        return self.mb.softmax(x=self.var(node.inputs[0]), axis=axis, name=name)

    def op_dequantize(self, node: GraphNode, name: str) -> Any:
        # Only fp16 weights reach a partition (full delegation): the float32 constant itself, which the
        # ops that need constant weights (conv, linear) read through `dequantized`.
        source = self._input(node, 0)
        value = self.const(source).astype(np.float32)
        self.dequantized[node.outputs[0]] = source
        return self.mb.const(val=value.transpose(_NCHW) if value.ndim == 4 else value, name=name)


def translate(data: bytes, graph: Graph, piece: Piece) -> Translation:
    """The MIL program of one delegated piece: float32 in and out, NHWC at its edges as in the .tflite."""
    if not piece.delegated:
        raise ValueError("only delegated pieces translate to Core ML")
    import coremltools as ct
    from coremltools.converters.mil.mil import Builder as mb
    from coremltools.converters.mil.mil import Function, Program

    builder = _Builder(mb, graph, _Weights(data))
    inputs = tuple(ProgramIO(io_name("in", t), t, tuple(graph.tensors[t].shape)) for t in piece.inputs)
    outputs = tuple(ProgramIO(io_name("out", t), t, tuple(graph.tensors[t].shape)) for t in piece.outputs)
    for io in inputs:
        if graph.tensors[io.tensor].dtype != "float32":
            raise Untranslatable(f"partition input '{graph.tensors[io.tensor].name}' is not float32")
    placeholders = {io.name: mb.placeholder(shape=io.shape) for io in inputs}
    counts: dict[str, int] = {}
    with Function(placeholders, opset_version=ct.target.macOS13) as function:
        for io in inputs:
            value = function.inputs[io.name]
            # NHWC -> NCHW once, where the tensor enters the partition.
            if len(io.shape) == 4:
                value = mb.transpose(x=value, perm=_NCHW, name=io.name + "_nchw")
            builder.vals[io.tensor] = value
        for i in piece.nodes:
            node = graph.nodes[i]
            builder.node(node)
            counts[node.op] = counts.get(node.op, 0) + 1
        results = []
        for io in outputs:
            value = builder.vals[io.tensor]
            if len(io.shape) == 4:  # NCHW -> NHWC once, where it leaves
                results.append(mb.transpose(x=value, perm=_NHWC, name=io.name))
            else:
                results.append(mb.identity(x=value, name=io.name))
        function.set_outputs(results)
    program = Program()
    program.add_function("main", function)
    return Translation(program, inputs, outputs, dict(sorted(counts.items())))


def convert(translation: Translation, precision: GpuPrecision | str) -> Any:
    """The ML program as a coremltools MLModel (not compiled or loaded: that needs macOS). coremltools
    runs its passes on `translation.program` in place: translate again for another conversion."""
    if precision not in list(GpuPrecision):
        raise ValueError(f"precision must be one of {', '.join(GpuPrecision)}")
    import coremltools as ct

    return ct.convert(
        translation.program,
        convert_to="mlprogram",
        compute_precision=ct.precision.FLOAT16 if precision == GpuPrecision.FP16 else ct.precision.FLOAT32,
        minimum_deployment_target=ct.target.macOS13,
        skip_model_load=True,
    )
