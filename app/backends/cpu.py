"""CPU backend: LiteRT Interpreter with the XNNPACK delegate (applied by default)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
from ai_edge_litert.interpreter import Interpreter

from app.backends import preflight
from app.backends.base import DelegationReport, first_line, refusal, time_first_inference
from app.backends.options import BackendOptions, Delegate
from app.coverage import Coverage
from app.coverage.measured import from_ops_details
from app.errors import ModelError
from app.model.spec import ModelSpec
from app.system.native_log import capture_stderr

_STALE_REFERENCE = "reference to internal data"
_STALE_REFERENCE_WAITS_MS = (1, 2, 4, 8, 16, 32)  # 63 ms in all, then the error stands


class CpuSession:
    def __init__(self, spec: ModelSpec, threads: int) -> None:
        started = time.perf_counter()
        native_log = self._open(spec, threads)
        init_ms = (time.perf_counter() - started) * 1000
        coverage = self._coverage(spec)
        # The first invoke pays for XNNPACK's weight packing.
        first_inference_ms = time_first_inference(self, spec)
        self.report = _report(threads, coverage, init_ms, first_inference_ms, native_log)

    def _open(self, spec: ModelSpec, threads: int) -> tuple[str, ...]:
        """The interpreter, allocated for the spec's input shapes; the runtime's log while it opened."""
        try:
            with capture_stderr() as log:
                self._interpreter = Interpreter(model_content=spec.content, num_threads=threads)
                details = self._interpreter.get_input_details()
                for detail, wanted in zip(details, spec.inputs, strict=False):
                    if tuple(detail["shape"]) != wanted.shape:
                        # A dynamic dimension: fixed to one image, or to --input-shape.
                        self._interpreter.resize_tensor_input(detail["index"], list(wanted.shape))
                self._interpreter.allocate_tensors()
            image = spec.image_input if spec.image_input is not None else 0
            self._input_indices = [d["index"] for d in details]
            self._input_index = details[image]["index"]
            self._output_indices = [d["index"] for d in self._interpreter.get_output_details()]
            primary = spec.task.layout.output if spec.task is not None and hasattr(spec.task.layout, "output") else 0
            self._output_index = self._output_indices[primary]
        except (ValueError, RuntimeError, UnicodeError, TypeError, IndexError) as exc:
            # The wrapper's own Python (tensor names, details) can trip on corrupt bytes too.
            raise ModelError(refusal(exc, spec)) from None
        return tuple(log.lines())

    def _coverage(self, spec: ModelSpec) -> Coverage:
        """Node by node, what XNNPACK took: the interpreter's own list of its nodes."""
        try:
            return from_ops_details(self._interpreter._get_ops_details(), spec.op_versions, spec.content)
        except (ValueError, RuntimeError, UnicodeError, TypeError, IndexError, KeyError) as exc:
            raise ModelError(
                f"the LiteRT runtime refused the model: cannot list its nodes ({first_line(exc)})"
            ) from None

    def run_all(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Every input set (model order), one run, every output (copies, model order)."""
        try:
            for index, tensor in zip(self._input_indices, inputs, strict=True):
                self._interpreter.set_tensor(index, tensor)
            self._invoke()
            return [self._interpreter.get_tensor(i) for i in self._output_indices]
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"the LiteRT runtime failed to run the model: {first_line(exc)}") from None

    def run(self, input_tensor: np.ndarray) -> np.ndarray:
        try:
            self._interpreter.set_tensor(self._input_index, input_tensor)
            self._invoke()
            out: np.ndarray = self._interpreter.get_tensor(self._output_index)
            return out.reshape(-1)
        except (RuntimeError, ValueError) as exc:  # ValueError: a corrupt model left a tensor unallocated
            raise ModelError(f"the LiteRT runtime failed to run the model: {first_line(exc)}") from None

    def _invoke(self) -> None:
        """invoke(), riding out the wrapper's false alarm.

        Interpreter.invoke() refuses to run while anything but the Interpreter references its
        native wrapper (its guard against numpy views of buffers invoke may move; this session
        never takes such views). A call in flight holds its arguments in a tuple naming the
        wrapper, and an object walk in another thread (gc.get_objects: a memory profiler, a
        debugger) can keep that tuple alive after the call returns, for as long as the walk's
        list lives. Waiting lets the walk finish; a reference that stays is real and raises.
        """
        for wait_ms in _STALE_REFERENCE_WAITS_MS:
            try:
                self._interpreter.invoke()
                return
            except RuntimeError as exc:
                if _STALE_REFERENCE not in str(exc):
                    raise
            time.sleep(wait_ms / 1000)
        self._interpreter.invoke()

    def close(self) -> None:
        self._interpreter = None


def _report(
    threads: int, coverage: Coverage, init_ms: float, first_inference_ms: float, native_log: tuple[str, ...]
) -> DelegationReport:
    partitions = coverage.partitions
    plural = "s" if threads != 1 else ""
    return DelegationReport(
        requested="cpu",
        used="cpu",
        accelerator=f"XNNPACK (CPU, {threads} thread{plural})"
        if partitions
        else f"LiteRT built-in kernels (CPU, {threads} thread{plural})",
        init_ms=init_ms,
        first_inference_ms=first_inference_ms,
        nodes_total=coverage.nodes_total,
        nodes_delegated=coverage.nodes_delegated,
        partitions=partitions,
        cpu_ops=tuple(sorted({n.op for n in coverage.left_on_cpu})),
        fully_accelerated=coverage.nodes_delegated == coverage.nodes_total,
        coverage=coverage,
        options={"threads": threads},
        native_log=native_log,
    )


class CpuBackend:
    name = Delegate.CPU
    label = "CPU (XNNPACK)"

    def availability(self) -> str | None:
        return None

    def open(self, spec: ModelSpec, options: BackendOptions) -> CpuSession:
        preflight.check(spec)  # also for callers that open the CPU directly (inspect, profile)
        return CpuSession(spec, options.cpu_threads)
