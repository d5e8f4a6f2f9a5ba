"""MLComputePlan: which device Core ML prefers for each op of a loaded model.

Shared by the bundled-package session and the partitioned one (app/backends/coreml/partitioned.py),
which is why it lives apart from both.
"""

from __future__ import annotations

import platform
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from app.backends.base import first_line

COMPUTE_PLAN_MACOS = (14, 4)
_DEVICE_NAMES = {
    "MLCPUComputeDevice": "cpu",
    "MLGPUComputeDevice": "gpu",
    "MLNeuralEngineComputeDevice": "neural_engine",
}


def macos_version() -> tuple[int, ...]:
    """(major, minor, ...) of this macOS; () elsewhere."""
    release = platform.mac_ver()[0] if sys.platform == "darwin" else ""
    return tuple(int(p) for p in release.split(".") if p.isdigit())


def device_name(device: Any) -> str:
    return _DEVICE_NAMES.get(type(device).__name__, "unknown") if device is not None else "unknown"


@dataclass(frozen=True)
class ComputePlan:
    devices: dict[str, int]  # MIL ops per preferred device ("cpu", "gpu", "neural_engine"), sorted by name
    cost: dict[str, float] | None  # Core ML's estimated share of the work per device; None: no estimates (Intel)
    cpu_ops: list[str]  # the MIL op types preferred on the CPU, sorted


def compute_plan(model: Any, compute_units: Any) -> tuple[ComputePlan | None, str | None]:
    """(the plan, None) from MLComputePlan, or (None, the reason there is no plan).

    Counts the ops of the main function that run: `const` and `constexpr_*` ops (weights,
    resolved when the model loads) are left out, so the fp16 and int8 models compare.
    """
    version = macos_version()
    if version < COMPUTE_PLAN_MACOS:
        shown = ".".join(map(str, version)) or "unknown"
        return None, f"no per-op device plan: MLComputePlan needs macOS 14.4 or later (this is macOS {shown})"
    try:
        from coremltools.models.compute_plan import MLComputePlan
    except ImportError:
        return None, "no per-op device plan: this coremltools has no MLComputePlan (coremltools 8 or later has it)"
    try:
        plan = MLComputePlan.load_from_path(model.get_compiled_model_path(), compute_units=compute_units)
        program = plan.model_structure.program
        if program is None or "main" not in program.functions:
            return None, "no per-op device plan: the model is not an ML program with a main function"
        devices: Counter[str] = Counter()
        cost: defaultdict[str, float] = defaultdict(float)
        cpu_ops: set[str] = set()
        for op in program.functions["main"].block.operations:
            if op.operator_name == "const" or op.operator_name.startswith("constexpr_"):
                continue
            usage = plan.get_compute_device_usage_for_mlprogram_operation(op)
            device = device_name(usage.preferred_compute_device if usage is not None else None)
            devices[device] += 1
            if device == "cpu":
                cpu_ops.add(op.operator_name)
            estimate = plan.get_estimated_cost_for_mlprogram_operation(op)  # None on Intel Macs
            if estimate is not None:
                cost[device] += float(estimate.weight)
    except Exception as exc:  # the native bridge raises plain Exception/RuntimeError
        return None, f"no per-op device plan: MLComputePlan failed ({first_line(exc)})"
    return ComputePlan(
        devices=dict(sorted(devices.items())),
        cost={k: round(v, 4) for k, v in sorted(cost.items())} or None,
        cpu_ops=sorted(cpu_ops),
    ), None
