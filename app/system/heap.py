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
import re
import sys
from dataclasses import dataclass
from functools import cache


@cache
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        # For heap_stats: declared once here, not on every sample.
        if hasattr(libc, "mallinfo2"):  # glibc >= 2.33
            libc.mallinfo2.restype = _MallInfo2
        libc.open_memstream.restype = ctypes.c_void_p
        libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
        libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
        libc.fclose.argtypes = [ctypes.c_void_p]
        libc.free.argtypes = [ctypes.c_void_p]
        return libc
    except (OSError, AttributeError):
        return None


def release_free_memory() -> bool:
    """Return the heap's free pages to the system; False where this is not glibc (macOS,
    Windows, musl: their allocators return memory on their own terms)."""
    libc = _libc()
    return bool(libc and libc.malloc_trim(0))


M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)


def limit_arenas(count: int) -> bool:
    """Let threads created from now on share at most `count` glibc arenas; False off glibc.

    glibc gives each thread that allocates its own arena, up to 8 per core. In the window,
    every switch replaces the pipeline's three threads, and each new thread may land in any
    arena: each arena then keeps its own high-water mark of frames and model buffers as free
    space. In window soaks run side by side, RSS in the same state kept climbing round after
    round with glibc's default (11 arenas) and levelled off after the first round with 2, at
    no cost in throughput measured (docs/reliability.md).
    Call it before the worker threads start: arenas that already exist stay."""
    libc = _libc()
    return bool(libc and count > 0 and libc.mallopt(M_ARENA_MAX, count))


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


@dataclass(frozen=True)
class HeapStats:
    """glibc's own account of the heap, in MiB, for soaks that must tell live memory from memory the
    allocator keeps. `unknown()`: every figure NaN, for a soak's row where there is no glibc."""

    in_use: float  # allocated, not freed
    free: float  # kept by the allocator for reuse; resident where touched since the last trim
    mmapped: float  # big blocks served by mmap
    main_arena: float  # what the main thread's arena holds from the system
    other_arenas: float  # ... the others': each other thread gets one of up to 8 per core, or of limit_arenas
    arenas: float  # how many (a float, as the soaks' JSON has always written it)

    @classmethod
    def unknown(cls) -> HeapStats:
        nan = float("nan")
        return cls(nan, nan, nan, nan, nan, nan)


def heap_stats() -> HeapStats | None:
    """The heap now; None where this is not glibc >= 2.33 (mallinfo2)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return None
    info = libc.mallinfo2()
    arenas = _arena_sizes(libc)
    mib = 1 / 2**20
    return HeapStats(
        in_use=info.uordblks * mib,
        free=info.fordblks * mib,
        mmapped=info.hblkhd * mib,
        main_arena=(arenas[0] if arenas else 0) * mib,
        other_arenas=sum(arenas[1:]) * mib,
        arenas=float(len(arenas)),
    )


def _arena_sizes(libc: ctypes.CDLL) -> list[int]:
    """Bytes each arena holds from the system, main arena first, from malloc_info's XML
    (written to an in-memory stream)."""
    buf, size = ctypes.c_void_p(), ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not stream:
        return []
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    try:
        xml = ctypes.string_at(buf, size.value).decode("ascii", "replace")
    finally:
        libc.free(buf)
    # <heap nr="N"> ... <system type="current" size="BYTES"/> ... </heap>, one per arena
    return [int(m) for m in re.findall(r'<heap nr="\d+">.*?<system type="current" size="(\d+)"/>', xml, re.S)]
