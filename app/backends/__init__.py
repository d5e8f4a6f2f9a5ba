"""Backend registry and the one way to open a session: with a visible fallback to CPU.

A requested backend that is unavailable or fails to open never fails silently:
either the session falls back to CPU and its report says so (requested vs used,
the reason in words), or, with `fallback=False`, BackendUnavailable is raised.
"""

from __future__ import annotations

from app.backends.base import Backend, Session, SessionReport
from app.backends.coreml import CoreMLBackend
from app.backends.cpu import CpuBackend
from app.backends.gpu import GpuBackend
from app.backends.reference import ReferenceBackend
from app.errors import BackendUnavailable
from app.model import ModelSpec

BACKENDS: dict[str, Backend] = {b.name: b for b in (CpuBackend(), GpuBackend(), CoreMLBackend(), ReferenceBackend())}

__all__ = ["BACKENDS", "Backend", "Session", "SessionReport", "get_backend", "open_session"]


def get_backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise BackendUnavailable(f"unknown delegate '{name}' (known: {', '.join(BACKENDS)})") from None


def open_session(spec: ModelSpec, requested: str, options: dict, fallback: bool = True) -> Session:
    """Open `spec` on `requested`; on failure fall back to CPU (reported) unless `fallback` is False."""
    backend = get_backend(requested)
    if requested == "cpu":
        return backend.open(spec, options)
    try:
        return backend.open(spec, options)
    except BackendUnavailable as exc:
        reason = str(exc)
    if not fallback:
        raise BackendUnavailable(f"the {requested} delegate is not available: {reason}")
    session = BACKENDS["cpu"].open(spec, options)
    session.report.requested = requested
    session.report.fallback_reason = reason
    session.report.warnings.append(f"fell back to CPU: {reason}")
    return session
