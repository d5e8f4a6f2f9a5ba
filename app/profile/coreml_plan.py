"""The Core ML profile (macOS): MLComputePlan's device and estimated cost for every op, scaled to a measured run.

Core ML reports no per-op time. MLComputePlan (macOS 14.4+, coremltools 8+) gives each ML program
operation its preferred compute device and an estimated relative cost (`weight`, summing to 1; None
on Intel Macs). Each op's time here is that weight times the measured mean prediction: an estimate,
labelled as one. The rows are Core ML's operations (the .mlpackage is converted from the same
network, not from the .tflite), so they carry no TFLite node index.
"""

from __future__ import annotations

import sys

import numpy as np

from app.backends.base import ModelRunner, first_line
from app.backends.coreml.plan import COMPUTE_PLAN_MACOS, device_name, macos_version
from app.backends.options import ComputeUnits
from app.coreml_mil.coremltools_import import import_coremltools
from app.errors import BackendUnavailable
from app.model.spec import ModelSpec
from app.profile.gpu import time_runs
from app.profile.types import OpTime, Placement, Profile, TimeSource

NOT_ON_THIS_OS = "a Core ML profile needs macOS: MLComputePlan is part of the Core ML framework"


def plan_rows(session: ModelRunner, units: str) -> list[tuple[str, str, float | None]]:
    """(operator, device, estimated weight) for each operation of the main function, in program order."""
    if sys.platform != "darwin":
        raise BackendUnavailable(NOT_ON_THIS_OS)
    if macos_version() < COMPUTE_PLAN_MACOS:
        raise BackendUnavailable("a Core ML profile needs MLComputePlan: macOS 14.4 or later")
    ct = import_coremltools()
    from coremltools.models.compute_plan import MLComputePlan

    model = session._model  # the CoreMLSession's MLModel: its compiled path is what the plan reads
    try:
        plan = MLComputePlan.load_from_path(
            model.get_compiled_model_path(), compute_units=getattr(ct.ComputeUnit, ComputeUnits(units).coremltools_name)
        )
        rows = []
        for op in plan.model_structure.program.functions["main"].block.operations:
            if op.operator_name == "const" or op.operator_name.startswith("constexpr_"):
                continue
            usage = plan.get_compute_device_usage_for_mlprogram_operation(op)
            device = device_name(usage.preferred_compute_device if usage is not None else None)
            estimate = plan.get_estimated_cost_for_mlprogram_operation(op)
            rows.append((op.operator_name, device, None if estimate is None else float(estimate.weight)))
        return rows
    except Exception as exc:  # the native bridge raises plain Exception
        raise BackendUnavailable(f"MLComputePlan failed: {first_line(exc)}") from None


def profile_coreml(spec: ModelSpec, session: ModelRunner, units: str, runs: int) -> Profile:
    plan = plan_rows(session, units)
    wall_ms = float(np.mean(time_runs(session, spec, runs)))
    weights = [w for _, _, w in plan]
    known = all(w is not None for w in weights)
    ops = tuple(
        OpTime(
            order=i,
            node=None,
            op=name,
            kernel=f"Core ML on {device}",
            placement=Placement.CPU if device == "cpu" else Placement.ACCELERATOR,
            partition=None,
            ms=(weight or 0.0) * wall_ms if known else 0.0,
            source=TimeSource.ESTIMATE,
        )
        for i, (name, device, weight) in enumerate(plan)
    )
    not_reported = ["per-op time: Core ML reports none; times are MLComputePlan's estimated cost x the measured run"]
    if not known:
        not_reported.append("MLComputePlan's estimated cost: not reported on this Mac (Intel)")
    return Profile(
        model=spec.display_name,
        requested="coreml",
        used="coreml",
        accelerator=session.report.accelerator,
        threads=0,
        runs=runs,
        ops=ops,
        invoke_ms=None,
        wall_ms=wall_ms,
        not_reported=tuple(not_reported),
    )
