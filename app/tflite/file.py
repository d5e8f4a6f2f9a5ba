"""Read the structure of a .tflite flatbuffer in pure Python, before any native code sees it.

The native runtime is handed only files that parsed here, and what the UI and
CLI say about a model (inputs, outputs, op types, metadata) comes from this
reading rather than from an interpreter instance. Any inconsistency in the
bytes becomes a ModelError naming the problem.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

from ai_edge_litert import schema_py_generated as fb

from app.errors import ModelError

FILE_IDENTIFIER = b"TFL3"

# TensorType enum of the TFLite schema -> numpy dtype name (only the ones an image classifier can use).
TENSOR_TYPES = {getattr(fb.TensorType, name): name.lower() for name in dir(fb.TensorType) if name.isupper()}
_OP_NAMES = {getattr(fb.BuiltinOperator, name): name for name in dir(fb.BuiltinOperator) if name.isupper()}
_PLACEHOLDER_FOR_GREATER_OP_CODES = 127


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...]
    dtype: str  # "float32", "uint8", "int8", ...
    scale: float | None  # per-tensor quantization, None when not quantized
    zero_point: int | None


@dataclass(frozen=True)
class TfliteInfo:
    subgraphs: int
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    op_types: list[str]  # one entry per node of the main subgraph, in execution order
    op_versions: list[int]  # each node's operator version, same order
    metadata: Mapping[str, bytes]  # model metadata entries by name (e.g. "TFLITE_METADATA")
    description: str
    output_tensors: tuple[int, ...] = ()  # the main subgraph's output tensor indices, in output order
    custom_node_outputs: Mapping[int, tuple[int, ...]] = field(default_factory=dict)  # custom op node -> its outputs
    output_ops: tuple[str, ...] = ()  # per output, the op that computes it (seen through reshapes); "" for none


def check_len(n: int, limit: int, what: str) -> int:
    # Corrupt vectors can claim billions of elements; no real one exceeds the file size.
    if n < 0 or n > limit:
        raise ModelError(f"model file is corrupt: {what} claims {n} entries")
    return n


def tensor_info(sg: fb.SubGraph, index: int, limit: int) -> TensorInfo:
    if not 0 <= index < sg.TensorsLength():
        raise ModelError(f"model file is corrupt: tensor index {index} out of range")
    t = sg.Tensors(index)
    shape = tuple(int(d) for d in t.ShapeAsNumpy()) if not t.ShapeIsNone() else ()
    check_len(len(shape), 16, "a tensor shape")
    sig = tuple(int(d) for d in t.ShapeSignatureAsNumpy()) if not t.ShapeSignatureIsNone() else shape
    scale = zero_point = None
    q = t.Quantization()
    if q is not None and not q.ScaleIsNone() and q.ScaleLength() >= 1:
        check_len(q.ScaleLength(), limit, "a quantization scale")
        scale = float(q.Scale(0))
        zero_point = int(q.ZeroPoint(0)) if q.ZeroPointLength() >= 1 else 0
    name = t.Name()
    return TensorInfo(
        name=name.decode("utf-8", errors="replace") if name else f"tensor {index}",
        shape=shape,
        shape_signature=sig,
        dtype=TENSOR_TYPES.get(t.Type(), f"type {t.Type()}"),
        scale=scale,
        zero_point=zero_point,
    )


def op_name(model: fb.Model, opcode_index: int) -> str:
    if not 0 <= opcode_index < model.OperatorCodesLength():
        raise ModelError(f"model file is corrupt: operator code {opcode_index} out of range")
    code = model.OperatorCodes(opcode_index)
    builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    if builtin == fb.BuiltinOperator.CUSTOM:
        custom = code.CustomCode()
        return f"CUSTOM:{custom.decode('utf-8', errors='replace')}" if custom else "CUSTOM"
    if code.DeprecatedBuiltinCode() == _PLACEHOLDER_FOR_GREATER_OP_CODES:
        builtin = code.BuiltinCode()
    return _OP_NAMES.get(builtin, f"OP_{builtin}")


def buffer_view(model: fb.Model, data: bytes, index: int, what: str) -> memoryview | None:
    """The bytes of buffer `index` without copying them; None when it holds none. `what` names the
    buffer's user in the error ("metadata 'X'", "tensor 'Y'")."""
    if not 0 <= index < model.BuffersLength():
        raise ModelError(f"model file is corrupt: {what} points to buffer {index}")
    buf = model.Buffers(index)
    if buf.Offset() > 1:  # >2 GB models keep buffers after the flatbuffer
        start, size = buf.Offset(), buf.Size()
        if start + size > len(data):
            raise ModelError(f"model file is truncated: {what} ends past the end of the file")
        return memoryview(data)[start : start + size] if size else None
    if buf.DataIsNone() or buf.DataLength() == 0:
        return None
    return memoryview(buf.DataAsNumpy())


