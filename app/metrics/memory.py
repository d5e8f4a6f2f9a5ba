"""What the process's memory is made of, from the kernel, and what opening a model costs.

On Linux every figure comes from /proc: the resident set and its peak from /proc/PID/status (VmRSS,
VmHWM), its split into file-backed pages (mapped files: shared libraries, mapped model files, the GPU
process's shared slot file) and anonymous ones (the heap: model bytes read into memory, packed weights,
arenas, delegates' copies) from /proc/PID/smaps_rollup. Elsewhere each figure is None with its reason.
GPU memory is NVML's per-process figure (app/system/nvml.py), for this process and its children: the
GPU session may run in a child of its own (`bench --gpu-process`).

How this app holds a model: `load_model_spec` reads the whole file into a Python `bytes`
(`ModelSpec.content`). The CPU session's Interpreter runs from those bytes (`model_content`, no copy:
measured, a second Interpreter over the same bytes added 0.1 MiB); the LiteRT C path of the GPU backend
copies them once into a ctypes buffer the model reads from for its life (litert_c.py `_read_model`),
a second anonymous copy in that session's init. Nothing in the app maps a model file (no mmap of a
.tflite in app/), so "the mapped model" is none here: the model is anonymous memory, taken when the
spec is read, before any session opens. A session's file-backed growth is the runtime's shared-library
pages touched for the first time (kernels, XNNPACK, the GPU accelerator). Pages count once written:
`allocate_tensors` reserves the arena but adds almost nothing resident until an inference writes it,
which is why a session's init (its first inference included) is the figure to compare.
Measured in a fresh process (CPU session, 1 thread), MiB: reading the spec of EfficientNet-Lite0 float
took 17.8 anonymous (the file is 17.7); opening it 29.8, of which 3.3 file-backed and 26.4 anonymous
(XNNPACK's packed weights, the arena, the runtime's state); the int8 model's spec 5.1, its open 11.8,
of which 3.4 file-backed and 8.4 anonymous.
"""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psutil

from app.metrics.resources import _children  # the sampler's listing: per-thread children files on Linux
from app.system.nvml import NvmlSession

_KIB = 1024
_MIB = 1024 * 1024
NOT_LINUX = "the kernel's memory counters (/proc) exist on Linux only"
NVML_UNAVAILABLE = "NVML not available"

T = TypeVar("T")


@dataclass(frozen=True)
class MemoryReading:
    """One process's (or a process tree's) resident memory, MiB."""

    rss_mb: float
    hwm_mb: float | None  # VmHWM: the resident set's peak since start or the last peak_reset()
    file_mb: float | None  # resident pages backed by a file (Rss - Anonymous)
    anon_mb: float | None  # resident anonymous pages (heap, stacks, anonymous mappings)

    def to_dict(self) -> dict[str, Any]:
        return {"rss_mb": self.rss_mb, "hwm_mb": self.hwm_mb, "file_mb": self.file_mb, "anon_mb": self.anon_mb}


def memory_unavailable() -> str | None:
    """Why there are no kernel memory counters here, or None where there are."""
    return None if sys.platform.startswith("linux") and os.path.exists("/proc/self/status") else NOT_LINUX


def _fields(path: str, names: Iterable[str]) -> dict[str, float]:
    """`Name:   1234 kB` lines of a /proc file, in MiB, for the names asked."""
    wanted = set(names)
    found: dict[str, float] = {}
    with open(path, encoding="ascii") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in wanted:
                found[key] = float(rest.split()[0]) * _KIB / _MIB
    return found


def read_memory(pid: int | None = None) -> MemoryReading | None:
    """The process's memory now (this process unless `pid`); None off Linux or once the process is gone."""
    if memory_unavailable():
        return None
    where = f"/proc/{'self' if pid is None else pid}"
    try:
        status = _fields(f"{where}/status", ("VmRSS", "VmHWM"))
    except OSError:
        return None
    if "VmRSS" not in status:  # a zombie: no memory left to read
        return None
    file_mb = anon_mb = None
    try:  # smaps_rollup: Linux 4.14+, and readable only with ptrace rights over the process
        rollup = _fields(f"{where}/smaps_rollup", ("Rss", "Anonymous"))
        if "Rss" in rollup and "Anonymous" in rollup:
            anon_mb = rollup["Anonymous"]
            file_mb = max(rollup["Rss"] - anon_mb, 0.0)
    except OSError:
        try:  # the kernel's own split, as counted (Linux 4.5+): RssFile + RssShmem are the file-backed part
            split = _fields(f"{where}/status", ("RssAnon", "RssFile", "RssShmem"))
            if "RssAnon" in split and "RssFile" in split:
                anon_mb = split["RssAnon"]
                file_mb = split["RssFile"] + split.get("RssShmem", 0.0)
        except OSError:
            pass
    return MemoryReading(status["VmRSS"], status.get("VmHWM"), file_mb, anon_mb)


