"""CPU time per thread, so an inference's CPU cost is not confused with the rest of the process.

Process CPU time during an inference also counts every other thread of the process: OpenCV's
worker pool spinning after a resize made `classify --threads 1` read "2.00x wall" on a 2-core
machine. Here the cost is split three ways: the calling thread (Python's per-thread clock, on
every OS), the threads the runtime started when the session opened (XNNPACK's workers, a GPU
driver's threads: Linux `/proc/self/task/TID/schedstat`, nanoseconds of time on a CPU), and the
rest of the process. Where per-thread times of other threads cannot be read (macOS, Windows),
the runtime's share is None ("not available"), never folded into another figure.

CPU time below wall time has two causes a ratio cannot tell apart: the thread waited for a core
(runnable, not running: a busy machine) or it slept (blocked: on a device, a lock, another
process). schedstat's second field is the first, so the calling thread's wait is read beside its
CPU time and the rest of the wall time is the second.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
READ_EVERY_S = 0.1  # the runtime's threads, read apart from the invoke: see CpuMeter
_TASKS = Path("/proc/self/task")


def thread_ids() -> set[int]:
    """The process's threads (Linux); empty where they cannot be listed."""
    if not sys.platform.startswith("linux"):
        return set()
    try:
        return {int(p.name) for p in _TASKS.iterdir()}
    except OSError:
        return set()


def decoder_threads(tids: set[int]) -> set[int]:
    """Those of `tids` that are FFmpeg's decoding threads: libavcodec names them "av:<codec>:..."
    (pthread_frame.c / pthread_slice.c). A video source opening while a session opens starts
    them in the same moment, and they are not the runtime's."""
    found = set()
    for tid in tids:
        try:
            if (_TASKS / str(tid) / "comm").read_text().startswith("av:"):
                found.add(tid)
        except OSError:
            pass  # ended
    return found


# The OS names (Linux `comm`, 15 bytes at most) the pipeline gives its threads. A thread inherits its
# creator's name, so a native thread that appeared while a session opened can be told apart: named after
# the opening thread, the runtime started it; after another pipeline thread, or after the main thread when
# another thread opens, it is not the runtime's. OpenCV's worker pool, started by the capture thread's first
# resize while the inference thread opened a 1-thread XNNPACK session, was counted as the runtime's threads
# and its work (the results thread's postprocessing) as the inference's CPU.
THREAD_NAME_PREFIX = "ds-"
_names = itertools.count(1)


def name_this_thread(role: str) -> None:
    """Give the calling thread its OS name, `ds-<role><n>` (n: unique in the process); Linux only, else nothing.
    Python 3.11's threading names threads for Python alone."""
    if not sys.platform.startswith("linux"):
        return
    name = f"{THREAD_NAME_PREFIX}{role}{next(_names)}"[:15]
    try:
        (_TASKS / str(threading.get_native_id()) / "comm").write_text(name)
    except OSError:
        pass  # a kernel without it: every new native thread is taken as the runtime's, as before


def _comm(tid: int) -> str | None:
    try:
        return (_TASKS / str(tid) / "comm").read_text().rstrip("\n")
    except OSError:
        return None  # ended


def started_by(action: Callable[[], T]) -> tuple[T, set[int]]:
    """Run `action`; return its result and the native threads that appeared meanwhile, still run, and are
    its own. A Python thread that another part of the process started meanwhile (a pipeline's, a sampler's,
    a test's) is never the runtime's: one counted as the Ops view's runtime thread read its CPU share as
    0.65-0.999 beside busy processes, where the runs had 3-6% of the CPU (docs/profile.md). Nor is a
    native thread named after another thread (`name_this_thread`): another pipeline thread's, or the main
    thread's when the caller is not the main thread."""
    before = thread_ids()
    result = action()
    python = {t.native_id for t in threading.enumerate()}
    new = thread_ids() - before - python
    own = _comm(threading.get_native_id())
    main = _comm(os.getpid()) if threading.get_native_id() != os.getpid() else None
    return result, {tid for tid in new if not _someone_elses(_comm(tid), own, main)}


