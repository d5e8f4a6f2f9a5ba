"""The process's GPU memory for the window's memory plot: NVML's per-process figure (app/metrics/memory.py
gpu_mb), for this process and its children (the GPU session may run in a child of its own), read at most
once a second through one NVML session of its own. Qt-free."""

from __future__ import annotations

import time

from app.metrics.memory import gpu_mb
from app.system.nvml import NvmlSession

READ_EVERY_S = 1.0  # NVML lists every process on every GPU: a second apart is enough for a plot


class GpuMemoryReader:
    """`read()` gives (MiB, None) where NVML reports this app's GPU memory, else (None, why)."""

    def __init__(self, every_s: float = READ_EVERY_S) -> None:
        self._every_s = every_s
        self._session: NvmlSession | None = None
        self._last: tuple[float | None, str | None] = (None, None)
        self._read_at: float | None = None

    def read(self) -> tuple[float | None, str | None]:
        now = time.monotonic()
        if self._read_at is not None and now - self._read_at < self._every_s:
            return self._last
        self._read_at = now
        if self._session is None:
            self._session = NvmlSession()  # opened once: absent NVML is a reason, never an exception
        self._last = gpu_mb(session=self._session)
        return self._last

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        self._read_at = None