def child_pids(pid: int | None = None) -> list[int]:
    """The process's live children (this process unless `pid`)."""
    try:
        proc = psutil.Process(pid)
    except psutil.Error:
        return []
    return [child.pid for child in _children(proc)]


def read_tree(pid: int | None = None) -> MemoryReading | None:
    """The process and its live children added up (pages they share counted in each); the peak is the sum
    of their peaks, an upper bound of the tree's. None off Linux."""
    own = read_memory(pid)
    if own is None:
        return None
    readings = [own] + [r for r in (read_memory(c) for c in child_pids(pid)) if r is not None]
    return MemoryReading(
        rss_mb=sum(r.rss_mb for r in readings),
        hwm_mb=_sum(r.hwm_mb for r in readings),
        file_mb=_sum(r.file_mb for r in readings),
        anon_mb=_sum(r.anon_mb for r in readings),
    )


def _sum(values: Iterable[float | None]) -> float | None:
    total = 0.0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def peak_reset() -> bool:
    """Reset this process's peak resident set (VmHWM) to its resident set now: writing 5 to
    /proc/self/clear_refs (Linux 4.0+). False, without an error, where that is not allowed or not Linux."""
    if memory_unavailable():
        return False
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


@dataclass(frozen=True)
class MemoryDelta:
    """What opening something cost in resident memory, MiB: `init_mb` in all, split into file-backed
    pages (shared libraries touched for the first time, mapped files) and anonymous ones (the runtime's
    copies: packed weights, arenas, delegate state). None, with `reason`, where it cannot be read."""

    init_mb: float | None
    file_mb: float | None
    anon_mb: float | None
    before: MemoryReading | None = None
    after: MemoryReading | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"init_mb": self.init_mb, "file_mb": self.file_mb, "anon_mb": self.anon_mb, "reason": self.reason}


def delta(before: MemoryReading | None, after: MemoryReading | None) -> MemoryDelta:
    if before is None or after is None:
        return MemoryDelta(None, None, None, before, after, memory_unavailable() or "the process could not be read")
    file_mb = anon_mb = None
    if before.file_mb is not None and after.file_mb is not None:
        file_mb = after.file_mb - before.file_mb
    if before.anon_mb is not None and after.anon_mb is not None:
        anon_mb = after.anon_mb - before.anon_mb
    if file_mb is not None and anon_mb is not None:
        init = file_mb + anon_mb  # the parts from one snapshot each side, so they add up exactly
    else:
        init = after.rss_mb - before.rss_mb
    if init < 0:  # an open adds memory: less means other work freed more meanwhile, and the open is not readable
        reason = f"the process freed more than the open added meanwhile (resident set {init:+.1f} MB across it)"
        return MemoryDelta(None, None, None, before, after, reason)
    return MemoryDelta(init, file_mb, anon_mb, before, after)


def measure_open(open_fn: Callable[[], T], children: bool = True) -> tuple[T, MemoryDelta]:
    """Call `open_fn` and return its result with the resident memory it added: this process's, and with
    `children` its children's too (a child started by the open counts whole). Anything else the process
    does meanwhile counts too: measure where nothing else runs."""
    read = read_tree if children else read_memory
    before = read()
    result = open_fn()
    return result, delta(before, read())


def gpu_mb(pids: Sequence[int] | None = None, session: NvmlSession | None = None) -> tuple[float | None, str | None]:
    """NVML's used GPU memory of `pids` (this process and its live children unless given), MiB, summed
    over every GPU and over compute and graphics contexts; (None, reason) where NVML cannot say.
    `session`: an NVML session to read through (the sampler's); without one, one is opened and closed."""
    wanted = set(pids) if pids is not None else {os.getpid(), *child_pids()}
    own = session is None
    nvml_session = NvmlSession() if session is None else session
    try:
        nvml = nvml_session.module
        if nvml is None:
            return None, f"{NVML_UNAVAILABLE}: {nvml_session.reason}" if nvml_session.reason else NVML_UNAVAILABLE
        listing = nvml_session.list_processes(wanted)
        if listing.first_gpu is None:
            return None, "NVML lists no process of this app on a GPU (none holds a context, or NVML sees host pids)"
        if listing.hidden and listing.used_bytes == 0:
            return None, "NVML lists this app but does not report its memory here"
        return listing.used_bytes / _MIB, None
    finally:
        if own:
            nvml_session.close()


