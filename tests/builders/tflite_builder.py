"""Build tiny .tflite graphs with the TFLite schema's own flatbuffer object API (no TensorFlow).

Each coverage rule gets a model that differs from a supported one in exactly the thing
the rule looks at (an op version, a tensor type, a constant, an option), which the
TensorFlow converter cannot always be made to produce on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as fb

_TYPES = {"float32": fb.TensorType.FLOAT32, "int8": fb.TensorType.INT8, "uint8": fb.TensorType.UINT8,
          "int32": fb.TensorType.INT32, "int64": fb.TensorType.INT64, "float16": fb.TensorType.FLOAT16,
          "bool": fb.TensorType.BOOL}  # fmt: skip


@dataclass
class GraphBuilder:
    tensors: list[fb.TensorT] = field(default_factory=list)
    buffers: list[fb.BufferT] = field(default_factory=lambda: [fb.BufferT()])  # buffer 0: the empty sentinel
    codes: list[tuple[int, int, str | None]] = field(default_factory=list)
    operators: list[fb.OperatorT] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    def tensor(self, shape: tuple[int, ...], dtype: str = "float32", data: np.ndarray | None = None,
               name: str | None = None, quant: tuple[float, int] | None = None) -> int:  # fmt: skip
        t = fb.TensorT()
        t.shape = list(shape)
        t.type = _TYPES[dtype]
        t.name = name or f"t{len(self.tensors)}"
        t.buffer = 0
        if data is not None:
            b = fb.BufferT()
            b.data = np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8)
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        if quant is not None:
            q = fb.QuantizationParametersT()
            q.scale, q.zeroPoint = [quant[0]], [quant[1]]
            t.quantization = q
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(self, values: Any, dtype: str = "float32") -> int:
        arr = np.asarray(values, dtype=dtype)
        return self.tensor(arr.shape, dtype, arr)

    def input(self, shape: tuple[int, ...], dtype: str = "float32", quant: tuple[float, int] | None = None) -> int:
        index = self.tensor(shape, dtype, quant=quant)
        self.inputs.append(index)
        return index

    def op(self, name: str, inputs: list[int], outputs: list[int], options: Any = None,
           version: int = 1) -> None:  # fmt: skip
        builtin = getattr(fb.BuiltinOperator, name)
        key = (builtin, version, None)
        if key not in self.codes:
            self.codes.append(key)
        o = fb.OperatorT()
        o.opcodeIndex = self.codes.index(key)
        o.inputs, o.outputs = list(inputs), list(outputs)
        if options is not None:
            o.builtinOptionsType = getattr(fb.BuiltinOptions, type(options).__name__[:-1])
            o.builtinOptions = options
        self.operators.append(o)

    def custom(self, code: str, inputs: list[int], outputs: list[int]) -> None:
        """A CUSTOM op named `code` (no options): resolved only when the runtime has a kernel of that name."""
        key = (fb.BuiltinOperator.CUSTOM, 1, code)
        if key not in self.codes:
            self.codes.append(key)
        o = fb.OperatorT()
        o.opcodeIndex = self.codes.index(key)
        o.inputs, o.outputs = list(inputs), list(outputs)
        self.operators.append(o)

    def build(self, outputs: list[int] | None = None) -> bytes:
        sg = fb.SubGraphT()
        sg.tensors, sg.operators = self.tensors, self.operators
        sg.inputs, sg.outputs = self.inputs, outputs if outputs is not None else self.outputs
        model = fb.ModelT()
        model.version = 3
        model.subgraphs = [sg]
        model.buffers = self.buffers
        codes = []
        for builtin, version, custom in self.codes:
            c = fb.OperatorCodeT()
            c.builtinCode = builtin
            c.deprecatedBuiltinCode = min(builtin, 127)
            c.version = version
            if custom is not None:
                c.customCode = custom
            codes.append(c)
        model.operatorCodes = codes
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


def options(kind: str, **fields: Any) -> Any:
    """fb.<kind>T() with `fields` set, e.g. options("SoftmaxOptions", beta=2.0)."""
    o = getattr(fb, f"{kind}T")()
    for k, v in fields.items():
        setattr(o, k, v)
    return o
