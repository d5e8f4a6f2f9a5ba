"""What `delegates` reports: every backend, whether it can run here, and why not."""

from __future__ import annotations

from dataclasses import dataclass

from app.backends import BACKENDS
from app.backends.gpu.backend import probe
from app.backends.options import default_threads


@dataclass(frozen=True)
class GpuFacts:
    """What the GPU probe found (the GPU backend's status only)."""

    adapter: str | None
    software: bool  # a renderer on the CPU (llvmpipe, SwiftShader): runs only when allowed
    devices: tuple[str, ...]  # the Vulkan loader's devices, described


@dataclass(frozen=True)
class DelegateStatus:
    """One backend: whether it can run here, and why not; `to_dict()` is `delegates --json`."""

    name: str
    label: str
    available: bool
    reason: str | None  # not available: why
    threads: int | None = None  # the CPU backend: its default thread count
    gpu: GpuFacts | None = None  # the GPU backend: what its probe found

    @property
    def software(self) -> bool:
        return self.gpu is not None and self.gpu.software

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"name": self.name, "label": self.label, "available": self.available}
        d["reason"] = self.reason
        if self.threads is not None:
            d["threads"] = self.threads
        if self.gpu is not None:
            d.update(adapter=self.gpu.adapter, software=self.gpu.software, devices=list(self.gpu.devices))
        return d


def delegate_statuses() -> list[DelegateStatus]:
    statuses = []
    for backend in BACKENDS.values():
        reason = backend.availability()
        threads = default_threads() if backend.name == "cpu" else None
        gpu = None
        if backend.name == "gpu":
            result = probe()
            gpu = GpuFacts(result.adapter, result.software, tuple(result.devices))
        statuses.append(DelegateStatus(backend.name, backend.label, reason is None, reason, threads, gpu))
    return statuses
