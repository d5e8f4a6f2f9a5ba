"""A model with ops outside the fuzzed set is opened once in a child process before this one.

LiteRT's kernels do not all check a damaged file: the seeded fuzz campaign
(`python -m benchmarks.fuzz.models --vision`, docs/reliability.md) found mutated copies of a Keras LSTM
that corrupt the heap or crash with SIGSEGV inside the runtime (UNIDIRECTIONAL_SEQUENCE_LSTM), which
no Python `except` can catch and which would take the window and a recording down with them. The
ops of every model the campaigns mutated thousands of times without a signal (the bundled and
third-party classifiers, the detector, segmenter, pose, landmark, face and audio models) open in
this process directly; a graph with any other op is first opened, allocated and run once on zero
inputs in a child, and a child killed by a signal (or silent past a deadline) makes the model a
ModelError here. Checked once per file content per process.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

from app.errors import ModelError
from app.model.spec import ModelSpec

CHECK_TIMEOUT_S = 60
# Ops of the models fuzzed without a signal (benchmarks/fuzz/models.py, with and without --vision).
FUZZED_CLEAN = frozenset({
    "ADD", "ARG_MAX", "AVERAGE_POOL_2D", "CAST", "COMPLEX_ABS", "CONCATENATION", "CONV_2D",
    "CUSTOM:TFLite_Detection_PostProcess", "DEPTHWISE_CONV_2D", "DEQUANTIZE", "DIV", "FLOOR_DIV", "FULLY_CONNECTED",
    "GATHER", "GATHER_ND", "LOG", "LOGISTIC", "MAX_POOL_2D", "MEAN", "MUL", "PACK", "PAD", "QUANTIZE", "RELU",
    "RESHAPE", "RESIZE_BILINEAR", "RFFT2D", "SOFTMAX", "SPLIT", "SQRT", "STRIDED_SLICE", "SUB", "UNPACK",
})  # fmt: skip

_checked: dict[str, str | None] = {}  # sha256 -> None (opened fine in the child) or why not
_lock = threading.Lock()


def needs_check(spec: ModelSpec) -> bool:
    return not set(spec.op_types) <= FUZZED_CLEAN


def check(spec: ModelSpec) -> None:
    """Raise ModelError when the runtime dies opening or running `spec` in a child process."""
    if not needs_check(spec):
        return
    with _lock:
        if spec.sha256 not in _checked:
            _checked[spec.sha256] = _run_child(spec)
        problem = _checked[spec.sha256]
    if problem is not None:
        raise ModelError(problem)


def _run_child(spec: ModelSpec) -> str | None:
    shapes = ";".join("x".join(map(str, t.shape)) for t in spec.inputs)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "app.backends.preflight_child", shapes],
            input=spec.content,
            capture_output=True,
            timeout=CHECK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"the LiteRT runtime did not open and run this model within {CHECK_TIMEOUT_S} s in a check process"
    if proc.returncode < 0:
        try:
            name = signal.Signals(-proc.returncode).name
        except ValueError:
            name = f"signal {-proc.returncode}"
        ops = ", ".join(sorted(set(spec.op_types) - FUZZED_CLEAN))
        return (
            f"the LiteRT runtime crashed ({name}) opening or running this model in a check process: the file is "
            f"damaged or one of its ops ({ops}) takes values its kernel does not check"
        )
    return None  # opened, or refused with an error the in-process open reports in its own words
