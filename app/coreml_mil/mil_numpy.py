"""A numpy evaluator of the MIL ops the translator emits, written from the MIL op specifications.

Core ML runs ML programs on macOS only, so on other systems this is how a translated partition's
numerics are checked against LiteRT: every op of the converted program (after coremltools' passes,
as saved in the .mlpackage) is evaluated here from its specification, the docstrings of
coremltools.converters.mil.mil.ops.defs (https://apple.github.io/coremltools/source/
coremltools.converters.mil.mil.ops.defs.html), module and class named at each op below.

Precision: float32 values are computed in float32 (sums in float64 where numpy's einsum would,
then rounded); an op whose inputs are float16 (an fp16 program) computes in float32 and rounds its
result to float16, i.e. fp16 storage between ops. Core ML's own kernels may accumulate differently;
that difference is not modelled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


class UnknownOp(ValueError):
    pass


def _val(op: Any, name: str, default: Any = None) -> Any:
    """A constant input's value (pymil fills defaulted inputs in as consts)."""
    var = op.inputs.get(name)
    if var is None:
        return default
    return var.val if var.val is not None else default


def _out_dtype(*arrays: np.ndarray) -> Any:
    return np.float16 if any(a.dtype == np.float16 for a in arrays) else np.float32


def _f32(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


def _spatial_pads(
    op: Any, x: np.ndarray, kernel: tuple[int, ...], strides: list[int], dilations: list[int]
) -> list[int]:
    """iOS15.conv / iOS15.pool pad_type: valid, custom (pad[2i], pad[2i+1] before/after spatial dim i),
    same (d_out = ceil(d_in / stride), the odd row/column after) and same_lower (the odd one before)."""
    pad_type = str(_val(op, "pad_type", "valid"))
    n = len(kernel)
    if pad_type == "valid":
        return [0] * (2 * n)
    if pad_type == "custom":
        return [int(p) for p in _val(op, "pad", np.zeros(2 * n))]
    pads = []
    for i in range(n):
        size = x.shape[2 + i]
        effective = (kernel[i] - 1) * dilations[i] + 1
        out = -(-size // strides[i])
        total = max((out - 1) * strides[i] + effective - size, 0)
        small, large = total // 2, total - total // 2
        pads += [large, small] if pad_type == "same_lower" else [small, large]
    return pads


def _windows(x: np.ndarray, kernel: tuple[int, ...], strides: list[int], dilations: list[int]) -> np.ndarray:
    """(N, C, Ho, Wo, KH, KW) windows of an already padded (N, C, H, W) array."""
    dk = [(kernel[i] - 1) * dilations[i] + 1 for i in range(2)]
    view = sliding_window_view(x, dk, axis=(2, 3))
    return view[:, :, :: strides[0], :: strides[1], :: dilations[0], :: dilations[1]]


def _conv(op: Any, x: np.ndarray) -> np.ndarray:
    # iOS15.conv.conv: x (n, C_in, H, W), weight (C_out, C_in/groups, KH, KW), bias (C_out),
    # strides, pad_type/pad, dilations, groups; output (n, C_out, H_out, W_out).
    w = _val(op, "weight")
    bias = _val(op, "bias")
    groups = int(_val(op, "groups", 1))
    strides = [int(s) for s in _val(op, "strides", [1, 1])]
    dilations = [int(d) for d in _val(op, "dilations", [1, 1])]
    kernel = (w.shape[2], w.shape[3])
    pads = _spatial_pads(op, x, kernel, strides, dilations)
    xp = np.pad(_f32(x), ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    win = _windows(xp, kernel, strides, dilations)
    n, c, ho, wo, kh, kw = win.shape
    win = win.reshape(n, groups, c // groups, ho, wo, kh, kw)
    wg = _f32(w).reshape(groups, w.shape[0] // groups, c // groups, kh, kw)
    out = np.einsum("ngchwij,gocij->ngohw", win, wg, optimize=True).reshape(n, w.shape[0], ho, wo)
    if bias is not None:
        out = out + _f32(bias).reshape(1, -1, 1, 1)
    return out.astype(_out_dtype(x, w))


def _conv_transpose(op: Any, x: np.ndarray) -> np.ndarray:
    # iOS15.conv.conv_transpose: weight (C_in, C_out/groups, KH, KW); with pad_type custom,
    # D_out = (D_in - 1) * stride + (K - 1) * dilation + 1 - pad_before - pad_after.
    w = _val(op, "weight")
    bias = _val(op, "bias")
    if int(_val(op, "groups", 1)) != 1:
        raise UnknownOp("conv_transpose with groups > 1 is not evaluated")
    strides = [int(s) for s in _val(op, "strides", [1, 1])]
    dilations = [int(d) for d in _val(op, "dilations", [1, 1])]
    pad_type = str(_val(op, "pad_type", "valid"))
    if pad_type not in ("custom", "valid"):
        raise UnknownOp(f"conv_transpose pad_type {pad_type} is not evaluated (the translator emits custom)")
    pads = [int(p) for p in _val(op, "pad", [0, 0, 0, 0])] if pad_type == "custom" else [0, 0, 0, 0]
    n, _, h, width = x.shape
    kh, kw = w.shape[2], w.shape[3]
    full = [(h - 1) * strides[0] + (kh - 1) * dilations[0] + 1, (width - 1) * strides[1] + (kw - 1) * dilations[1] + 1]
    out = np.zeros((n, w.shape[1], full[0], full[1]), np.float32)
    xf, wf = _f32(x), _f32(w)
    for i in range(kh):
        for j in range(kw):
            contribution = np.einsum("nchw,co->nohw", xf, wf[:, :, i, j])
            top, left = i * dilations[0], j * dilations[1]
            rows = slice(top, top + (h - 1) * strides[0] + 1, strides[0])
            cols = slice(left, left + (width - 1) * strides[1] + 1, strides[1])
            out[:, :, rows, cols] += contribution
    out = out[:, :, pads[0] : full[0] - pads[1], pads[2] : full[1] - pads[3]]
    shape = _val(op, "output_shape")
    if shape is not None and list(out.shape[2:]) != [int(s) for s in list(shape)[-2:]]:
        raise ValueError(f"conv_transpose: computed {out.shape}, output_shape says {list(shape)}")
    if bias is not None:
        out = out + _f32(bias).reshape(1, -1, 1, 1)
    return out.astype(_out_dtype(x, w))


def _pool(op: Any, x: np.ndarray, kind: str) -> np.ndarray:
    # iOS15.pool.avg_pool / max_pool: kernel_sizes, strides, pad_type/pad; avg_pool's
    # exclude_padding_from_average averages over the window's unpadded elements only.
    kernel = tuple(int(k) for k in _val(op, "kernel_sizes"))
    strides = [int(s) for s in _val(op, "strides", [1, 1])]
    if _val(op, "ceil_mode", False):
        raise UnknownOp("pools with ceil_mode are not evaluated")
    pads = _spatial_pads(op, x, kernel, strides, [1, 1])
    widths = ((0, 0), (0, 0), (pads[0], pads[1]), (pads[2], pads[3]))
    if kind == "max":
        win = _windows(np.pad(_f32(x), widths, constant_values=-np.inf), kernel, strides, [1, 1])
        return win.max(axis=(4, 5)).astype(_out_dtype(x))
    win = _windows(np.pad(_f32(x), widths), kernel, strides, [1, 1])
    total = win.sum(axis=(4, 5), dtype=np.float64)
    if _val(op, "exclude_padding_from_average", False):
        ones = np.pad(np.ones((1, 1, *x.shape[2:]), np.float32), widths)
        count = _windows(ones, kernel, strides, [1, 1]).sum(axis=(4, 5))
    else:
        count = float(kernel[0] * kernel[1])
    return (total / count).astype(_out_dtype(x))


def _grid(size_in: int, size_out: int, mode: str) -> np.ndarray:
    # iOS15.image_resizing.resize_bilinear, Notes: the grid points of each sampling_mode.
    i = np.arange(size_out, dtype=np.float64)
    if mode in ("STRICT_ALIGN_CORNERS", "ALIGN_CORNERS"):
        if size_out == 1:
            points = np.full(1, 0.0 if mode == "STRICT_ALIGN_CORNERS" else (size_in - 1) / 2.0)
        else:
            points = i * (size_in - 1) / (size_out - 1)
    elif mode == "DEFAULT":
        spacing = (size_in - size_in / size_out) / (size_out - 1) if size_out > 1 else 0.0
        points = i * spacing
    elif mode == "UNALIGN_CORNERS":
        spacing = size_in / size_out
        points = i * spacing + 0.5 * spacing - 0.5
    elif mode == "OFFSET_CORNERS":
        delta = max(1, size_in - 1) / size_out
        points = 0.5 * delta + i * delta
    else:
        raise UnknownOp(f"resize_bilinear sampling_mode {mode}")
    return np.clip(points, 0, size_in - 1)


def _lerp_axis(x: np.ndarray, axis: int, points: np.ndarray) -> np.ndarray:
    low = np.floor(points).astype(np.int64)
    high = np.minimum(low + 1, x.shape[axis] - 1)
    frac = (points - low).astype(np.float32)
    shape = [1] * x.ndim
    shape[axis] = -1
    frac = frac.reshape(shape)
    return np.take(x, low, axis=axis) * (1 - frac) + np.take(x, high, axis=axis) * frac


def _resize_bilinear(op: Any, x: np.ndarray) -> np.ndarray:
    mode = str(_val(op, "sampling_mode", "DEFAULT"))
    h_out = int(_val(op, "target_size_height", 1))
    w_out = int(_val(op, "target_size_width", 1))
    xf = _f32(x)
    y = _lerp_axis(xf, x.ndim - 2, _grid(x.shape[-2], h_out, mode))
    y = _lerp_axis(y, x.ndim - 1, _grid(x.shape[-1], w_out, mode))
    return y.astype(_out_dtype(x))


def _pad(op: Any, x: np.ndarray) -> np.ndarray:
    # iOS15.tensor_operation.pad: pad (2 * N) before/after the last N dimensions; mode constant
    # (constant_val), reflect (the edge not repeated), replicate.
    pad = [int(p) for p in _val(op, "pad")]
    mode = str(_val(op, "mode", "constant"))
    n = len(pad) // 2
    widths = [(0, 0)] * (x.ndim - n) + [(pad[2 * i], pad[2 * i + 1]) for i in range(n)]
    if mode == "constant":
        return np.pad(x, widths, constant_values=x.dtype.type(_val(op, "constant_val", 0.0)))
    if mode == "reflect":
        return np.pad(x, widths, mode="reflect")
    if mode == "replicate":
        return np.pad(x, widths, mode="edge")
    raise UnknownOp(f"pad mode {mode}")


def _softmax(op: Any, x: np.ndarray) -> np.ndarray:
    # iOS15.activation.softmax: exp(x) / sum(exp(x)) along axis.
    axis = int(_val(op, "axis", -1))
    xf = _f32(x)
    e = np.exp(xf - xf.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(_out_dtype(x))


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[Any, np.ndarray], np.ndarray]:
    return lambda op, x: fn(_f32(x)).astype(_out_dtype(x))


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[Any, dict], np.ndarray]:
    # iOS15.elementwise_binary: numpy-style broadcasting.
    return lambda op, v: fn(_f32(v["x"]), _f32(v["y"])).astype(_out_dtype(v["x"], v["y"]))


_DTYPES = {"fp16": np.float16, "fp32": np.float32, "int32": np.int32}

# Ops of one input x: the spec module each follows.
_X_OPS: dict[str, Callable[[Any, np.ndarray], np.ndarray]] = {
    "conv": _conv,  # iOS15.conv
    "conv_transpose": _conv_transpose,  # iOS15.conv
    "avg_pool": lambda op, x: _pool(op, x, "avg"),  # iOS15.pool
    "max_pool": lambda op, x: _pool(op, x, "max"),  # iOS15.pool
    "resize_bilinear": _resize_bilinear,  # iOS15.image_resizing
    "pad": _pad,  # iOS15.tensor_operation
    "softmax": _softmax,  # iOS15.activation
    "relu": _unary(lambda x: np.maximum(x, 0)),  # iOS15.activation: max(x, 0)
    "relu6": _unary(lambda x: np.minimum(np.maximum(x, 0), 6)),  # iOS15.activation: min(max(x, 0), 6)
    "tanh": _unary(np.tanh),  # iOS15.elementwise_unary
    "sigmoid": _unary(lambda x: 1 / (1 + np.exp(-x))),  # iOS15.activation
    "identity": lambda op, x: x,  # iOS15.tensor_transformation
    "transpose": lambda op, x: np.transpose(x, [int(p) for p in _val(op, "perm")]),  # iOS15.tensor_transformation
    "reshape": lambda op, x: np.reshape(x, [int(s) for s in _val(op, "shape")]),  # iOS15.tensor_transformation
    "squeeze": lambda op, x: np.squeeze(x, tuple(int(a) for a in _val(op, "axes"))),  # iOS15.tensor_transformation
    "expand_dims": lambda op, x: np.expand_dims(x, tuple(int(a) for a in _val(op, "axes"))),
    "cast": lambda op, x: x.astype(_DTYPES[str(_val(op, "dtype"))]),  # iOS15.elementwise_unary
    # iOS15.activation.clip: min(max(x, alpha), beta)
    "clip": lambda op, x: np.minimum(np.maximum(_f32(x), _val(op, "alpha")), _val(op, "beta")).astype(_out_dtype(x)),
    # iOS15.activation.sigmoid_hard: min(max(alpha * x + beta, 0), 1)
    "sigmoid_hard": lambda op, x: np.minimum(np.maximum(_val(op, "alpha") * _f32(x) + _val(op, "beta"), 0), 1).astype(
        _out_dtype(x)
    ),
    # iOS15.reduction.reduce_mean
    "reduce_mean": lambda op, x: (
        _f32(x)
        .mean(axis=tuple(int(a) for a in _val(op, "axes")), keepdims=bool(_val(op, "keep_dims", False)))
        .astype(_out_dtype(x))
    ),
}
_BINARY: dict[str, Callable[[Any, dict], np.ndarray]] = {
    "add": _binary(np.add),
    "sub": _binary(np.subtract),
    "mul": _binary(np.multiply),
    "real_div": _binary(np.divide),
    "maximum": _binary(np.maximum),
    "minimum": _binary(np.minimum),
}


def _linear(op: Any, x: np.ndarray) -> np.ndarray:
    # iOS15.linear.linear: x @ weight^T + bias, weight (D_out, D_in).
    w = _val(op, "weight")
    bias = _val(op, "bias")
    out = _f32(x) @ _f32(w).T
    if bias is not None:
        out = out + _f32(bias)
    return out.astype(_out_dtype(x, w))


_X_OPS["linear"] = _linear


def evaluate(function: Any, feeds: Mapping[str, object], every_value: bool = False) -> Mapping[str, np.ndarray]:
    """Run a pymil Function on `feeds` (input name -> array); its outputs by name (every op's output
    by name with `every_value`)."""
    values: dict[str, np.ndarray] = {name: np.asarray(v) for name, v in feeds.items()}

    def value(var: Any) -> np.ndarray:
        if var.name in values:
            return values[var.name]
        if var.val is not None:
            return np.asarray(var.val)
        raise ValueError(f"{var.name} has no value yet")

    for op in function.operations:
        kind = op.op_type
        if kind == "const":
            values[op.outputs[0].name] = np.asarray(op.outputs[0].val)
            continue
        if kind in _X_OPS:
            result = _X_OPS[kind](op, value(op.inputs["x"]))
        elif kind in _BINARY:
            result = _BINARY[kind](op, {"x": value(op.inputs["x"]), "y": value(op.inputs["y"])})
        elif kind == "concat":
            # iOS15.tensor_operation.concat: values joined along axis (interleave false).
            if _val(op, "interleave", False):
                raise UnknownOp("interleaved concat is not evaluated")
            parts = [value(v) for v in op.inputs["values"]]
            result = np.concatenate(parts, axis=int(_val(op, "axis"))).astype(_out_dtype(*parts))
        else:
            raise UnknownOp(f"MIL op '{kind}' ({op.name}) has no numpy evaluation")
        values[op.outputs[0].name] = np.asarray(result)
    if every_value:
        return values
    return {var.name: values[var.name] for var in function.outputs}
