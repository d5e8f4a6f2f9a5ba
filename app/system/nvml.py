"""One NVML session (nvidia-ml-py's `pynvml`) shared by every reader in the process: the resource
sampler's utilisation probe and the power counters' clocks, power and energy read through the same
initialisation and device handles, opened once and shut down once by their owner.

Absent NVML (not installed, no driver, no NVIDIA GPU) is a reason, never an exception.
"""

from __future__ import annotations

import threading
from typing import Any


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

    def close(self) -> None:
        with self._lock:
            if self.module is not None:
                self.module.nvmlShutdown()
                self.module = None
                self.reason = "NVML closed"


def _text(name: bytes | str) -> str:
    return name.decode() if isinstance(name, bytes) else name
