"""`inspect`: what each backend would take of one model, without running a source.

CPU coverage is measured by opening the model in LiteRT (XNNPACK applied); GPU
coverage is measured in a child process where a GPU adapter exists (software
renderers included, flagged) and otherwise says why it is unavailable; Core ML
coverage is predicted from the TFLite Core ML delegate's rules on every OS.

A model this runtime cannot load because it needs a custom op the runtime has no kernel for (PoseNet's
`PosenetDecoderOp`) is still inspected: what the file says (its nodes, the Core ML prediction, which
reads only the graph) stands, and the measured sections say they are not measurable here and why.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from app.backends import get_backend
from app.backends.gpu.backend import probe
from app.backends.options import BackendOptions
from app.coverage import Coverage
from app.coverage.coreml_rules import CoreMLOptions, predict
from app.errors import ModelError
from app.model.spec import ModelSpec
from app.tflite.graph import read_graph

GPU_CHILD_TIMEOUT_S = 120


# The refusal app/backends/base.py `refusal` words for a custom op the runtime's resolver lacks.
_NEEDS_CUSTOM_OP = re.compile(
    r"^the model needs the custom op '(?P<op>[^']+)' \((?P<where>[^)]*)\), which this LiteRT runtime does not have"
)


@dataclass(frozen=True)
class MissingCustomOp:
    """A custom op the model needs and this LiteRT runtime has no kernel for: no backend here runs the model."""

    op: str  # its custom code, as the file names it ("PosenetDecoderOp")
    nodes: tuple[int, ...]  # the nodes of that op, in execution order
    sentence: str  # "the model needs the custom op 'X' (node N), which this LiteRT runtime does not have"

    def not_measurable(self) -> str:
        """The reason a measured coverage gives in place of its figures."""
        return f"not measurable here: {self.sentence}"

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "nodes": list(self.nodes), "reason": self.sentence}


def missing_custom_op(refusal: str, spec: ModelSpec) -> MissingCustomOp | None:
    """The custom op a runtime's refusal (`ModelError`'s text) names as missing; None for any other refusal."""
    match = _NEEDS_CUSTOM_OP.match(refusal)
    if match is None:
        return None
    op = match["op"]
    nodes = tuple(i for i, name in enumerate(spec.op_types) if name == f"CUSTOM:{op}")
    return MissingCustomOp(op, nodes, match[0])


@dataclass(frozen=True)
class ModelCoverage:
    cpu: Coverage
    gpu: Coverage
    coreml: Coverage
    gpu_adapter: str | None = None
    gpu_software: bool = False
    missing_op: MissingCustomOp | None = None  # set: the runtime cannot load the model; cpu and gpu say so

    def by_delegate(self) -> Mapping[str, Coverage]:
        return {"cpu": self.cpu, "gpu": self.gpu, "coreml": self.coreml}

    def to_dict(self) -> dict[str, Any]:
        return {name: c.to_dict() for name, c in self.by_delegate().items()}


def unavailable(delegate: str, reason: str, nodes_total: int) -> Coverage:
    return Coverage(delegate, "unavailable", reason, nodes_total, None, None, None, None, ())


def cpu_coverage_of(spec: ModelSpec) -> Coverage:
    session = get_backend("cpu").open(spec, BackendOptions(threads=1))
    try:
        coverage = session.report.coverage
    finally:
        session.close()
    if coverage is None:  # every CPU session reports it; a missing one is a bug, not a model problem
        raise RuntimeError("the CPU session reported no coverage")
    return coverage


def gpu_coverage_of(spec: ModelSpec) -> tuple[Coverage, str | None, bool]:
    """(coverage, adapter, software). Measured in a child process; unavailable, with the reason, when
    the GPU cannot start here or the child fails."""
    status = probe()
    if not status.ok:
        reason = f"no GPU here: {status.reason}"
        return unavailable("gpu", reason, len(spec.op_types)), None, False
    proc: subprocess.CompletedProcess[str] | None = None
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "app.backends.gpu.coverage_child", str(spec.path)],
            capture_output=True,
            text=True,
            timeout=GPU_CHILD_TIMEOUT_S,
        )
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except subprocess.TimeoutExpired:
        result = {"ok": False, "reason": f"the GPU did not open the model within {GPU_CHILD_TIMEOUT_S} s"}
    except (ValueError, IndexError, OSError) as exc:
        result = {"ok": False, "reason": _child_failure(proc, exc)}
    if not result.get("ok") or not isinstance(result.get("coverage"), dict):
        reason = f"the GPU accelerator did not open this model: {result.get('reason', 'no coverage reported')}"
        return unavailable("gpu", reason, len(spec.op_types)), None, False
    coverage = Coverage.from_dict(result["coverage"])
    software = bool(result.get("software"))
    if software:
        note = f"on a SOFTWARE RENDERER ({result.get('adapter')}): the 'GPU' work runs on the CPU; "
        coverage = replace(coverage, reason=note + (coverage.reason or ""))
    return coverage, result.get("adapter"), software


def _child_failure(proc: subprocess.CompletedProcess[str] | None, exc: Exception) -> str:
    """Why the GPU coverage child gave no answer: a signal by name (LiteRT's GPU accelerator aborts the
    process on some models, e.g. a failed CHECK while it reads a node's inputs), else its exit code."""
    if proc is None:
        return f"the GPU child process could not start ({exc})"
    code = proc.returncode
    if code < 0 and -code in {s.value for s in signal.Signals}:
        return f"the GPU child process was killed by {signal.Signals(-code).name} while the runtime opened the model"
    return f"the GPU child process failed (exit code {code})"


def coreml_coverage_of(spec: ModelSpec, options: CoreMLOptions) -> Coverage:
    try:
        graph = read_graph(spec.content)
    except ModelError as exc:
        raise ModelError(f"{spec.path.name}: {exc}") from None
    return predict(graph, options)


def inspect_model(spec: ModelSpec, options: CoreMLOptions, gpu: bool = True) -> ModelCoverage:
    coreml = coreml_coverage_of(spec, options)
    try:
        cpu = cpu_coverage_of(spec)
    except ModelError as exc:
        missing = missing_custom_op(str(exc), spec)
        if missing is None:  # a damaged file, an op version the runtime lacks: inspect has nothing to show
            raise
        # Every backend here opens the model through the same LiteRT op resolver: the GPU accelerator
        # would leave the custom node to a CPU kernel that does not exist, so it is not measured either.
        reason, total = missing.not_measurable(), len(spec.op_types)
        return ModelCoverage(unavailable("cpu", reason, total), unavailable("gpu", reason, total), coreml,
                             missing_op=missing)  # fmt: skip
    if gpu:
        gpu_cov, adapter, software = gpu_coverage_of(spec)
    else:
        gpu_cov, adapter, software = unavailable("gpu", "not measured (--no-gpu)", len(spec.op_types)), None, False
    return ModelCoverage(cpu, gpu_cov, coreml, adapter, software)
