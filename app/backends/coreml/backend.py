"""Core ML backend (macOS).

Core ML cannot load .tflite files, and the TFLite Core ML delegate exists only in the iOS runtime.
A float model runs the way the delegate would run it (app/backends/coreml/partitioned.py): its
delegated partitions as ML programs translated from the .tflite, the rest in LiteRT on the CPU.
The delegate takes no integer-quantized model, so a quantized one runs the converted .mlpackage
that sits beside it, when there is one (models/coreml_export.py writes the bundled int8 one).
Where macOS offers MLComputePlan (14.4+), the report says which device Core ML prefers for every
op; Core ML itself decides at load time and may still move work, so these are its plan, not a trace.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from app.backends.base import CoreMLMode, DelegationReport, first_line, time_first_inference
from app.backends.coreml.loading import coremltools_or_unavailable, warning_lines
from app.backends.coreml.package import check_package, has_manifest, package_name
from app.backends.coreml.plan import ComputePlan, compute_plan
from app.backends.options import BackendOptions, ComputeUnits, Delegate
from app.errors import BackendUnavailable, ModelError
from app.model.spec import ModelSpec, read_sidecar
from app.system.native_log import capture_stderr

if TYPE_CHECKING:
    from app.backends.coreml.partitioned import PartitionedCoreMLSession

INPUT_NAME = "input"
OUTPUT_NAME = "probabilities"


def find_mlpackage(spec: ModelSpec) -> Path | None:
    """The Core ML version of a TFLite model: the sidecar's "coreml" entry, else <stem>.mlpackage beside it."""
    candidates: list[Path] = []
    meta, _ = read_sidecar(spec.path.with_suffix(".json"))  # its problems were warned about when the model loaded
    if meta is not None and meta.sha256 in (None, spec.sha256) and meta.coreml is not None:
        name = package_name(meta.coreml)  # a name beside the model, never elsewhere
        if name:
            candidates.append(spec.path.parent / name)
    candidates.append(spec.path.with_suffix(".mlpackage"))
    return next((c for c in candidates if has_manifest(c)), None)


