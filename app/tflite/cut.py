"""Stand-alone .tflite models cut from one: a subset of its nodes, the tensors they touch, the buffers
those use, with chosen tensors as the cut's inputs and outputs (the schema's object API).

Shared by the Core ML splitter (app/coreml_mil/split.py: one model per partition) and the numerics
cuts (app/numerics/cuts.py: a prefix that ends after a node, or the whole graph with its intermediate
tensors made outputs).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb

from app.errors import ModelError
from app.tflite.graph import OPTIONAL_TENSOR


def unpack(data: bytes) -> fb.ModelT:
    """The whole model in the object API, refused (ModelError) unless it is one subgraph with its weights inside."""
    try:
        model = fb.ModelT.InitFromPackedBuf(data, 0)
    except Exception as exc:  # the generated reader raises whatever a bad offset gives
        raise ModelError(f"model file is corrupt ({type(exc).__name__} while unpacking it)") from None
    if len(model.subgraphs or []) != 1:
        raise ModelError("the model has more than one subgraph; only single-subgraph models are cut")
    if any(getattr(b, "offset", 0) for b in model.buffers or []):
        raise ModelError("the model keeps its weights outside the flatbuffer (over 2 GB); it is not cut")
    return model


def cut_model(
    model: fb.ModelT, nodes: Sequence[int], inputs: Sequence[int], outputs: Sequence[int], name: str, description: str
) -> bytes:
    """`nodes` (whole-graph indices, execution order) as a model reading `inputs` and writing `outputs`
    (whole-graph tensor indices). Operator codes stay as they are (indices stay valid); buffers keep
    their positions, emptied where the cut does not use them, so a cut carries only its own weights."""
    whole = model.subgraphs[0]
    used: list[int] = []
    remap: dict[int, int] = {}

    def local(t: int) -> int:
        if t == OPTIONAL_TENSOR:
            return t
        if t not in remap:
            remap[t] = len(used)
            used.append(t)
        return remap[t]

    for t in inputs:
        local(t)
    operators = []
    for i in nodes:
        op = copy.copy(whole.operators[i])
        op.inputs = [local(int(t)) for t in np.atleast_1d(op.inputs if op.inputs is not None else [])]
        op.outputs = [local(int(t)) for t in np.atleast_1d(op.outputs if op.outputs is not None else [])]
        if op.intermediates is not None and len(op.intermediates):
            op.intermediates = [local(int(t)) for t in np.atleast_1d(op.intermediates)]
        operators.append(op)
    tensors = [whole.tensors[t] for t in used]
    kept_buffers = {int(t.buffer) for t in tensors}
    buffers = [b if i in kept_buffers else fb.BufferT() for i, b in enumerate(model.buffers)]
    sg = fb.SubGraphT()
    sg.tensors, sg.operators = tensors, operators
    sg.inputs = [remap[t] for t in inputs]
    sg.outputs = [remap[t] for t in outputs]
    sg.name = name
    out = fb.ModelT()
    out.version = model.version
    out.operatorCodes = model.operatorCodes
    out.subgraphs = [sg]
    out.buffers = buffers
    out.description = description
    builder = flatbuffers.Builder(1024)
    builder.Finish(out.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def quantization(model: fb.ModelT, tensor: int) -> tuple[float, int] | None:
    """(scale, zero point) of a per-tensor quantized tensor; None when it is not quantized (or per channel)."""
    q = model.subgraphs[0].tensors[tensor].quantization
    if q is None or q.scale is None or len(q.scale) != 1:
        return None
    zero = q.zeroPoint if q.zeroPoint is not None and len(q.zeroPoint) == 1 else [0]
    return float(q.scale[0]), int(zero[0])