@dataclass(frozen=True)
class MemoryFigures:
    """One run's memory, MiB: what opening the model cost (`init_mb`, split into `file_mb` and `anon_mb`),
    the resident set's peak and its median over the run, and the GPU's share. A null figure has its
    reason in `reasons` under the same name."""

    init_mb: float | None
    peak_mb: float | None
    steady_mb: float | None
    file_mb: float | None
    anon_mb: float | None
    gpu_mb: float | None
    reasons: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            name: None if value is None else round(value, 1)
            for name, value in (("init_mb", self.init_mb), ("peak_mb", self.peak_mb), ("steady_mb", self.steady_mb),
                                ("file_mb", self.file_mb), ("anon_mb", self.anon_mb), ("gpu_mb", self.gpu_mb))
        }  # fmt: skip
        out["reasons"] = dict(self.reasons)
        return out

    def describe(self) -> str:
        """One line: `init 47 MB (1 MB mapped files, 46 MB packed weights, arena and runtime), peak 212 MB,
        steady 200 MB, GPU 96 MB`."""
        return f"{self.describe_init()}, {self.describe_run()}"

    def describe_init(self) -> str:
        """What opening the model cost: `init 47 MB (1 MB mapped files ..., 46 MB weights, ...)`."""
        if self.init_mb is not None:
            split = ""
            if self.file_mb is not None and self.anon_mb is not None:
                split = (f" ({_mb(self.file_mb)} mapped files and libraries, "
                         f"{_mb(self.anon_mb)} weights, arena and runtime copies)")  # fmt: skip
            return f"init {_mb(self.init_mb)}{split}"
        return f"init not measured: {self.reasons.get('init_mb', 'unknown')}"

    def describe_run(self) -> str:
        """The run's: `peak 212 MB, steady 200 MB, GPU 96 MB` (or why a figure is missing)."""
        parts: list[str] = []
        parts.append(f"peak {_mb(self.peak_mb)}" if self.peak_mb is not None else
                     f"peak not measured: {self.reasons.get('peak_mb', 'unknown')}")  # fmt: skip
        if self.steady_mb is not None:
            parts.append(f"steady {_mb(self.steady_mb)}")
        parts.append(f"GPU {_mb(self.gpu_mb)}" if self.gpu_mb is not None else
                     f"GPU not reported: {self.reasons.get('gpu_mb', NVML_UNAVAILABLE)}")  # fmt: skip
        return ", ".join(parts)


def _mb(value: float) -> str:
    return f"{value:.0f} MB" if abs(value) >= 10 else f"{value:.1f} MB"


def memory_figures(
    opened: MemoryDelta | None,
    rss_samples: Sequence[float | None],
    peak: MemoryReading | None = None,
    gpu: tuple[float | None, str | None] | None = None,
) -> MemoryFigures:
    """A run's figures from what was measured: `opened` the delta around the session's open (measure_open),
    `rss_samples` the resident set sampled over the run, MiB (the sampler's `ResourceReading.rss_mb`, or
    read_tree()'s), whose median is the steady figure, `peak` a reading at the run's end after a
    peak_reset() before the open (its VmHWM is the peak; without one, the samples' highest stands in), `gpu`
    a gpu_mb() answer (None: not asked for)."""
    reasons: dict[str, str] = {}
    unavailable = memory_unavailable()
    if opened is None or opened.init_mb is None:
        reasons["init_mb"] = (opened.reason if opened else None) or unavailable or "not measured"
    parts = (("file_mb", opened.file_mb if opened else None), ("anon_mb", opened.anon_mb if opened else None))
    for name, part in parts:
        if part is None:
            reasons[name] = reasons.get("init_mb") or "smaps_rollup and RssAnon/RssFile unreadable"
    samples = [s for s in rss_samples if s is not None]
    steady = statistics.median(samples) if samples else None
    if steady is None:
        reasons["steady_mb"] = unavailable or "no sample during the run"
    peak_mb = peak.hwm_mb if peak is not None else None
    if peak_mb is None and samples:
        peak_mb = max(samples)
    if peak_mb is None:
        reasons["peak_mb"] = unavailable or "no sample during the run"
    gpu_value, gpu_reason = gpu if gpu is not None else (None, "not measured")
    if gpu_value is None:
        reasons["gpu_mb"] = gpu_reason or NVML_UNAVAILABLE
    return MemoryFigures(
        init_mb=opened.init_mb if opened else None,
        peak_mb=peak_mb,
        steady_mb=steady,
        file_mb=opened.file_mb if opened else None,
        anon_mb=opened.anon_mb if opened else None,
        gpu_mb=gpu_value,
        reasons=reasons,
    )
