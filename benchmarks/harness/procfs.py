"""CPU and scheduling readings from /proc (Linux): a process's CPU time polled from outside, a thread's
context switches and the time it waited runnable for a CPU; and what soaks watch in this process
(memory, threads, file descriptors)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psutil

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_s(pid: int) -> float | None:
    """utime + stime of `pid` in seconds (fields 14 and 15 of /proc/PID/stat); None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces: skip past it
    return (int(fields[11]) + int(fields[12])) / TICK  # fields[0] is field 3 (state)


def poll_cpu(
    proc: subprocess.Popen[bytes] | subprocess.Popen[str], every_s: float, clock: Callable[[], float] = time.monotonic
) -> list[tuple[float, float]]:
    """(time on `clock`, CPU seconds) of a child, every `every_s` until it exits. Each time is the middle
    of its read."""
    samples = []
    while proc.poll() is None:
        t0 = clock()
        cpu = process_cpu_s(proc.pid)
        t1 = clock()
        if cpu is not None:
            samples.append(((t0 + t1) / 2, cpu))
        time.sleep(every_s)
    return samples


def cpu_between(samples: list[tuple[float, float]], t0: float, t1: float) -> float | None:
    """CPU seconds the polled process used from t0 to t1 (interpolated linearly between polls); None
    when the span is outside the polled one."""
    if len(samples) < 2 or t0 < samples[0][0] or t1 > samples[-1][0]:
        return None
    times, cpu = zip(*samples, strict=True)
    c0, c1 = np.interp([t0, t1], times, cpu)
    return float(c1 - c0)


def thread_switches(tid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of thread `tid` of this process so far."""
    status = Path(f"/proc/self/task/{tid}/status").read_text()
    return (
        int(status.split("\nvoluntary_ctxt_switches:")[1].split()[0]),
        int(status.split("nonvoluntary_ctxt_switches:")[1].split()[0]),
    )


def thread_runnable_wait_us(tid: int) -> float:
    """Microseconds thread `tid` of this process has spent runnable, waiting for a CPU, so far."""
    return int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[1]) / 1e3


@dataclass(frozen=True)
class ProcessCounts:
    """What a soak watches for growth in this process."""

    rss_mib: float
    os_threads: int
    fds: int
    open_files: int  # regular files only (psutil's open_files)


def process_counts() -> ProcessCounts:
    proc = psutil.Process()
    return ProcessCounts(proc.memory_info().rss / 2**20, proc.num_threads(), proc.num_fds(), len(proc.open_files()))


def rss_mib() -> float:
    """This process's resident memory, MiB."""
    rss: int = psutil.Process().memory_info().rss
    return rss / 2**20
