"""CPU time per thread, so an inference's CPU cost is not confused with the rest of the process.

Process CPU time during an inference also counts every other thread of the process: OpenCV's
worker pool spinning after a resize made `classify --threads 1` read "2.00x wall" on a 2-core
machine. Here the cost is split three ways: the calling thread (Python's per-thread clock, on
every OS), the threads the runtime started when the session opened (XNNPACK's workers, a GPU
driver's threads: Linux `/proc/self/task/TID/schedstat`, nanoseconds of time on a CPU), and the
rest of the process. Where per-thread times of other threads cannot be read (macOS, Windows),
the runtime's share is None ("not available"), never folded into another figure.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
_TASKS = Path("/proc/self/task")


def thread_ids() -> set[int]:
    """The process's threads (Linux); empty where they cannot be listed."""
    if not sys.platform.startswith("linux"):
        return set()
    try:
        return {int(p.name) for p in _TASKS.iterdir()}
    except OSError:
        return set()


def started_by(action: Callable[[], T]) -> tuple[T, set[int]]:
    """Run `action`; return its result and the threads that appeared meanwhile and still run."""
    before = thread_ids()
    result = action()
    return result, thread_ids() - before


@dataclass(frozen=True)
class InferenceCpu:
    """CPU milliseconds spent during one inference, by whom."""

    inference_thread_ms: float  # the thread that called run()
    runtime_threads_ms: float | None  # threads the runtime started at open; None: not readable here
    rest_of_process_ms: float  # every other thread (capture, OpenCV's pool, the GUI, ...)

    @property
    def inference_ms(self) -> float:
        """What the inference cost: its own thread plus the runtime's workers."""
        return self.inference_thread_ms + (self.runtime_threads_ms or 0.0)

    def to_dict(self) -> dict:
        return {
            "inference_thread": round(self.inference_thread_ms, 3),
            "runtime_threads": None if self.runtime_threads_ms is None else round(self.runtime_threads_ms, 3),
            "rest_of_process": round(self.rest_of_process_ms, 3),
        }


class CpuMeter:
    """Brackets one call at a time: `start()` on the calling thread, then `stop()` on the same
    thread. The runtime's threads are read through descriptors opened once (`pread` of
    schedstat: ~2 us a thread here, against ~17 us to open and read it each time), so a GPU
    driver's handful of threads costs microseconds per inference, not a tenth of a fast one."""

    def __init__(self, runtime_threads: set[int]) -> None:
        self.runtime_threads = set(runtime_threads)
        self.readable = sys.platform.startswith("linux") and os.path.isdir(_TASKS)
        self._fds: dict[int, int] = {}
        self._ended_ns = 0  # time of runtime threads that ended, so totals never go backwards
        self._last_ns: dict[int, int] = {}
        if self.readable:
            for tid in sorted(self.runtime_threads):
                try:
                    self._fds[tid] = os.open(_TASKS / str(tid) / "schedstat", os.O_RDONLY)
                except OSError:
                    pass  # ended already: it has no more time to add
        self._start: tuple[int, int, int | None] = (0, 0, None)

    def _runtime_ns(self) -> int | None:
        if not self.readable:
            return None
        total = self._ended_ns
        for tid, fd in list(self._fds.items()):
            try:
                ns = int(os.pread(fd, 64, 0).split()[0])
            except (OSError, ValueError, IndexError):  # the thread ended: keep what it had counted
                last = self._last_ns.pop(tid, 0)
                self._ended_ns += last
                total += last
                os.close(self._fds.pop(tid))
                continue
            self._last_ns[tid] = ns
            total += ns
        return total

    def start(self) -> None:
        self._start = (time.thread_time_ns(), time.process_time_ns(), self._runtime_ns())

    def stop(self) -> InferenceCpu:
        own, process, runtime = time.thread_time_ns(), time.process_time_ns(), self._runtime_ns()
        own_ms = (own - self._start[0]) / 1e6
        process_ms = (process - self._start[1]) / 1e6
        runtime_ms = None if runtime is None or self._start[2] is None else max(0, runtime - self._start[2]) / 1e6
        rest = max(0.0, process_ms - own_ms - (runtime_ms or 0.0))
        return InferenceCpu(own_ms, runtime_ms, rest)

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
