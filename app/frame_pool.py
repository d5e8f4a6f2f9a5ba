"""Frame buffers reused once nothing refers to them any more.

A live source makes a multi-megabyte frame 30-200 times a second on its capture thread, and
whichever thread drops the frame last frees it. glibc serves such blocks from its arenas once
its mmap threshold has risen past their size (app/heap.py), and the constant churn of 2.7 MB
blocks between smaller long-lived ones fragments the heap: in the 30-minute window soak the
memory glibc held free grew without bound (docs/reliability.md). Recycling a few buffers keeps
the big blocks out of the allocator altogether.

A buffer is free again when the pool holds the only reference to it. Every user of a frame's
pixels holds one for as long as it uses them: the Frame itself, numpy views (a crop refers to
its base), the video view that paints it. So a buffer is never handed out while in use.
Only the thread that owns the source calls `take`.
"""

from __future__ import annotations

import sys

import numpy as np

# References to a pooled buffer when nothing else holds it: the pool's list, the loop
# variable, and getrefcount's own argument.
_UNUSED_REFS = 3


class FramePool:
    def __init__(self, keep: int = 8) -> None:
        self._buffers: list[np.ndarray] = []
        self._keep = keep  # enough for every frame in flight (slot, inference, display, A/B) plus one
        self.reused = 0
        self.allocated = 0

    def take(self, shape: tuple[int, ...], dtype: np.dtype | type = np.uint8) -> np.ndarray:
        """A C-contiguous array of `shape` that nothing else refers to (contents undefined)."""
        dtype = np.dtype(dtype)
        for buffer in self._buffers:
            if buffer.shape == shape and buffer.dtype == dtype and sys.getrefcount(buffer) == _UNUSED_REFS:
                self.reused += 1
                return buffer
        buffer = np.empty(shape, dtype)
        self.allocated += 1
        if len(self._buffers) >= self._keep:
            # Frames of another size (a camera that came back different) or more in flight
            # than expected: forget the oldest buffer; whoever still holds it keeps it alive.
            self._buffers.pop(0)
        self._buffers.append(buffer)
        return buffer
