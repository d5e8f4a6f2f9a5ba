"""What `delegates` reports: every backend, whether it can run here, and why not."""

from __future__ import annotations

from app.backends import BACKENDS
from app.backends.gpu.backend import probe
from app.backends.options import default_threads


def delegate_statuses() -> list[dict]:
    statuses = []
    for backend in BACKENDS.values():
        reason = backend.availability()
        status: dict = {"name": backend.name, "label": backend.label, "available": reason is None, "reason": reason}
        if backend.name == "cpu":
            status["threads"] = default_threads()
        if backend.name == "gpu":
            result = probe()
            status.update(
                adapter=result.adapter,
                software=result.software,
                devices=list(result.devices),
            )
        statuses.append(status)
    return statuses
