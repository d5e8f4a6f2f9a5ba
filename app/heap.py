"""Keep a long session's resident memory from ratcheting up (glibc only).

glibc serves big allocations (> 128 KiB) with mmap and returns them to the system when freed,
but after each such free it raises that threshold to the freed size (up to 32 MiB). A live
session frees many multi-megabyte blocks (720p frames, a model's buffers on every switch),
so soon they all come from the heap, where freed space is kept: measured here, RSS climbed
from 152 to 356 MiB over 20 switches with no Python-visible leak, and oscillated around a
flat level with the threshold pinned (docs/reliability.md). Pinning it is what
MALLOC_MMAP_THRESHOLD_ does from the environment; this does it for every entry point.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys

_M_MMAP_THRESHOLD = -3  # from glibc's malloc.h
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value, now kept fixed


def pin_mmap_threshold() -> bool:
    """True when the threshold is now fixed; False where this is not glibc (macOS, Windows, musl)."""
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False
