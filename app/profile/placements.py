"""The CPU profile of a model LiteRT's profiler cannot take (its CompiledModel refuses it, or an output is
sized only when the model runs): the model runs through LiteRT's Interpreter as the CPU backend runs it,
every node gets its place as that runtime reports it (in an XNNPACK partition or on a built-in kernel),
and the whole run is measured. Per-op times are not reported rather than guessed."""

from __future__ import annotations

import numpy as np

from app.backends import open_session
from app.backends.options import BackendOptions, Delegate
from app.model.spec import ModelSpec
from app.profile.timed_runs import WARMUP_RUNS, timed_runs
from app.profile.types import OpTime, Placement, Profile, TimeSource


def profile_placements(spec: ModelSpec, threads: int, runs: int, reason: str, inputs: list[np.ndarray]) -> Profile:
    """`inputs`: one run's, every input in model order (app.profile.cpu.sample_inputs)."""
    session = open_session(spec, Delegate.CPU, BackendOptions(threads=threads))
    try:
        walls = timed_runs(lambda: session.run_all(inputs), runs, warmup=WARMUP_RUNS)
        coverage = session.report.coverage
    finally:
        session.close()
    nodes = coverage.nodes if coverage is not None else ()
    rows = []
    for order, node in enumerate(nodes):
        delegated = bool(node.delegated)
        rows.append(
            OpTime(
                order=order,
                node=node.index,
                op=node.op,
                kernel="XNNPACK" if delegated else node.op,
                placement=Placement.ACCELERATOR if delegated else Placement.CPU,
                partition=node.partition if delegated else None,
                ms=0.0,
                source=TimeSource.NOT_REPORTED,
            )
        )
    return Profile.on_cpu(
        spec.display_name,
        threads,
        tuple(rows),
        runs=runs,
        invoke_ms=None,
        wall_ms=float(np.mean(walls)),
        not_reported=(
            f"per-op time: LiteRT's profiler cannot take this model ({reason}); each node's place is the "
            "Interpreter's own (as the CPU backend runs the model) and the whole run is measured",
        ),
        notes=("the measured run is LiteRT's Interpreter with XNNPACK, every input fed and every output read",),
    )
