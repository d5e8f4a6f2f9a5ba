"""CPU backend: LiteRT Interpreter with the XNNPACK delegate (applied by default)."""

from __future__ import annotations

import time

import numpy as np
from ai_edge_litert.interpreter import Interpreter

from app.backends.base import DelegationReport, first_line, time_first_inference
from app.backends.options import BackendOptions, Delegate
from app.coverage.measured import from_ops_details
from app.errors import ModelError
from app.model.spec import ModelSpec
from app.system.native_log import capture_stderr

_STALE_REFERENCE = "reference to internal data"
_STALE_REFERENCE_WAITS_MS = (1, 2, 4, 8, 16, 32)  # 63 ms in all, then the error stands


class CpuSession:
    def __init__(self, spec: ModelSpec, threads: int) -> None:
        started = time.perf_counter()
        try:
            with capture_stderr() as log:
                self._interpreter = Interpreter(model_content=spec.content, num_threads=threads)
                inp = self._interpreter.get_input_details()[0]
                if list(inp["shape"]) != [1, spec.input_height, spec.input_width, 3]:
                    # A dynamic batch dimension: fix it to one image.
                    self._interpreter.resize_input_tensor(inp["index"], [1, spec.input_height, spec.input_width, 3])
                self._interpreter.allocate_tensors()
            self._input_index = inp["index"]
            self._output_index = self._interpreter.get_output_details()[0]["index"]
        except (ValueError, RuntimeError, UnicodeError, TypeError, IndexError) as exc:
            # The wrapper's own Python (tensor names, details) can trip on corrupt bytes too.
            raise ModelError(f"the LiteRT runtime refused the model: {first_line(exc)}") from None
        init_ms = (time.perf_counter() - started) * 1000
        try:
            coverage = from_ops_details(self._interpreter._get_ops_details(), spec.op_versions, spec.content)
        except (ValueError, RuntimeError, UnicodeError, TypeError, IndexError, KeyError) as exc:
            raise ModelError(
                f"the LiteRT runtime refused the model: cannot list its nodes ({first_line(exc)})"
            ) from None
        partitions = coverage.partitions
        self.report = DelegationReport(
            requested="cpu",
            used="cpu",
            accelerator=f"XNNPACK (CPU, {threads} thread{'s' if threads != 1 else ''})"
            if partitions
            else f"LiteRT built-in kernels (CPU, {threads} thread{'s' if threads != 1 else ''})",
            init_ms=init_ms,
            nodes_total=coverage.nodes_total,
            nodes_delegated=coverage.nodes_delegated,
            partitions=partitions,
            cpu_ops=sorted({n.op for n in coverage.left_on_cpu}),
            fully_accelerated=coverage.nodes_delegated == coverage.nodes_total,
            coverage=coverage,
            options={"threads": threads},
            native_log=log.lines(),
        )
        # The first invoke pays for XNNPACK's weight packing.
        self.report.first_inference_ms = time_first_inference(self, spec)

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


class CpuBackend:
    name = Delegate.CPU
    label = "CPU (XNNPACK)"

    def availability(self) -> str | None:
        return None

    def open(self, spec: ModelSpec, options: BackendOptions) -> CpuSession:
        return CpuSession(spec, options.cpu_threads)
