"""One NVML session (nvidia-ml-py's `pynvml`) shared by every reader in the process: the resource
sampler's utilisation probe and the power counters' clocks, power and energy read through the same
initialisation and device handles, opened once and shut down once by their owner.

Absent NVML (not installed, no driver, no NVIDIA GPU) is a reason, never an exception.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProcessListing:
    """What NVML lists of a set of processes: the first GPU that lists one of them (None: none listed),
    their used memory in bytes summed over every GPU, and whether a listed one had its memory withheld
    (NVML_VALUE_NOT_AVAILABLE: Windows WDDM, some containers)."""

    first_gpu: int | None
    used_bytes: int = 0
    hidden: bool = False

    @property
    def used_mb(self) -> float | None:
        """MiB; None where none is listed or NVML withholds every figure."""
        if self.first_gpu is None or (self.hidden and self.used_bytes == 0):
            return None
        return self.used_bytes / (1024 * 1024)


class NvmlSession:
    """`module` is pynvml once NVML has a device (None with `reason` otherwise), `handles` one per GPU.
    `close()` shuts NVML down once; the readers built on it never do."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.module: Any = None  # pynvml ships no type information
        self.handles: list[Any] = []
        self.names: list[str] = []  # "index: name"
        self._lock = threading.Lock()
        try:
            import pynvml
        except ImportError:
            self.reason = "NVML not installed (pip install 'delegate-scope[nvidia]')"
            return
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound/DriverNotLoaded, OSError: no NVIDIA driver here
            self.reason = f"no NVIDIA driver here (NVML: {exc})"
            return
        try:
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self.names = [f"{i}: {_text(pynvml.nvmlDeviceGetName(h))}" for i, h in enumerate(self.handles)]
        except pynvml.NVMLError as exc:
            self.reason = f"NVML could not open the GPUs: {exc}"
            self.handles, self.names = [], []
        if not self.handles:
            self.reason = self.reason or "no NVIDIA GPU here"
            pynvml.nvmlShutdown()
            return
        self.module = pynvml

    @property
    def open(self) -> bool:
        return self.module is not None

    def list_processes(self, pids: Iterable[int]) -> ProcessListing:
        """Where `pids` hold a GPU context (compute or graphics/Vulkan) and the memory NVML charges them.
        Inside a container NVML may report host pids: then none is listed."""
        nvml, wanted = self.module, set(pids)
        if nvml is None:
            return ProcessListing(None)
        first, total, hidden = None, 0, False
        for index, handle in enumerate(self.handles):
            seen: set[int] = set()  # a process with both kinds of context is listed twice, with one figure
            for listing in (nvml.nvmlDeviceGetComputeRunningProcesses, nvml.nvmlDeviceGetGraphicsRunningProcesses):
                try:
                    processes = listing(handle)
                except nvml.NVMLError:
                    continue
                for p in processes:
                    if p.pid not in wanted or p.pid in seen:
                        continue
                    seen.add(p.pid)
                    first = index if first is None else first
                    used = getattr(p, "usedGpuMemory", None)
                    if used is None:
                        hidden = True
                    else:
                        total += int(used)
        return ProcessListing(first, total, hidden)

    def close(self) -> None:
        with self._lock:
            if self.module is not None:
                self.module.nvmlShutdown()
                self.module = None
                self.reason = "NVML closed"


def _text(name: bytes | str) -> str:
    return name.decode() if isinstance(name, bytes) else name
