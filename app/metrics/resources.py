"""What the process and the machine spend: CPU shares between two counter marks, and a sampler of
process/system CPU %, RSS, (NVML) GPU utilisation and the power state (clocks, power draw and energy
counters: app/system/power_counters.py) on a daemon thread.

`Metrics` (window.py) reads the sampler's newest reading into each snapshot; `bench` marks the
CPU counters at the ends of its measured span.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

import psutil

from app.system.background_loop import BackgroundLoop
from app.system.nvml import NvmlSession
from app.system.power_counters import PowerCounters, PowerReading

_MIB = 1024 * 1024


@dataclass(frozen=True)
class CpuMark:
    wall: float
    process_s: float  # user + system CPU seconds of the process and its children (all their threads)
    system_busy_s: float
    system_total_s: float


@dataclass(frozen=True)
class CpuShares:
    """CPU between two marks, as percentages of their wall time."""

    process_cpu_pct_cores: float  # sum over cores, 0-100*ncores (what `top` shows)
    process_cpu_pct_machine: float  # 0-100 of the whole machine
    system_cpu_pct: float  # 0-100
    span_s: float  # the wall time between the marks


@dataclass(frozen=True)
class GpuReading:
    gpu_util_pct: float  # NVML's utilisation of the GPU below
    gpu_name: str  # "index: name"
    gpu_process_listed: bool  # NVML lists this process on that GPU (it holds a context there)
    gpu_mem_mb: float | None = None  # NVML's used memory of the process and its children, over every GPU


@dataclass(frozen=True)
class ResourceReading:
    """One sample; each figure None when not (yet) known: CPU shares need two samples, the GPU's NVML."""

    process_cpu_pct_machine: float | None = None  # 0-100 of the whole machine
    process_cpu_pct_cores: float | None = None  # sum over cores, 0-100*ncores
    system_cpu_pct: float | None = None  # 0-100
    rss_mb: float | None = None  # MiB, the process and its live children
    gpu_util_pct: float | None = None
    gpu_name: str | None = None
    gpu_process_listed: bool | None = None
    gpu_mem_mb: float | None = None  # MiB, NVML's per-process figure; None where it does not list or tell it
    sampled_at: float | None = None  # monotonic time of the reading
    span_s: float | None = None  # the wall time the CPU percentages cover
    power: PowerReading | None = None  # clocks, power, energy counters (each a value or its reason)

    @classmethod
    def of(
        cls,
        sampled_at: float,
        rss_mb: float | None = None,
        cpu: CpuShares | None = None,
        gpu: GpuReading | None = None,
        power: PowerReading | None = None,
    ) -> ResourceReading:
        return cls(
            process_cpu_pct_machine=cpu.process_cpu_pct_machine if cpu else None,
            process_cpu_pct_cores=cpu.process_cpu_pct_cores if cpu else None,
            system_cpu_pct=cpu.system_cpu_pct if cpu else None,
            rss_mb=rss_mb,
            gpu_util_pct=gpu.gpu_util_pct if gpu else None,
            gpu_name=gpu.gpu_name if gpu else None,
            gpu_process_listed=gpu.gpu_process_listed if gpu else None,
            gpu_mem_mb=gpu.gpu_mem_mb if gpu else None,
            sampled_at=sampled_at,
            span_s=cpu.span_s if cpu else None,
            power=power,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _children(proc: psutil.Process) -> list[psutil.Process]:
    """The process's children (not theirs: the app's own children start none). Linux lists them per
    thread in /proc/PID/task/TID/children, a read per thread of this process; psutil's children() reads
    every process on the machine (about 1 ms for 70 here, and a desktop runs hundreds), and the sampler
    reads them every sample, from a thread that shares the GIL with the pipeline."""
    task = f"/proc/{proc.pid}/task"
    try:
        tids = os.listdir(task)
    except OSError:  # not Linux, or the process is gone
        return _children_by_scan(proc)
    pids: list[int] = []
    for tid in tids:
        try:
            with open(f"{task}/{tid}/children", encoding="ascii") as f:
                pids += [int(pid) for pid in f.read().split()]
        except OSError:
            if os.path.isdir(f"{task}/{tid}"):  # the thread is there, the file is not: a kernel without it
                return _children_by_scan(proc)
            # else the thread ended since the listing
    found = []
    for pid in pids:
        try:
            found.append(psutil.Process(pid))
        except psutil.Error:  # ended since
            continue
    return found


def _children_by_scan(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return list(proc.children())
    except psutil.Error:
        return []


def _children_cpu_s(children: list[psutil.Process]) -> float:
    """CPU seconds of the live children: the work a process hands to one (the GPU session in a process of
    its own, `bench --gpu-process`) is still the app's. Ended children are in cpu_times' children_*."""
    total = 0.0
    for child in children:
        try:
            times = child.cpu_times()
        except psutil.Error:  # gone between the listing and the read: its time is now in children_*
            continue
        total += times.user + times.system
    return total


def resident_mb(proc: psutil.Process, children: list[psutil.Process] | None = None) -> float:
    """Resident memory of the process and its live children (listed here unless given), MiB (pages they
    share counted in each)."""
    total = float(proc.memory_info().rss)
    for child in _children(proc) if children is None else children:
        try:
            total += child.memory_info().rss
        except psutil.Error:
            continue
    return total / _MIB


def cpu_mark(proc: psutil.Process | None = None, children: list[psutil.Process] | None = None) -> CpuMark:
    """The process's (with its children's: listed here unless given) and the machine's CPU counters now
    (this process unless `proc`)."""
    wall = time.monotonic()
    proc = proc or psutil.Process()
    pt = proc.cpu_times()
    live = _children(proc) if children is None else children
    children_s = pt.children_user + pt.children_system + _children_cpu_s(live)
    st = psutil.cpu_times()
    # As psutil.cpu_percent computes it, but with our own baseline: cpu_percent(interval=None)
    # keeps one module-wide baseline that any other caller in the process would reset.
    total = sum(st) - getattr(st, "guest", 0.0) - getattr(st, "guest_nice", 0.0)  # guest is inside user/nice
    idle = st.idle + getattr(st, "iowait", 0.0)
    return CpuMark(wall, pt.user + pt.system + children_s, total - idle, total)


def cpu_percentages(a: CpuMark, b: CpuMark, ncpu: int) -> CpuShares | None:
    """None when no wall time passed between the marks."""
    wall = b.wall - a.wall
    if wall <= 0:
        return None
    # The kernel counts CPU time in clock ticks (10 ms at 100 Hz), so a short span can read a
    # little above the physical maximum; clamping only removes that quantisation excess.
    cores = min(100.0 * (b.process_s - a.process_s) / wall, 100.0 * ncpu)
    total = b.system_total_s - a.system_total_s
    busy = b.system_busy_s - a.system_busy_s
    system = min(max(100.0 * busy / total, 0.0), 100.0) if total > 0 else 0.0  # max: float noise of big sums
    return CpuShares(
        process_cpu_pct_cores=cores, process_cpu_pct_machine=cores / ncpu, system_cpu_pct=system, span_s=wall
    )


class _NvmlProbe:
    """GPU utilisation through the sampler's NVML session; any absence gives no reading."""

    def __init__(self, pid: int, session: NvmlSession) -> None:
        self._pid = pid
        self._session = session
        self._handles: list[Any] = session.handles if session.open else []

    def read(self, children: list[psutil.Process]) -> GpuReading | None:
        """Utilisation of the first GPU that lists the process or one of its children (the GPU session in a
        process of its own), else of device 0, with their GPU memory."""
        nvml = self._session.module
        if nvml is None:
            return None
        listing = self._session.list_processes({self._pid, *(child.pid for child in children)})
        index = 0 if listing.first_gpu is None else listing.first_gpu
        try:
            util = nvml.nvmlDeviceGetUtilizationRates(self._handles[index]).gpu
        except nvml.NVMLError:
            return None
        return GpuReading(gpu_util_pct=float(util), gpu_name=self._session.names[index],
                          gpu_process_listed=listing.first_gpu is not None, gpu_mem_mb=listing.used_mb)  # fmt: skip


class ResourceSampler:
    """Samples process/system CPU %, RSS and GPU utilisation on a daemon thread every `interval_s`.

    CPU percentages are deltas of cumulative CPU time between two samples over the wall time
    between them, so the first reading comes one interval after start() (which primes them).
    Readings before that, or after the process has gone, are None. start() and stop() belong to
    one owner; latest() may be called from any thread.
    """

    POWER_HISTORY = 14_400  # readings kept for power_between: two hours at the default interval

    def __init__(self, interval_s: float = 0.5, pid: int | None = None, gpu: bool = True) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self.interval_s = interval_s
        self.pid = os.getpid() if pid is None else pid
        self._gpu = gpu
        self._ncpu = psutil.cpu_count() or 1
        self._lock = threading.Lock()
        self._latest = ResourceReading()
        self._loop = BackgroundLoop("ResourceSampler")
        self._nvml: _NvmlProbe | None = None
        self._session: NvmlSession | None = None  # one NVML session for utilisation and the power counters
        self._power: PowerCounters | None = None
        self._power_history: deque[PowerReading] = deque(maxlen=self.POWER_HISTORY)
        self._history: deque[ResourceReading] = deque(maxlen=self.POWER_HISTORY)  # a trace's counters

    @property
    def running(self) -> bool:
        return self._loop.running

    def start(self) -> None:
        if self.running:
            return
        proc = psutil.Process(self.pid)
        self._session = NvmlSession() if self._gpu else None
        self._nvml = _NvmlProbe(self.pid, self._session) if self._session is not None else None
        self._power = PowerCounters(gpu=self._gpu, nvml=self._session)
        children = _children(proc)  # once a sample, for CPU, memory and NVML's listing
        mark = cpu_mark(proc, children)
        rss_mb = resident_mb(proc, children)
        power = self._power_reading(mark.wall)
        self._publish(ResourceReading.of(mark.wall, rss_mb, gpu=self._gpu_reading(children), power=power))
        self._loop.start(lambda stop: self._run(proc, mark, stop))

    def stop(self) -> None:
        """Returns at once unless a sample is being taken (the wait is an Event, not a sleep)."""
        if not self._loop.stop(timeout=self.interval_s + 2.0):  # stuck in a driver call: leave NVML to it
            return
        self._nvml = None
        if self._power is not None:
            self._power.close()
            self._power = None
        if self._session is not None:  # after its readers
            self._session.close()
            self._session = None

    def latest(self) -> ResourceReading:
        """The newest reading (immutable: safe to hand to any thread)."""
        with self._lock:
            return self._latest

    def __enter__(self) -> ResourceSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self, proc: psutil.Process, previous: CpuMark, stop: threading.Event) -> None:
        while not stop.wait(self.interval_s):
            try:
                children = _children(proc)
                mark = cpu_mark(proc, children)
                rss_mb = resident_mb(proc, children)
            except psutil.Error:  # the process is gone (or no longer readable): no reading, not a stale one
                self._publish(ResourceReading(sampled_at=time.monotonic()))
                return
            cpu = cpu_percentages(previous, mark, self._ncpu)
            power = self._power_reading(mark.wall)
            self._publish(ResourceReading.of(mark.wall, rss_mb, cpu, self._gpu_reading(children), power))
            previous = mark

    def _gpu_reading(self, children: list[psutil.Process]) -> GpuReading | None:
        return self._nvml.read(children) if self._nvml is not None else None

    def _power_reading(self, t: float) -> PowerReading | None:
        if self._power is None:
            return None
        reading = self._power.read(t)
        with self._lock:
            self._power_history.append(reading)
        return reading

    def power_between(self, t0: float, t1: float) -> list[PowerReading]:
        """The power readings taken from `t0` to `t1` (monotonic), oldest first: a run's span, or the
        idle time before it."""
        with self._lock:
            return [r for r in self._power_history if t0 <= r.t <= t1]

    def read_power_now(self) -> PowerReading | None:
        """One reading at this moment, from the caller's thread (the exact ends of a measured span),
        kept with the sampler's own."""
        return self._power_reading(time.monotonic())

    def readings_between(self, t0: float, t1: float) -> list[ResourceReading]:
        """The readings taken from `t0` to `t1` (monotonic), oldest first (a trace's counter tracks)."""
        with self._lock:
            return [r for r in self._history if r.sampled_at is not None and t0 <= r.sampled_at <= t1]

    def _publish(self, reading: ResourceReading) -> None:
        with self._lock:
            self._latest = reading
            self._history.append(reading)
