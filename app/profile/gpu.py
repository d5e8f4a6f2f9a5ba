"""The GPU profile: what LiteRT's GPU accelerator lets one measure, and no more.

LiteRT's WebGPU delegate implements no profile: with the runtime's profiler on, its kernel fails
every invoke ("UNIMPLEMENTED: Profile is not implemented", ml_drift/delegate/gpu_backend_webgpu.cc
via delegate_kernel.cc; seen here on ai-edge-litert 2.3.0). So the GPU model runs with the profiler
off and is timed whole; the nodes it leaves on the CPU are timed by the runtime's CPU profile of
the same model (same kernels, same threads); the GPU partitions get the rest, by difference.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from app.backends.base import ModelRunner
from app.coverage import NodeCoverage
from app.model.spec import ModelSpec
from app.profile.cpu import profile_cpu, sample_input, sample_inputs
from app.profile.timed_runs import WARMUP_RUNS, timed_runs
from app.profile.types import OpTime, Placement, Profile, TimeSource

NO_GPU_OP_PROFILE = (
    "per-op time inside a GPU partition: not implemented by the runtime (LiteRT's WebGPU delegate: "
    '"Profile is not implemented")'
)


def one_run(session: ModelRunner, spec: ModelSpec) -> Callable[[], object]:
    """One inference of `spec` on `session`, its inputs made once (app.profile.cpu.sample_inputs, as the
    CPU profile's). A classifier of one input runs its image through `run` (the classification path, as
    before); any other model every input through `run_all`."""
    if spec.is_image_classifier:
        return partial(session.run, sample_input(spec))
    return partial(session.run_all, sample_inputs(spec))


def time_runs(session: ModelRunner, spec: ModelSpec, runs: int) -> list[float]:
    return timed_runs(one_run(session, spec), runs, warmup=WARMUP_RUNS)


def profile_gpu(spec: ModelSpec, session: ModelRunner, threads: int, runs: int) -> Profile:
    """`session`: an open GPU session (app.backends.gpu.backend); its coverage says which nodes the GPU took."""
    report = session.report
    wall_ms = float(np.mean(time_runs(session, spec, runs)))
    coverage = report.coverage
    adapter = (
        f"GPU: {report.adapter}" + (" (software renderer)" if report.software else "") if report.adapter else "GPU"
    )
    profile = partial(
        Profile,
        model=spec.display_name,
        requested=report.requested,
        used="gpu",
        accelerator=f"{report.accelerator}; {adapter}",
        threads=threads,
        runs=runs,
        invoke_ms=None,
        wall_ms=wall_ms,
        fallback_reason=report.fallback_reason,
    )
    if coverage is None or any(n.delegated is None for n in coverage.nodes) or not coverage.nodes:
        whole = OpTime(
            0, None, "whole model", "GPU accelerator", Placement.ACCELERATOR, None, wall_ms, TimeSource.DIFFERENCE
        )
        return profile(
            ops=(whole,),
            not_reported=(NO_GPU_OP_PROFILE, "which nodes the GPU took: not reported by the runtime for this model"),
        )
    left = [n for n in coverage.nodes if not n.delegated]
    cpu = _CpuTimes({}, {}, {})
    notes = []
    if left:
        cpu = _cpu_times(spec, threads, runs)
        notes.append(
            f"the {len(left)} node(s) left on the CPU are timed by the runtime's CPU profile of the same model "
            f"({threads} thread(s)); the GPU partitions get the whole run minus those"
        )
    off_ms = sum(cpu.ms.get(n.index, 0.0) for n in left)
    gpu_ms = max(wall_ms - off_ms, 0.0)
    if off_ms > wall_ms:
        notes.append("the CPU ops' profile exceeds the whole GPU run: the GPU partitions' share is shown as 0")
    partitions = sorted({n.partition for n in coverage.nodes if n.delegated and n.partition is not None})
    not_reported = [NO_GPU_OP_PROFILE]
    if len(partitions) > 1:
        not_reported.append(f"how the GPU's time divides between its {len(partitions)} partitions: not reported")
    rows = _rows(coverage.nodes, partitions, gpu_ms, cpu)
    return profile(ops=tuple(rows), not_reported=tuple(not_reported), notes=tuple(notes))


@dataclass(frozen=True)
class _CpuTimes:
    """The runtime's CPU profile of the model, by node: the times of the nodes the GPU leaves on the CPU."""

    ms: dict[int, float]
    median: dict[int, float]
    kernel: dict[int, str]


def _cpu_times(spec: ModelSpec, threads: int, runs: int) -> _CpuTimes:
    """The CPU profile's op times summed per node (XNNPACK may run one node as several ops)."""
    ms: dict[int, float] = {}
    median: dict[int, float] = {}
    kernel: dict[int, str] = {}
    for op in profile_cpu(spec, threads, runs).ops:
        if op.node is not None:
            # Means: the GPU's share is the whole run's mean minus these (least-disturbed ones would
            # move time from the CPU rows into the GPU's)
            ms[op.node] = ms.get(op.node, 0.0) + (op.mean_ms if op.mean_ms is not None else op.ms)
            median[op.node] = median.get(op.node, 0.0) + (op.median_ms or 0.0)
            kernel.setdefault(op.node, op.kernel)
    return _CpuTimes(ms, median, kernel)


def _rows(nodes: Sequence[NodeCoverage], partitions: list[int], gpu_ms: float, cpu: _CpuTimes) -> list[OpTime]:
    """The profile's rows in execution order: the GPU's share as one row, each node left on the CPU with its time."""
    gpu_nodes = tuple(n.index for n in nodes if n.delegated)
    label = (
        f"GPU partition {partitions[0]}" if len(partitions) == 1 else f"GPU partitions {partitions[0]}-{partitions[-1]}"
    )
    rows: list[OpTime] = []
    gpu_row_done = False
    for n in nodes:
        if n.delegated:
            if not gpu_row_done:  # one row for the GPU's share, where its first partition starts
                kernel = "GPU accelerator (LiteRT WebGPU)"
                rows.append(
                    OpTime(
                        len(rows),
                        None,
                        label,
                        kernel,
                        Placement.ACCELERATOR,
                        partitions[0] if partitions else 0,
                        gpu_ms,
                        TimeSource.DIFFERENCE,
                        gpu_nodes,
                    )
                )
                gpu_row_done = True
            continue
        rows.append(
            OpTime(
                len(rows),
                n.index,
                n.op,
                cpu.kernel.get(n.index, "CPU kernel"),
                Placement.CPU,
                None,
                cpu.ms.get(n.index, 0.0),
                TimeSource.CPU_PROFILE,
                median_ms=cpu.median.get(n.index),
            )
        )
    return rows
