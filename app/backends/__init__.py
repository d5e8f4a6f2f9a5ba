"""Backend registry and the one way to open a session: with a visible fallback to CPU.

A requested backend that is unavailable or fails to open never fails silently:
either the session falls back to CPU and its report says so (requested vs used,
the reason in words), or, with `fallback=False`, BackendUnavailable is raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from app.backends import preflight
from app.backends.base import Backend, CoreMLMode, DelegationReport, ModelRunner, first_line
from app.backends.coreml.backend import CoreMLBackend
from app.backends.cpu import CpuBackend
from app.backends.gpu.backend import GpuBackend
from app.backends.options import BackendOptions, Delegate
from app.backends.reference import ReferenceBackend
from app.coverage.coreml_rules import CoreMLOptions, predict
from app.errors import BackendUnavailable, DelegateScopeError, ModelError, RunFailed
from app.model.spec import ModelSpec
from app.system.thread_cpu import started_by
from app.tflite.graph import read_graph

BACKENDS: dict[str, Backend] = {b.name: b for b in (CpuBackend(), GpuBackend(), CoreMLBackend(), ReferenceBackend())}

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendOptions",
    "DelegationReport",
    "ModelRunner",
    "continue_on_cpu",
    "fell_back",
    "get_backend",
    "mid_run_reason",
    "open_session",
    "run_ends",
]


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise BackendUnavailable(f"unknown delegate '{name}' (known: {', '.join(BACKENDS)})") from None


def fell_back(report: DelegationReport, requested: str, reason: str, *, warn: bool = True) -> DelegationReport:
    """A CPU session's report once it stands in for `requested`: the one way a report changes after opening
    (the session then holds the new one). `warn`: the reason is also one of its warnings, as the CLI and JSON
    print them; the live pipeline says it as a fallback event instead."""
    warnings = (*report.warnings, f"fell back to CPU: {reason}") if warn else report.warnings
    return replace(report, requested=requested, fallback_reason=reason, warnings=warnings)


def mid_run_reason(used: str, exc: BaseException) -> str:
    return f"{used} failed mid-run: {exc}"


def run_ends(used: str, exc: DelegateScopeError, fallback: bool) -> DelegateScopeError | None:
    """The mid-run policy, one home for the commands and the live pipeline: a session on `used` failed with
    `exc`. None: the run goes on on the CPU. Else the error that ends it: on the CPU the failure is the
    model's (as it came); with fallback off an accelerator's is BackendUnavailable (exit 5, as when it
    cannot open)."""
    if used == Delegate.CPU:
        return exc
    if not fallback:
        return BackendUnavailable(f"the {used} delegate failed mid-run: {exc}")
    return None


def continue_on_cpu(
    session: ModelRunner,
    exc: RunFailed,
    spec: ModelSpec,
    requested: str,
    options: BackendOptions | Mapping[str, object] | None,
    fallback: bool,
) -> tuple[ModelRunner, set[int]]:
    """An accelerator that failed mid-run (a lost GPU device): the rest on the CPU, as the live pipeline goes on
    (app/pipeline/worker.py). The failed session is closed; the CPU session that replaces it and the native
    threads its runtime started come back. A failure on the CPU is the model's (raised as it came); with
    `fallback` off, the accelerator's is BackendUnavailable (exit 5, as when it cannot open)."""
    used = session.report.used
    stop = run_ends(used, exc, fallback)
    if stop is not None:
        raise stop from None
    session.close()
    cpu, runtime_threads = started_by(lambda: open_session(spec, Delegate.CPU, options))
    cpu.report = fell_back(cpu.report, requested, mid_run_reason(used, exc))
    return cpu, runtime_threads


def _with_prediction(report: DelegationReport, spec: ModelSpec) -> DelegationReport:
    """A Core ML request's report: the delegate's predicted selection and, unless the session ran its own
    pieces (app/backends/coreml/partitioned.py), the pieces a Mac would run it in."""
    from app.coreml_mil.split import CoreMLPieces, coreml_pieces

    try:
        graph = read_graph(spec.content)
        predicted = predict(graph, CoreMLOptions())
    except ModelError:  # the runtime already accepted the file; a graph it runs but we cannot read says nothing
        return report
    pieces = report.coreml_pieces
    if pieces is None and report.coreml_mode is not CoreMLMode.EXPORTED_PACKAGE:
        try:
            pieces = coreml_pieces(graph, predicted)
        except (ModelError, ValueError) as exc:
            pieces = CoreMLPieces(not_split=first_line(exc))
    return replace(report, predicted=predicted, coreml_pieces=pieces)


def open_session(
    spec: ModelSpec, requested: str, options: BackendOptions | Mapping[str, object] | None, fallback: bool = True
) -> ModelRunner:
    """Open `spec` on `requested`; on failure fall back to CPU (reported) unless `fallback` is False.

    A Core ML request carries the TFLite Core ML delegate's predicted coverage either way, so
    a fallback off macOS still says what a Mac would have delegated."""
    backend = get_backend(requested)
    options = BackendOptions.of(options)
    preflight.check(spec)  # a model whose ops could crash the runtime: opened in a child first
    if requested == Delegate.CPU:
        return backend.open(spec, options)
    try:
        session = backend.open(spec, options)
    except BackendUnavailable as exc:
        reason = str(exc)
    else:
        if requested == Delegate.COREML:
            session.report = _with_prediction(session.report, spec)
        return session
    if not fallback:
        # A model the runtime itself refuses (a custom op it lacks) is the problem on any delegate: its
        # ModelError, raised by this open, wins over the delegate's absence.
        BACKENDS[Delegate.CPU].open(spec, options).close()
        raise BackendUnavailable(f"the {requested} delegate is not available: {reason}")
    session = BACKENDS[Delegate.CPU].open(spec, options)
    session.report = fell_back(session.report, requested, reason)
    if requested == Delegate.COREML:
        session.report = _with_prediction(session.report, spec)
    return session
