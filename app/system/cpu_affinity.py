"""Keep CPUs for the model: the inference thread gets its own, every other thread the rest.

Why: each inference wakes the capture thread (next frame) and the results thread (publish),
and Linux ran them on the inference thread's CPU often enough to preempt the model. With the
int8 model on this 2-core machine, unpinned, the inference thread waited 91-203 us per
inference for its CPU (0.5-1.2 preemptions); pinned, 1-13 us, and throughput rose 1-3%
(benchmarks/investigations/cpu_pinning.py, docs/pipeline.md). A raw benchmark has no other threads: this
brings bench's conditions closer to it.

Linux only (per-thread sched_setaffinity); elsewhere, when the process may use no more CPUs
than the model has threads, or when the kernel refuses, nothing is pinned and `apply` says so.
New threads inherit their creator's CPUs, so XNNPACK's workers (created when the inference
thread opens the session) share the model's CPUs and anything the other threads start later
stays off them. Threads the inference thread starts after its session opened are not the
runtime's, and `place_newcomers` moves them off: OpenCV starts its worker pool from whichever
thread first resizes in parallel, and when that was the inference thread (preprocessing the
first frame itself), the pool's worker, which spins between jobs, preempted the model 1.5 times
per inference. One owner at a time: a pipeline that stops releases only its own pinning.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

_SUPPORTED = hasattr(os, "sched_setaffinity") and os.path.isdir("/proc/self/task")
# What the process was started with (taskset, a container's cpuset): read before anyone pins.
_ALLOWED: frozenset[int] = frozenset(os.sched_getaffinity(0)) if _SUPPORTED else frozenset()
_lock = threading.Lock()
_owner: object | None = None
_split: CpuSplit | None = None  # the owner's, for place_newcomers
_placed: frozenset[int] = frozenset()  # threads already where they belong (see session_opened)


@dataclass(frozen=True)
class CpuSplit:
    inference: tuple[int, ...]  # CPUs of the inference thread and its runtime's workers
    others: tuple[int, ...]  # CPUs of every other thread of the process
    child: bool = False  # the model runs in a child process, which has the inference CPUs (see step_aside)

    def describe(self) -> str:
        if self.child:
            where = f"the model's process on CPU {_cpus(self.inference)}"
            return f"{where}, this process's threads on CPU {_cpus(self.others)}"
        return f"inference thread on CPU {_cpus(self.inference)}, other threads on CPU {_cpus(self.others)}"

    def to_dict(self) -> dict[str, Any]:
        return {"inference": list(self.inference), "others": list(self.others), "child": self.child}


def _cpus(cpus: tuple[int, ...]) -> str:
    return ",".join(str(c) for c in cpus)


# An accelerator's calling thread only hands work over and waits (or spins) for the device: one
# CPU is all it uses, and capture, decoding and results need the rest. On an H200 host with 16
# cores, giving a GPU session the CPU count of a 15-thread CPU session left capture and results
# one CPU between them, and the pipeline reached 0.43 of the raw GPU loop (docs/performance.md).
ACCELERATOR_INFERENCE_CPUS = 1


def inference_cpus(on_cpu: bool, threads: int) -> int:
    """CPUs the inference thread keeps: a session that computes on the CPU (app.backends.options.CPU_DELEGATES)
    its thread count (its XNNPACK workers share them), an accelerator's ACCELERATOR_INFERENCE_CPUS."""
    return threads if on_cpu else ACCELERATOR_INFERENCE_CPUS


def allowed_cpus() -> int:
    """How many CPUs the process was started with (taskset, a container's cpuset): what its threads share."""
    return len(_ALLOWED) if _SUPPORTED else (os.cpu_count() or 1)


def split_for(threads: int, allowed: frozenset[int] | None = None) -> CpuSplit | None:
    """The last `threads` allowed CPUs for inference, the rest for everything else; None when
    pinning is unsupported or would leave the other threads no CPU."""
    allowed = _ALLOWED if allowed is None else allowed
    cpus = sorted(allowed)
    if not _SUPPORTED or threads < 1 or len(cpus) <= threads:
        return None
    return CpuSplit(inference=tuple(cpus[-threads:]), others=tuple(cpus[:-threads]))


def apply(owner: object, split: CpuSplit, inference_tid: int) -> bool:
    """Pin `inference_tid` to split.inference and every other thread of the process to
    split.others; `owner` holds the pinning until it releases it. False if the kernel refused
    (then nothing stays pinned)."""
    global _owner, _split
    with _lock:
        try:
            for tid in _thread_ids():
                if tid != inference_tid:
                    _set(tid, split.others)
            os.sched_setaffinity(inference_tid, split.inference)
        except OSError as exc:
            log.debug("not pinning threads: %s", exc)
            _unpin_all()
            _owner = None
            return False
        _owner, _split = owner, split
        return True


def session_opened(owner: object) -> None:
    """The session has opened (and run once): its runtime's workers exist now and stay where
    they were started; a thread that appears later is a newcomer."""
    global _placed
    with _lock:
        if _owner is owner:
            _placed = frozenset(_thread_ids())


def step_aside(owner: object, inference_tid: int) -> CpuSplit | None:
    """The session just opened runs its model in a child process (the GPU session in a process of its own,
    the TensorFlow reference), started from the inference thread and so on the inference CPUs: the thread,
    which now only hands frames over, joins the others, so that its Python never takes the child's CPU
    between two runs. Stepped aside, the unpaced synthetic source runs at 1.00 of the model alone on an H100
    host, against 0.92 with the session in this process (docs/performance.md, "GPU: the pipeline against the
    model alone"). The split as it now stands, None if `owner` holds none."""
    with _lock:
        if _owner is not owner or _split is None:
            return None
        try:
            _set(inference_tid, _split.others)
        except OSError as exc:
            log.debug("could not move the inference thread off the child's CPUs: %s", exc)
            return _split
        return CpuSplit(_split.inference, _split.others, child=True)


def place_newcomers(owner: object) -> None:
    """Put threads started since session_opened() on the other CPUs of `owner`'s split."""
    global _placed
    with _lock:
        if _owner is not owner or _split is None:
            return
        now = _thread_ids()
        for tid in now:
            if tid not in _placed:
                try:
                    _set(tid, _split.others)
                except OSError as exc:
                    log.debug("could not move thread %d off the inference CPUs: %s", tid, exc)
        _placed = frozenset(now)


def release(owner: object) -> None:
    """Give every thread all the allowed CPUs back, if `owner` still holds the pinning."""
    global _owner
    with _lock:
        if _owner is owner:
            _unpin_all()
            _owner = None


def _thread_ids() -> list[int]:
    return [int(name) for name in os.listdir("/proc/self/task")]


def _set(tid: int, cpus: tuple[int, ...] | frozenset[int]) -> None:
    try:
        os.sched_setaffinity(tid, cpus)
    except ProcessLookupError:
        pass  # the thread ended since it was listed


def _unpin_all() -> None:
    for tid in _thread_ids():
        try:
            _set(tid, _ALLOWED)
        except OSError as exc:
            log.debug("could not unpin thread %d: %s", tid, exc)
