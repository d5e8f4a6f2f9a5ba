"""Backend registry and the one way to open a session: with a visible fallback to CPU.

A requested backend that is unavailable or fails to open never fails silently:
either the session falls back to CPU and its report says so (requested vs used,
the reason in words), or, with `fallback=False`, BackendUnavailable is raised.
"""

from __future__ import annotations

from collections.abc import Mapping

from app.backends import preflight
from app.backends.base import Backend, CoreMLMode, DelegationReport, ModelRunner, first_line
from app.backends.coreml.backend import CoreMLBackend
from app.backends.cpu import CpuBackend
from app.backends.gpu.backend import GpuBackend
from app.backends.options import BackendOptions, Delegate
from app.backends.reference import ReferenceBackend
from app.coverage.coreml_rules import CoreMLOptions, predict
from app.errors import BackendUnavailable, ModelError
from app.model.spec import ModelSpec
from app.tflite.graph import read_graph

BACKENDS: dict[str, Backend] = {b.name: b for b in (CpuBackend(), GpuBackend(), CoreMLBackend(), ReferenceBackend())}

__all__ = ["BACKENDS", "Backend", "BackendOptions", "DelegationReport", "ModelRunner", "get_backend", "open_session"]


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise BackendUnavailable(f"unknown delegate '{name}' (known: {', '.join(BACKENDS)})") from None


def _predict_onto(report: DelegationReport, spec: ModelSpec) -> None:
    """A Core ML request's report: the delegate's predicted selection and, unless the session ran its own
    pieces (app/backends/coreml/partitioned.py), the pieces a Mac would run it in."""
    from app.coreml_mil.split import CoreMLPieces, coreml_pieces

    try:
        graph = read_graph(spec.content)
        report.predicted = predict(graph, CoreMLOptions())
    except ModelError:  # the runtime already accepted the file; a graph it runs but we cannot read says nothing
        return
    if report.coreml_pieces is None and report.coreml_mode is not CoreMLMode.EXPORTED_PACKAGE:
        try:
            report.coreml_pieces = coreml_pieces(graph, report.predicted)
        except (ModelError, ValueError) as exc:
            report.coreml_pieces = CoreMLPieces(not_split=first_line(exc))


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
            _predict_onto(session.report, spec)
        return session
    if not fallback:
        raise BackendUnavailable(f"the {requested} delegate is not available: {reason}")
    session = BACKENDS[Delegate.CPU].open(spec, options)
    session.report.requested = requested
    session.report.fallback_reason = reason
    session.report.warnings.append(f"fell back to CPU: {reason}")
    if requested == Delegate.COREML:
        _predict_onto(session.report, spec)
    return session