def _metadata(model: fb.Model, data: bytes, limit: int) -> Mapping[str, bytes]:
    entries: dict[str, bytes] = {}
    for i in range(check_len(model.MetadataLength(), limit, "the metadata list")):
        entry = model.Metadata(i)
        name = (entry.Name() or b"").decode("utf-8", errors="replace")
        view = buffer_view(model, data, entry.Buffer(), f"metadata '{name}'")
        if view is not None:
            entries[name] = view.tobytes()
    return entries


def read_tflite(data: bytes) -> TfliteInfo:
    """Parse the flatbuffer; raise ModelError with a specific reason when it is not a sound TFLite model."""
    if len(data) == 0:
        raise ModelError("model file is empty")
    if len(data) < 8 or data[4:8] != FILE_IDENTIFIER:
        raise ModelError("not a TFLite model (the file does not carry the 'TFL3' flatbuffer identifier)")
    limit = len(data)
    try:
        root = struct.unpack_from("<I", data, 0)[0]
        if root + 4 > limit:
            raise ModelError("model file is truncated: its root table lies past the end of the file")
        model = fb.Model.GetRootAs(data, 0)
        n_subgraphs = check_len(model.SubgraphsLength(), limit, "the subgraph list")
        if n_subgraphs == 0:
            raise ModelError("model has no subgraph: nothing to run")
        sg = model.Subgraphs(0)
        n_in = check_len(sg.InputsLength(), limit, "the input list")
        n_out = check_len(sg.OutputsLength(), limit, "the output list")
        inputs = [tensor_info(sg, int(sg.Inputs(i)), limit) for i in range(n_in)]
        outputs = [tensor_info(sg, int(sg.Outputs(i)), limit) for i in range(n_out)]
        n_ops = check_len(sg.OperatorsLength(), limit, "the operator list")
        op_types = [op_name(model, sg.Operators(i).OpcodeIndex()) for i in range(n_ops)]
        # A custom op's outputs say what a model's outputs are (TFLite_Detection_PostProcess: the task's).
        custom = {i: tuple(int(t) for t in sg.Operators(i).OutputsAsNumpy()) for i, op in enumerate(op_types)
                  if op.startswith("CUSTOM") and sg.Operators(i).OutputsLength()}  # fmt: skip
        output_tensors = tuple(int(sg.Outputs(i)) for i in range(n_out))
        output_ops = _output_ops(sg, op_types, output_tensors)
        op_versions = [int(model.OperatorCodes(sg.Operators(i).OpcodeIndex()).Version()) for i in range(n_ops)]
        metadata = _metadata(model, data, limit)
        description = (model.Description() or b"").decode("utf-8", errors="replace")
    except ModelError:
        raise
    except (struct.error, IndexError, ValueError, TypeError, OverflowError, MemoryError) as exc:
        raise ModelError(
            f"model file is truncated or corrupt ({type(exc).__name__} while reading its flatbuffer)"
        ) from None
    return TfliteInfo(n_subgraphs, inputs, outputs, op_types, op_versions, metadata, description, output_tensors,
                      custom, output_ops)  # fmt: skip


# Ops that move or retype values without computing them: what feeds an output is found behind them.
_PASS_THROUGH = ("RESHAPE", "SQUEEZE", "QUANTIZE", "DEQUANTIZE", "CAST")


def _output_ops(sg: fb.SubGraph, op_types: list[str], outputs: tuple[int, ...]) -> tuple[str, ...]:
    """Each output's producing op, behind reshapes and (de)quantization: SOFTMAX says class
    probabilities, AVERAGE_POOL_2D or MEAN a pooled feature vector (app/model/task.py reads them)."""
    producer: dict[int, int] = {}
    for i in range(len(op_types)):
        op = sg.Operators(i)
        for j in range(op.OutputsLength()):
            producer[int(op.Outputs(j))] = i
    found = []
    for tensor in outputs:
        name, seen = "", 0
        while tensor in producer and seen < 8:
            node = producer[tensor]
            name, seen = op_types[node], seen + 1
            if name not in _PASS_THROUGH or sg.Operators(node).InputsLength() == 0:
                break
            tensor = int(sg.Operators(node).Inputs(0))
        found.append(name)
    return tuple(found)
