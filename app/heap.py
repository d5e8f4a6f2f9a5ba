"""Hand memory freed by a switch back to the system (glibc only).

glibc serves big allocations (> 128 KiB) with mmap and unmaps them when freed, but after
each such free it raises that threshold to the freed size (up to 32 MiB). A live session
frees multi-megabyte blocks all the time (720p frames, a model's buffers on every switch),
so soon they all come from the heap, where freed space is kept: measured here, RSS climbed
from 157 to 325 MiB over 30 live switches with no Python-visible leak (docs/reliability.md).

Pinning the threshold (MALLOC_MMAP_THRESHOLD_) stops that but makes every frame a fresh
mmap: its page faults cost 20% of int8 throughput here. So the threshold stays dynamic (frames
reuse heap memory at no cost) and the heap is trimmed after a switch instead, when a
session's or pipeline's memory has just been freed: malloc_trim returns free heap pages.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import sys
from functools import cache


@cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):
        return None


def release_free_memory() -> bool:
    """Return the heap's free pages to the system; False where this is not glibc (macOS,
    Windows, musl: their allocators return memory on their own terms)."""
    libc = _libc()
    return bool(libc and libc.malloc_trim(0))