def _someone_elses(comm: str | None, own: str | None, main: str | None) -> bool:
    """Whether a thread's name says another thread started it (None: it ended meanwhile)."""
    if comm is None or comm == own:
        return comm is None
    return comm.startswith(THREAD_NAME_PREFIX) or (main is not None and comm == main)


@dataclass(frozen=True)
class InferenceCpu:
    """CPU milliseconds spent during one inference, by whom."""

    inference_thread_ms: float  # the thread that called run()
    runtime_threads_ms: float | None  # threads the runtime started at open; None: not readable here
    rest_of_process_ms: float  # every other thread (capture, OpenCV's pool, the GUI, ...)
    # The calling thread's time runnable but not on a CPU during the call (schedstat's second field:
    # it waited for a core); None where not readable.
    waited_ms: float | None = None

    @property
    def inference_ms(self) -> float:
        """What the inference cost: its own thread plus the runtime's workers."""
        return self.inference_thread_ms + (self.runtime_threads_ms or 0.0)

    def with_runtime(self, runtime_ms: float | None) -> InferenceCpu:
        """The runtime's share read apart from the invoke (CpuMeter.runtime_per_inference): moved out
        of the rest of the process, which counted it while the invoke ran."""
        if runtime_ms is None:
            return self
        return replace(
            self,
            runtime_threads_ms=(self.runtime_threads_ms or 0.0) + runtime_ms,  # + a child's (with_child)
            rest_of_process_ms=max(0.0, self.rest_of_process_ms - runtime_ms),
        )

    def with_child(self, child_ms: float | None) -> InferenceCpu:
        """The CPU time a child process spent on the call (the TensorFlow reference runs in one): the
        runtime's share, as the runtime is that process, read from its own clock."""
        if child_ms is None:
            return self
        return replace(self, runtime_threads_ms=(self.runtime_threads_ms or 0.0) + child_ms)

    def slept_ms_of(self, wall_ms: float) -> float | None:
        """The calling thread's part of `wall_ms` neither on a CPU nor waiting for one: blocked (on a
        device, a lock, a child process). None where the wait is not readable."""
        if self.waited_ms is None:
            return None
        return max(0.0, wall_ms - self.inference_thread_ms - self.waited_ms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "inference_thread": round(self.inference_thread_ms, 3),
            "runtime_threads": None if self.runtime_threads_ms is None else round(self.runtime_threads_ms, 3),
            "rest_of_process": round(self.rest_of_process_ms, 3),
            "waited_for_a_core": None if self.waited_ms is None else round(self.waited_ms, 3),
        }


