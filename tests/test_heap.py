import platform
import sys

import numpy as np
import pytest

from app.heap import heap_stats, release_free_memory

glibc = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's allocator only"
)


@glibc
def test_heap_stats_sees_memory_allocated_and_freed():
    before = heap_stats()
    assert before is not None and before["arenas"] >= 1 and before["main_arena"] > 0
    blocks = [np.ones(12_500) for _ in range(400)]  # 100 kB each: below the mmap threshold, so heap
    held = heap_stats()
    assert held["in_use"] - before["in_use"] >= 30, (before, held)
    del blocks
    after = heap_stats()
    assert held["in_use"] - after["in_use"] >= 30, (held, after)
    assert release_free_memory() in (True, False)  # True when pages went back; never raises


def test_heap_stats_is_none_off_glibc_rather_than_wrong(monkeypatch):
    import app.heap

    monkeypatch.setattr(app.heap, "_libc", lambda: None)
    assert heap_stats() is None
    assert release_free_memory() is False
