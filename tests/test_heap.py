import platform
import subprocess
import sys

import numpy as np
import pytest

from app.system.heap import heap_stats, release_free_memory

glibc = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's allocator only"
)


@glibc
def test_heap_stats_sees_memory_allocated_and_freed():
    before = heap_stats()
    assert before is not None and before.arenas >= 1 and before.main_arena > 0
    blocks = [np.ones(12_500) for _ in range(400)]  # 100 kB each: below the mmap threshold, so heap
    held = heap_stats()
    assert held.in_use - before.in_use >= 30, (before, held)
    del blocks
    after = heap_stats()
    assert held.in_use - after.in_use >= 30, (held, after)
    assert release_free_memory() in (True, False)  # True when pages went back; never raises


def test_heap_stats_is_none_off_glibc_rather_than_wrong(monkeypatch):
    import app.system.heap

    monkeypatch.setattr(app.system.heap, "_libc", lambda: None)
    assert heap_stats() is None
    assert release_free_memory() is False


ARENA_PROBE = """
import sys, threading
import numpy as np
from app.system.heap import heap_stats, limit_arenas
if sys.argv[1] != "none":
    assert limit_arenas(int(sys.argv[1]))
ready, done = threading.Barrier(7), threading.Event()
def worker():
    block = np.ones(50_000)  # 400 kB: the thread's first allocations pick its arena
    ready.wait()
    done.wait()
threads = [threading.Thread(target=worker) for _ in range(6)]
for t in threads:
    t.start()
ready.wait()
print(int(heap_stats().arenas))
done.set()
"""


@glibc
def test_limit_arenas_caps_the_arenas_new_threads_get():
    def arenas(limit: str) -> int:
        out = subprocess.run(
            [sys.executable, "-c", ARENA_PROBE, limit], capture_output=True, text=True, check=True, timeout=60
        )
        return int(out.stdout.strip())

    assert arenas("none") >= 4  # six threads allocating at once spread over several arenas by default
    assert arenas("2") <= 2