class CpuMeter:
    """Brackets one call at a time: `start()` on the calling thread, then `stop()` on the same
    thread. The runtime's threads are read through descriptors opened once (`pread` of
    schedstat: ~2 us a thread here, against ~17 us to open and read it each time).

    `bracket_runtime=False` (the pipeline): start/stop read only the calling thread and the
    process, and the results thread asks `runtime_per_inference()` once per inference. Reading
    every runtime thread per inference was too dear on an H200 host (py-spy): around each
    invoke it took 17% of the GPU inference thread's time, and once per cycle on the results
    thread, 78% of that thread's, the GPU driver's threads being many. So they are read at most
    every READ_EVERY_S, and each inference is given the average of the last reading's
    interval (the runtime's threads only work while invokes run): a figure up to
    READ_EVERY_S old, never a per-invoke one; over a run the totals agree within a reading.
    """

    def __init__(
        self,
        runtime_threads: set[int],
        *,
        bracket_runtime: bool = True,
        child_cpu: Callable[[], float | None] | None = None,
    ) -> None:
        """`child_cpu`: for a session whose model runs in a child process, the child's CPU ms on the
        last run (app/backends/base.py child_cpu_reader), added to each stop()'s runtime share."""
        self.runtime_threads = set(runtime_threads)
        self.child_cpu = child_cpu
        self.readable = sys.platform.startswith("linux") and os.path.isdir(_TASKS)
        self.bracket_runtime = bracket_runtime
        self._lock = threading.Lock()  # the fds: read by one thread, closed by another
        self._closed = False
        self._fds: dict[int, int] = {}
        self._ended_ns = 0  # time of runtime threads that ended, so totals never go backwards
        self._last_ns: dict[int, int] = {}
        if self.readable:
            for tid in sorted(self.runtime_threads):
                try:
                    self._fds[tid] = os.open(_TASKS / str(tid) / "schedstat", os.O_RDONLY)
                except OSError:
                    pass  # ended already: it has no more time to add
        self._own: tuple[int, int] | None = None  # (native thread id, fd of its schedstat)
        self._start: tuple[int, int, int | None, int | None] = (0, 0, None, None)
        self._runtime_mark = None if bracket_runtime else self._runtime_ns()
        self._read_at = time.monotonic()
        self._since_read = 0  # inferences since the last reading
        self._average: float | None = None  # ms per inference over the last reading's interval

    def _runtime_ns(self) -> int | None:
        if not self.readable:
            return None
        with self._lock:
            return self._read_runtime_ns()

    def _read_runtime_ns(self) -> int:
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

    def _own_wait_ns(self) -> int | None:
        """The calling thread's run-queue time so far (schedstat's second field), through a descriptor
        opened once per thread that calls (the meter may move between threads with its session)."""
        if not self.readable:
            return None
        tid = threading.get_native_id()
        with self._lock:
            if self._closed:
                return None
            try:
                if self._own is None or self._own[0] != tid:
                    if self._own is not None:
                        os.close(self._own[1])
                        self._own = None
                    self._own = (tid, os.open(_TASKS / str(tid) / "schedstat", os.O_RDONLY))
                return int(os.pread(self._own[1], 64, 0).split()[1])
            except (OSError, ValueError, IndexError):
                return None

    def start(self) -> None:
        # The wait is read last here and first in stop(): each syscall between that reading and the
        # caller's clock (the two CPU clocks are syscalls) is a point where the thread may lose its core,
        # and a wait there counts as the inference's without being in its wall time (seen under load:
        # 32 ms waited in a 28 ms run).
        runtime = self._runtime_ns() if self.bracket_runtime else None
        own, process = time.thread_time_ns(), time.process_time_ns()
        self._start = (own, process, runtime, self._own_wait_ns())

    def stop(self) -> InferenceCpu:
        """Without `bracket_runtime`, the runtime's share is None here: `with_runtime` adds it."""
        wait = self._own_wait_ns()
        own, process = time.thread_time_ns(), time.process_time_ns()
        runtime = self._runtime_ns() if self.bracket_runtime else None
        own_ms = (own - self._start[0]) / 1e6
        process_ms = (process - self._start[1]) / 1e6
        runtime_ms = None if runtime is None or self._start[2] is None else max(0, runtime - self._start[2]) / 1e6
        waited_ms = None if wait is None or self._start[3] is None else max(0, wait - self._start[3]) / 1e6
        rest = max(0.0, process_ms - own_ms - (runtime_ms or 0.0))
        cpu = InferenceCpu(own_ms, runtime_ms, rest, waited_ms)
        return cpu.with_child(self.child_cpu()) if self.child_cpu is not None else cpu

    def runtime_per_inference(self) -> float | None:
        """Milliseconds of the runtime's threads for one more inference: the average over the
        last reading's interval, read again when READ_EVERY_S has passed (the first call reads
        at once: since the meter was made). None where they cannot be read, or once closed."""
        with self._lock:
            if not self.readable or self._runtime_mark is None or self._closed:
                return None
            self._since_read += 1
            now = time.monotonic()
            if self._average is None or now - self._read_at >= READ_EVERY_S:
                ns = self._read_runtime_ns()
                self._average = max(0, ns - self._runtime_mark) / 1e6 / self._since_read
                self._runtime_mark, self._read_at, self._since_read = ns, now, 0
            return self._average

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
            if self._own is not None:
                os.close(self._own[1])
                self._own = None
