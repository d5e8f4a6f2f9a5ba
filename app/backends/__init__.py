"""Backend registry: every backend the app knows, with why it is unavailable where it is."""

from __future__ import annotations

from app.backends.base import Backend, Session, SessionReport
from app.backends.cpu import CpuBackend
from app.errors import BackendUnavailable

BACKENDS: dict[str, Backend] = {b.name: b for b in (CpuBackend(),)}

__all__ = ["BACKENDS", "Backend", "Session", "SessionReport", "get_backend"]


def get_backend(name: str) -> Backend:
    try:
        backend = BACKENDS[name]
    except KeyError:
        raise BackendUnavailable(f"unknown delegate '{name}' (known: {', '.join(BACKENDS)})") from None
    reason = backend.availability()
    if reason:
        raise BackendUnavailable(f"delegate '{name}' is not available here: {reason}")
    return backend