class CoreMLSession:
    def __init__(self, spec: ModelSpec, package: Path, units: str) -> None:
        ct = coremltools_or_unavailable()
        compute_units = getattr(ct.ComputeUnit, ComputeUnits(units).coremltools_name)
        self._spec = spec
        self._output_shapes = [t.shape for t in spec.outputs]
        started = time.perf_counter()
        native_log, caught = self._load(ct, package, compute_units)
        init_ms = (time.perf_counter() - started) * 1000
        quantized = self._bind(spec, package)
        plan, no_plan = compute_plan(self._model, compute_units)
        # The first prediction pays for Core ML's device-specific preparation.
        first_inference_ms = time_first_inference(self, spec)
        self.report = _package_report(
            package, units, plan, no_plan, quantized, caught, native_log, init_ms, first_inference_ms
        )

    def _load(self, ct: Any, package: Path, compute_units: Any) -> tuple[list[str], list[warnings.WarningMessage]]:
        """The package loaded by Core ML; its native log and the Python warnings while it loaded."""
        try:
            with capture_stderr() as log, warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self._model = ct.models.MLModel(str(package), compute_units=compute_units)
        except Exception as exc:  # coremltools raises plain Exception for unreadable packages
            raise BackendUnavailable(f"Core ML cannot load {package.name}: {first_line(exc)}") from None
        if self._model.__proxy__ is None:
            error = getattr(self._model, "_framework_error", None)
            raise BackendUnavailable(
                f"Core ML cannot load {package.name}: {first_line(error)}"
                if error
                else f"Core ML cannot load {package.name} (Core ML specification version "
                f"{self._model.get_spec().specificationVersion} needs macOS 13 or later, or coremltools "
                "lacks its native module)"
            )
        return log.lines(), caught

    def _bind(self, spec: ModelSpec, package: Path) -> bool:
        """The package's input and output by name, its input shape checked against the .tflite's; how an
        integer model's input is dequantized for it. Whether the model is integer-quantized."""
        description = self._model.get_spec().description
        self._input_name = _pick(description.input, INPUT_NAME, package, "input")
        self._output_name = _pick(description.output, OUTPUT_NAME, package, "output")
        feature = next(f for f in description.input if f.name == self._input_name)
        shape = [int(d) for d in feature.type.multiArrayType.shape]
        expected = [1, spec.input_height, spec.input_width, 3]
        if shape != expected:
            raise BackendUnavailable(f"{package.name} takes input shape {shape}; the .tflite model takes {expected}")
        quantized = spec.input.dtype in ("int8", "uint8")
        self._scale = float(spec.input.scale or 1.0) if quantized else None
        self._zero_point = float(spec.input.zero_point or 0) if quantized else 0.0
        return quantized

    def run_all(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """An exported Core ML package is a classifier's: one image in, class scores out."""
        if len(inputs) != 1 or len(self._output_shapes) != 1:
            raise ModelError("an exported Core ML package runs single-input, single-output classifiers only")
        return [self.run(inputs[0]).reshape(self._output_shapes[0])]

    def run(self, input_tensor: np.ndarray) -> np.ndarray:
        if self._scale is not None:
            x = (input_tensor.astype(np.float32) - self._zero_point) * np.float32(self._scale)
        else:
            x = np.ascontiguousarray(input_tensor, dtype=np.float32)
        try:
            outputs = self._model.predict({self._input_name: x})
        except Exception as exc:  # coremltools raises plain Exception
            raise ModelError(f"Core ML failed to run the model: {first_line(exc)}") from None
        return np.asarray(outputs[self._output_name], dtype=np.float32).reshape(-1)

    def close(self) -> None:
        self._model = None


def _package_report(
    package: Path,
    units: str,
    plan: ComputePlan | None,
    no_plan: str | None,
    quantized: bool,
    caught: list[warnings.WarningMessage],
    native_log: list[str],
    init_ms: float,
    first_inference_ms: float,
) -> DelegationReport:
    """An exported package's report: MLComputePlan's counts where macOS has it, and what Core ML warned."""
    report_warnings = warning_lines(caught)
    options: dict[str, object] = {"compute_units": units, "mlpackage": package.name}
    total = delegated = None
    cpu_ops: list[str] = []
    if plan is not None:
        devices = plan.devices
        total = sum(devices.values())
        delegated = devices.get("gpu", 0) + devices.get("neural_engine", 0)
        cpu_ops = plan.cpu_ops
        options["compute_plan"] = devices
        if plan.cost:
            options["compute_plan_cost"] = plan.cost  # Core ML's estimated share of the work
    else:
        report_warnings.append(no_plan or "no per-op device plan")
    if quantized:
        report_warnings.append(
            f"Core ML runs {package.name}: int8 weights with fp16 activations; the .tflite model "
            "quantizes activations too, so scores differ slightly"
        )
    return DelegationReport(
        requested="coreml",
        used="coreml",
        accelerator=f"Core ML (compute units: {units})",
        init_ms=init_ms,
        first_inference_ms=first_inference_ms,
        nodes_total=total,
        nodes_delegated=delegated,
        cpu_ops=tuple(cpu_ops),
        fully_accelerated=None if total is None else delegated == total,
        options=options,
        coreml_mode=CoreMLMode.EXPORTED_PACKAGE,
        warnings=tuple(report_warnings),
        native_log=tuple(native_log),
    )


def _pick(features: Any, preferred: str, package: Path, what: str) -> str:
    names: list[str] = [f.name for f in features]
    if preferred in names:
        return preferred
    if len(names) == 1:
        return names[0]
    raise BackendUnavailable(f"{package.name} has {len(names)} {what}s ({', '.join(names)}); expected one")


class CoreMLBackend:
    name = Delegate.COREML
    label = "Core ML"

    def availability(self) -> str | None:
        if sys.platform != "darwin":
            return "Core ML needs macOS"
        if importlib.util.find_spec("coremltools") is None:
            return "coremltools is not installed (pip install coremltools)"
        return None

    def open(self, spec: ModelSpec, options: BackendOptions) -> CoreMLSession | PartitionedCoreMLSession:
        units = options.compute_units or ComputeUnits.ALL
        if units not in tuple(ComputeUnits):
            raise ValueError(f"Core ML compute units must be one of {', '.join(ComputeUnits)}, got {units!r}")
        reason = self.availability()
        if reason:
            raise BackendUnavailable(reason)
        if spec.input.dtype == "float32":
            from app.backends.coreml.partitioned import PartitionedCoreMLSession

            return PartitionedCoreMLSession(spec, units, options.precision, options.cpu_threads)
        package = find_mlpackage(spec)
        if package is None:
            raise BackendUnavailable(
                "no Core ML version of this model: the TFLite Core ML delegate takes no integer-quantized model; "
                f"put a converted {spec.path.stem}.mlpackage beside {spec.path.name}"
            )
        check_package(package)  # a damaged package is refused here, in one line, before coremltools reads it
        return CoreMLSession(spec, package, units)
