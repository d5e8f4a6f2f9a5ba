"""The main subgraph of a .tflite file as a graph: nodes in execution order, their tensors and options.

What a delegate takes depends on more than op names: op versions, tensor types,
whether weights are constant, and per-op options (Softmax's beta, Mean's
keep_dims). This reads them from the flatbuffer in pure Python, with the same
defensive checks as `tflite_file`, so coverage can be worked out on any OS
without a runtime that has the delegate.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as fb

from app.errors import ModelError
from app.tflite.file import FILE_IDENTIFIER, buffer_view, check_len, op_name, tensor_info

OPTIONAL_TENSOR = -1  # kTfLiteOptionalTensor: an input the op was built without


@dataclass(frozen=True)
class GraphTensor:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str  # "float32", "int8", ...
    constant: bool  # backed by a buffer in the file (TFLite's kTfLiteMmapRo): weights, shapes, axes
    data: np.ndarray | None  # the constant's values, for the small int32/int64/float32 ones rules read


@dataclass(frozen=True)
class GraphNode:
    index: int  # position in the execution plan (TFLite runs nodes in file order)
    op: str  # builtin name, e.g. "CONV_2D", or "CUSTOM:name"
    version: int
    inputs: tuple[int, ...]  # tensor indices; OPTIONAL_TENSOR for an omitted optional input
    outputs: tuple[int, ...]
    options: Any  # the schema's object-API options (e.g. fb.SoftmaxOptionsT), None when absent


@dataclass(frozen=True)
class Graph:
    tensors: tuple[GraphTensor, ...]
    nodes: tuple[GraphNode, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


_SMALL_CONSTANT = 64
_NUMPY_TYPES = {"float32": "<f4", "int32": "<i4", "int64": "<i8"}


def _graph_tensor(model: fb.Model, sg: fb.SubGraph, data: bytes, index: int, limit: int) -> GraphTensor:
    info = tensor_info(sg, index, limit)
    buffer = sg.Tensors(index).Buffer()
    raw = buffer_view(model, data, buffer, f"tensor '{info.name}'") if buffer else None  # buffer 0: none
    values = None
    numpy_type = _NUMPY_TYPES.get(info.dtype)
    # Rules read shapes, axes and paddings (a few values); weights are never decoded.
    if (
        raw is not None
        and numpy_type
        and len(raw) <= _SMALL_CONSTANT * 8
        and len(raw) % np.dtype(numpy_type).itemsize == 0
    ):
        values = np.frombuffer(raw, dtype=numpy_type).copy()
    return GraphTensor(index, info.name, info.shape, info.dtype, raw is not None, values)


def _indices(values: np.ndarray | int, n_tensors: int, what: str) -> tuple[int, ...]:
    out = tuple(int(v) for v in np.atleast_1d(values)) if not isinstance(values, int) else ()
    for v in out:
        if v != OPTIONAL_TENSOR and not 0 <= v < n_tensors:
            raise ModelError(f"model file is corrupt: {what} refers to tensor {v} of {n_tensors}")
    return out


def _node(model: fb.Model, sg: fb.SubGraph, position: int, n_tensors: int, limit: int) -> GraphNode:
    op = sg.Operators(position)
    check_len(op.InputsLength(), limit, "an operator's inputs")
    check_len(op.OutputsLength(), limit, "an operator's outputs")
    code_index = op.OpcodeIndex()
    name = op_name(model, code_index)
    version = int(model.OperatorCodes(code_index).Version())
    where = f"node {position} ({name})"
    inputs = _indices(op.InputsAsNumpy(), n_tensors, where) if op.InputsLength() else ()
    outputs = _indices(op.OutputsAsNumpy(), n_tensors, where) if op.OutputsLength() else ()
    options = fb.BuiltinOptionsCreator(op.BuiltinOptionsType(), op.BuiltinOptions())
    return GraphNode(position, name, version, inputs, outputs, options)


def read_graph(data: bytes) -> Graph:
    """The main subgraph's nodes and tensors; ModelError when the bytes do not hold a sound graph."""
    if len(data) < 8 or data[4:8] != FILE_IDENTIFIER:
        raise ModelError("not a TFLite model (the file does not carry the 'TFL3' flatbuffer identifier)")
    limit = len(data)
    try:
        if struct.unpack_from("<I", data, 0)[0] + 4 > limit:
            raise ModelError("model file is truncated: its root table lies past the end of the file")
        model = fb.Model.GetRootAs(data, 0)
        if check_len(model.SubgraphsLength(), limit, "the subgraph list") == 0:
            raise ModelError("model has no subgraph: nothing to run")
        sg = model.Subgraphs(0)
        n_tensors = check_len(sg.TensorsLength(), limit, "the tensor list")
        tensors = tuple(_graph_tensor(model, sg, data, i, limit) for i in range(n_tensors))
        n_ops = check_len(sg.OperatorsLength(), limit, "the operator list")
        nodes = tuple(_node(model, sg, i, n_tensors, limit) for i in range(n_ops))
        inputs = _indices(sg.InputsAsNumpy(), n_tensors, "the graph's inputs") if sg.InputsLength() else ()
        outputs = _indices(sg.OutputsAsNumpy(), n_tensors, "the graph's outputs") if sg.OutputsLength() else ()
    except ModelError:
        raise
    except (struct.error, IndexError, ValueError, TypeError, OverflowError, MemoryError, AttributeError) as exc:
        raise ModelError(f"model file is truncated or corrupt ({type(exc).__name__} while reading its graph)") from None
    return Graph(tensors, nodes, inputs, outputs)
